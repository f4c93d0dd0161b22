import ArgumentParsing
import Foundation
import TypedStore

/// What the user asks of a benchmark run.
struct BenchOptions: Sendable {
  /// The rows each operation works on.
  var n = 100_000
  /// Timed runs of each side, after one warm-up run of each; the median is reported.
  var runs = 5
  /// Where to write the report as JSON, if anywhere.
  var json: String?
  /// Only the rows whose name contains this (case-insensitively).
  var only: String?
  /// Compare every TypedStore result with the raw one, and fail on a difference.
  var check = false
  /// A PostgreSQL server for the PostgreSQL rows (`--postgresql`); they are not run without.
  var postgreSQL: String?
}

/// What this process is: the benchmark, or one of the processes it runs this program as (a
/// hidden subcommand each, for the benchmark's own use).
enum BenchRole: Sendable {
  case benchmark(BenchOptions)
  /// The import memory probe with this N: prints the growth in MiB.
  case importMemory(n: Int)
  /// The export memory probe on this store: prints the growth in MiB and the bytes written.
  case exportMemory(store: String)
  /// The batched-fetch memory probe on this store: prints the growth in MiB.
  case batchMemory(store: String)
  /// The custom migration stage memory probe on this store: prints the growth and the peak in
  /// MiB.
  case stageMemory(store: String)
  /// A writer process of the writer rows: `commits` transactions of `objects` new objects,
  /// with the C API (`raw`) or TypedStore, once the file `go` exists; prints "ready", then
  /// the monotonic time of its last commit.
  case writer(store: String, raw: Bool, commits: Int, objects: Int, go: String)
  /// Process A of the latency row: saves `commits` objects into the store, one per
  /// transaction, printing "<primary key> <monotonic ns>" as each returns.
  case latencyWriter(store: String, commits: Int)
  /// A consumer process of the throughput row: a HistoryMerger named `consumer` on the
  /// store, until the file `stop` exists.
  case follower(store: String, consumer: String, stop: String)
  /// A process of the readers row: from when the file `go` exists, for `milliseconds`, fetches
  /// every row of the store (`reads`) or saves one new object at a time, with the C API (`raw`)
  /// or TypedStore; prints "ready", then how many fetches or saves it made.
  case mixed(store: String, raw: Bool, reads: Bool, go: String, milliseconds: Int)
  /// A writer process of the PostgreSQL writer rows: as `writer`, on the store in `schema` of
  /// the server at `url` (or the raw table there).
  case postgreSQLWriter(url: String, schema: String, side: String, commits: Int, objects: Int, go: String)
}

/// The benchmark's command line, parsed by the tool's `ArgumentParsing`.
enum BenchCommandLine {
  static let root = CommandDescription(
    name: "typedstore-bench",
    abstract: "Each operation with TypedStore and with the raw SQLite C API; the median times and their ratio.",
    options: [
      .option("--n", value: "n", help: "The rows each operation works on (default: 100000)."),
      .option("--runs", value: "n", help: "Timed runs of each side, after a warm-up (default: 5)."),
      .option("--json", value: "file", help: "Also write the report to this file as JSON."),
      .option("--only", value: "name", help: "Only the rows whose name contains this."),
      .flag("--check", help: "Compare every TypedStore result with the raw one; exit 1 on a difference."),
      .option(
        "--postgresql", value: "url",
        help: "Also run the PostgreSQL rows, against raw libpq, on the server at this URL (a schema each)."),
    ],
    subcommands: [
      role("import-memory", "The import memory probe.", ["n"]),
      role("export-memory", "The export memory probe.", ["store"]),
      role("batch-memory", "The batched-fetch memory probe.", ["store"]),
      role("stage-memory", "The custom migration stage memory probe.", ["store"]),
      role("writer", "A writer process of the writer rows.", ["store", "side", "commits", "objects", "go"]),
      role("latency-writer", "Process A of the latency row.", ["store", "commits"]),
      role("follow", "A consumer process of the throughput row.", ["store", "consumer", "stop"]),
      role("mixed", "A reader or writer process of the readers row.", ["store", "side", "kind", "go", "milliseconds"]),
      role(
        "pg-writer", "A writer process of the PostgreSQL writer rows.",
        ["url", "schema", "side", "commits", "objects", "go"]),
    ])

  private static func role(_ name: String, _ abstract: String, _ arguments: [String]) -> CommandDescription {
    CommandDescription(
      name: name, abstract: abstract, positionals: arguments.map { PositionalDescription($0, help: "") },
      hidden: true)
  }

  /// The role the arguments (without the program's name) ask for. Help and usage errors end
  /// the process: help with status 0, an error with 64 (EX_USAGE).
  static func parse(_ arguments: [String]) -> BenchRole {
    do {
      switch try ArgumentParser(root: root).parse(arguments) {
      case .help(let text):
        print(text)
        exit(0)
      case .version:
        print("typedstore-bench \(TypedStoreVersion.current)")
        exit(0)
      case .run(let command):
        return try role(command)
      }
    } catch {
      let usage = error.usage.isEmpty ? "" : "\n\(error.usage)"
      FileHandle.standardError.write(Data("typedstore-bench: \(error.message)\(usage)\n".utf8))
      exit(64)
    }
  }

  private static func role(_ command: ParsedCommand) throws(UsageError) -> BenchRole {
    let arguments = command.positionals
    switch command.path {
    case ["import-memory"]: return .importMemory(n: try number(arguments[0], command))
    case ["export-memory"]: return .exportMemory(store: arguments[0])
    case ["batch-memory"]: return .batchMemory(store: arguments[0])
    case ["stage-memory"]: return .stageMemory(store: arguments[0])
    case ["writer"]:
      return .writer(
        store: arguments[0], raw: arguments[1] == "raw", commits: try number(arguments[2], command),
        objects: try number(arguments[3], command), go: arguments[4])
    case ["latency-writer"]: return .latencyWriter(store: arguments[0], commits: try number(arguments[1], command))
    case ["follow"]: return .follower(store: arguments[0], consumer: arguments[1], stop: arguments[2])
    case ["mixed"]:
      return .mixed(
        store: arguments[0], raw: arguments[1] == "raw", reads: arguments[2] == "read", go: arguments[3],
        milliseconds: try number(arguments[4], command))
    case ["pg-writer"]:
      return .postgreSQLWriter(
        url: arguments[0], schema: arguments[1], side: arguments[2], commits: try number(arguments[3], command),
        objects: try number(arguments[4], command), go: arguments[5])
    default:
      var options = BenchOptions()
      options.n = try command.integer("--n") ?? options.n
      options.runs = max(1, try command.integer("--runs") ?? options.runs)
      options.json = command.value("--json")
      options.only = command.value("--only")
      options.check = command.flag("--check")
      options.postgreSQL = command.value("--postgresql")
      return .benchmark(options)
    }
  }

  private static func number(_ text: String, _ command: ParsedCommand) throws(UsageError) -> Int {
    guard let number = Int(text) else { throw command.error("expected a whole number, not '\(text)'") }
    return number
  }
}
