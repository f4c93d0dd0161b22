import ArgumentParsing

/// A command of the tool: how `--help` describes it and the function that runs it, in one
/// value, so that no command is described and not run, or run and not described. A command
/// with subcommands only dispatches to them.
struct ToolCommand: Sendable {
  typealias Run = @Sendable (ParsedCommand) async throws(Failure) -> Void

  /// Its name, abstract, options and positional arguments (its subcommands are `subcommands`).
  let description: CommandDescription
  let run: Run?
  let subcommands: [ToolCommand]

  /// A command that runs.
  init(_ description: CommandDescription, run: @escaping Run) {
    self.description = description
    self.run = run
    subcommands = []
  }

  /// A command that groups others.
  init(group name: String, abstract: String, subcommands: [ToolCommand]) {
    description = CommandDescription(name: name, abstract: abstract)
    run = nil
    self.subcommands = subcommands
  }

  /// The tree of descriptions the parser reads, subcommands included.
  var tree: CommandDescription {
    var tree = description
    tree.subcommands = subcommands.map(\.tree)
    return tree
  }

  /// What runs the command at `path` (names below this one), if one does.
  func run(at path: [String]) -> Run? {
    guard let name = path.first else { return run }
    return subcommands.first { $0.description.name == name }?.run(at: Array(path.dropFirst()))
  }
}

/// The tool's commands: what `--help` lists and what runs, one table.
enum Commands {
  static let store = OptionDescription.option("--store", value: "path", help: "The store file.", required: true)
  static let json = OptionDescription.flag("--json", help: "Print JSON, for scripts.")

  static let filters: [OptionDescription] = [
    .option("--author", value: "name", help: "Only transactions by this author (repeatable).", repeating: true),
    .option(
      "--exclude-author", value: "name", help: "No transactions by this author (repeatable).", repeating: true),
    .option(
      "--entity", value: "name", help: "Only changes of this entity and its subentities (repeatable).",
      repeating: true),
  ]

  static let export = ToolCommand(
    CommandDescription(
      name: "export", abstract: "Write the store's history as NDJSON (or JSON), streaming in constant memory.",
      discussion: """
        One transaction per line with its changes, in the versioned schema of docs/history.md. Without
        --after or --since, starts at the oldest transaction kept. The token to resume from goes to
        stderr as 'last token: <token>'; pass it to --after next time.
        """,
      options: [
        store,
        .option("--after", value: "token", help: "Only transactions after this token (or transaction number)."),
        .option("--since", value: "date", help: "Only transactions committed after this ISO 8601 date."),
        .option("--until", value: "token|date", help: "Only transactions up to this token or date, included."),
      ] + filters + [
        .option("--limit", value: "n", help: "At most this many transactions."),
        .option("--format", value: "ndjson|json", help: "ndjson (default): a line per transaction; json: one array."),
        .flag("--gzip", help: "Compress the output with gzip."),
        .option("--output", short: "-o", value: "file", help: "Write to this file ('-', the default: stdout)."),
      ]), run: HistoryCommands.export)

  static let watch = ToolCommand(
    CommandDescription(
      name: "watch", abstract: "Print each new transaction, from any process, as NDJSON until interrupted.",
      options: [store, .option("--after", value: "token", help: "Start after this token (default: now).")] + filters),
    run: HistoryCommands.watch)

  static let prune = ToolCommand(
    CommandDescription(
      name: "prune", abstract: "Delete history every live consumer has read, through HistoryPruner.",
      discussion: """
        Give exactly one policy. Whatever it asks, history a live consumer has not read is kept; a
        stale consumer (not seen within its lease) holds history back too, unless --include-stale.
        """,
      options: [
        store,
        .flag("--consumed", help: "Everything every consumer has read."),
        .option("--before", value: "token", help: "Transactions before this token's (which is kept)."),
        .option("--older-than", value: "duration", help: "Transactions older than this (90s, 30m, 12h, 7d)."),
        .option("--keep-last", value: "n", help: "All but the newest n transactions."),
        .option(
          "--archive", value: "file", help: "First write what goes to this file (NDJSON; gzip when it ends in .gz)."),
        .flag("--include-stale", help: "Prune past stale consumers' checkpoints (they are named)."),
        .option(
          "--author", value: "name",
          help: "Only delete this author's transactions (repeatable); stops at another author's.", repeating: true),
        .flag("--dry-run", help: "Say what would go; change nothing."),
        json,
      ]), run: HistoryCommands.prune)

  static let stats = ToolCommand(
    CommandDescription(
      name: "stats", abstract: "Transactions, changes by entity and kind, authors, horizon, newest token, size.",
      options: [store, json]),
    run: HistoryCommands.stats)

  static let history = ToolCommand(
    group: "history", abstract: "Export, watch, prune and count the store's persistent history.",
    subcommands: [export, watch, prune, stats])

  static let consumers = ToolCommand(
    group: "consumers", abstract: "List, add or remove the store's durable consumers (HistoryMerger checkpoints).",
    subcommands: [
      ToolCommand(
        CommandDescription(
          name: "list", abstract: "Each consumer's checkpoint, age, lag in transactions, and whether it is live.",
          options: [store, json]),
        run: StoreCommands.listConsumers),
      ToolCommand(
        CommandDescription(
          name: "add",
          abstract: "Declare a consumer before it first runs: history it has not read is kept for it from now on.",
          options: [
            store,
            .flag("--from-beginning", help: "Start before the first transaction (default: after the newest)."),
            .option("--after", value: "token", help: "Start after this transaction (a number or a token)."),
            .option("--lease", value: "duration", help: "How long it may go unseen before it is stale (default 1h)."),
            json,
          ], positionals: [PositionalDescription("name", help: "The consumer's name (1 to 200 characters).")]),
        run: StoreCommands.addConsumer),
      ToolCommand(
        CommandDescription(
          name: "remove", abstract: "Forget a consumer, so that its checkpoint no longer holds history back.",
          options: [store], positionals: [PositionalDescription("name", help: "The consumer's name.")]),
        run: StoreCommands.removeConsumer),
    ])

  static let inspect = ToolCommand(
    CommandDescription(
      name: "inspect", abstract: "Format version, store UUID, model, row counts, file sizes.", options: [store, json]),
    run: StoreCommands.inspect)

  static let check = ToolCommand(
    CommandDescription(
      name: "check", abstract: "PRAGMA integrity_check and TypedStore's invariants; exit 1 when a check fails.",
      options: [store, json]),
    run: StoreCommands.check)

  static let migrate = ToolCommand(
    CommandDescription(
      name: "migrate", abstract: "Show what migrating the store to a model would do, then do it (or not: --dry-run).",
      discussion: """
        FILE is a model's JSON form (ManagedObjectModel.jsonRepresentation written to a file) or an Xcode model file
        (.xcdatamodeld for its current version, .xcdatamodel). The report lists each step's operations, the tables
        rebuilt and the rows each touches, and every change that cannot be inferred (exit 1, nothing changed).
        Without --dry-run the store is migrated as an app opening it with that model would migrate it: one
        transaction under the write lock. See docs/migration.md.
        """,
      options: [
        store,
        .option(
          "--model", value: "file", help: "The model to migrate to, as JSON or an Xcode model file.", required: true),
        .flag("--dry-run", help: "Only print what would be done."), json,
      ]),
    run: MigrateCommand.run)

  static let backup = ToolCommand(
    CommandDescription(
      name: "backup", abstract: "Write a consistent copy of a live store (data, history, consumers) to a new file.",
      discussion: """
        The copy is the store as of one committed transaction, read through one snapshot while writers go on; it is
        written beside FILE, synced and then put in place, and FILE must not exist. A plain copy of the .sqlite file
        of an open store misses what is still in its -wal. See docs/file-format.md, "Copying a store".
        """,
      options: [
        store, .option("-o", value: "file", help: "Where the copy goes (a new file).", required: true),
        .flag("--new-store", help: "Give the copy a new UUID and no consumers."), json,
      ]),
    run: BackupCommands.backup)

  static let checkpoint = ToolCommand(
    CommandDescription(
      name: "checkpoint",
      abstract: "Copy the store's write-ahead log into its file (RESTART mode, under the write lock).",
      options: [store]),
    run: BackupCommands.checkpoint)

  static let demo = ToolCommand(
    CommandDescription(
      name: "demo", abstract: "Run two writer processes and a merging process on a new store, then show the results.",
      options: [
        .option("--dir", value: "dir", help: "The folder for the new store (default: a new temporary folder)."),
        .option("--seconds", value: "n", help: "How long the writers write (default: 3)."),
      ]),
    run: DemoCommand.run)

  /// The demo's own processes: the tool runs itself with these.
  static let demoWriter = ToolCommand(
    CommandDescription(
      name: "demo-writer", abstract: "A demo writer process.",
      options: [
        store, .option("--name", value: "name", help: "", required: true), .option("--seconds", value: "n", help: ""),
      ],
      hidden: true),
    run: DemoWriter.run)
  static let demoMerger = ToolCommand(
    CommandDescription(name: "demo-merger", abstract: "The demo's merging process.", options: [store], hidden: true),
    run: DemoMerger.run)

  static let modelOption = OptionDescription.option(
    "--model", value: "path", help: "A .xcdatamodeld bundle (its current version) or a .xcdatamodel version.",
    required: true)

  static let model = ToolCommand(
    group: "model", abstract: "Read Xcode model files: check, generate Swift classes, compare versions, export.",
    subcommands: [
      ToolCommand(
        CommandDescription(
          name: "check", abstract: "Read a model file and say what it holds; with --store, whether the store matches.",
          discussion: """
            Exit 1 when the file cannot be read (the error names the file, line, entity and element) or the store
            cannot be migrated to it. See docs/apple-models.md.
            """,
          options: [
            modelOption, .option("--store", value: "path", help: "A store to compare with the model."), json,
          ]),
        run: ModelCommands.check),
      ToolCommand(
        CommandDescription(
          name: "generate", abstract: "Write a Swift ManagedObject subclass per entity of the model.",
          options: [
            modelOption, .option("-o", value: "dir", help: "The folder to write to (default: the current one)."),
            .flag("--public", help: "Declare the classes and their properties public."), json,
          ]),
        run: ModelCommands.generate),
      ToolCommand(
        CommandDescription(
          name: "diff",
          abstract: "What migrating a store from model A to model B changes, and whether it is inferable.",
          options: [json],
          positionals: [
            PositionalDescription("A", help: "The older model (a .xcdatamodel version, or a bundle's current one)."),
            PositionalDescription("B", help: "The newer model."),
          ]),
        run: ModelCommands.diff),
      ToolCommand(
        CommandDescription(
          name: "export", abstract: "Print the model's JSON form (what `typedstore migrate --model` reads).",
          options: [modelOption, .option("--format", value: "json", help: "The format: json (the only one).")]),
        run: ModelCommands.export),
    ])

  static let root = ToolCommand(
    group: "typedstore",
    abstract:
      "Tools for TypedStore stores: history, consumers, inspection, checks, migration, model files, backups, a demo.",
    subcommands: [
      demo, history, consumers, inspect, check, migrate, model, backup, checkpoint, demoWriter, demoMerger,
    ])
}
