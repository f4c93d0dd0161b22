import ArgumentParsing
import Foundation
import Synchronization
import TypedStore

// The demo's model: what its writers write and its merger merges. The store keeps it, so
// every other command reads the demo's store without these classes.
final class Folder: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .cascade) var notes: Set<Note>
}

final class Note: ManagedObject {
  @Attribute var title: String = ""
  @Attribute var done: Bool = false
  @Attribute var revision: Int = 0
  @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
  @Relationship(inverse: \Folder.notes) var folder: Folder?
}

/// `typedstore demo`: a new store, two writer processes and one merging process (the tool
/// running itself as `demo-writer` and `demo-merger`), a progress line, then what each saw.
enum DemoCommand {
  static func model() throws(Failure) -> ManagedObjectModel {
    try perform("the demo model") { try ManagedObjectModel(Folder.self, Note.self) }
  }

  static func container(_ path: String) throws(Failure) -> PersistentContainer {
    let model = try model()
    return try perform("cannot open the demo store \(path)") {
      try PersistentContainer(name: "Demo", model: model, storeURL: URL(fileURLWithPath: path))
    }
  }

  /// This program, to run again as the demo's processes.
  static var executable: URL {
    let path =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: path)
  }

  /// How to run this tool, typed where the user stands: `typedstore` when the first
  /// `typedstore` on the PATH is this program; otherwise its path, relative to the current
  /// folder when it lies below it (`.build/debug/typedstore` after `swift run`).
  static var invocation: String {
    let manager = FileManager.default
    let program = executable.resolvingSymlinksInPath().path
    for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
      let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("typedstore")
      guard manager.isExecutableFile(atPath: candidate.path) else { continue }
      if candidate.resolvingSymlinksInPath().path == program { return "typedstore" }
      break  // the shell would run another program of that name
    }
    let here = manager.currentDirectoryPath
    // As it was started, or where it is; for a build of SwiftPM's
    // (`.build/x86_64-unknown-linux-gnu/debug/typedstore`), by the shorter link to its folder
    // (`.build/debug/typedstore`).
    let started = CommandLine.arguments.first.flatMap { $0.contains("/") ? $0 : nil }
    var parts = URL(fileURLWithPath: program).pathComponents
    var linked: String?
    if parts.count > 4, parts[parts.count - 4] == ".build" {
      parts.remove(at: parts.count - 3)
      linked = NSString.path(withComponents: parts)
    }
    for path in [linked, started, program].compactMap({ $0 }) {
      let absolute = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: here, isDirectory: true))
      guard absolute.resolvingSymlinksInPath().path == program else { continue }
      let full = absolute.standardizedFileURL.path
      return Values.shellQuoted(full.hasPrefix(here + "/") ? String(full.dropFirst(here.count + 1)) : full)
    }
    return Values.shellQuoted(program)
  }

  // MARK: - The demo

  static func run(_ command: ParsedCommand) throws(Failure) {
    let seconds = try usage { try command.integer("--seconds", in: 1...3600) } ?? 3
    let directory: String
    if let given = command.value("--dir") {
      directory = given
      do {
        try FileManager.default.createDirectory(atPath: given, withIntermediateDirectories: true)
      } catch {
        throw .failed("cannot make the folder \(given): \(error.localizedDescription)")
      }
    } else {
      let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("typedstore-demo-XXXXXX")
      var template = Array(base.path.utf8CString)
      guard let made = mkdtemp(&template) else {
        throw .failed("cannot make a temporary folder: \(String(cString: strerror(errno)))")
      }
      directory = String(cString: made)
    }
    let path = URL(fileURLWithPath: directory).appendingPathComponent("demo.sqlite").path
    // Claimed with O_EXCL, so that of two demos started on one folder at once one refuses; the
    // store is then created in the empty file (closed before SQLite opens it, so no lock of
    // SQLite's is dropped).
    let claim = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard claim >= 0 else {
      throw errno == EEXIST
        ? .failed("\(path) exists already: give the demo a new folder with --dir")
        : .failed("cannot create \(path): \(String(cString: strerror(errno)))")
    }
    close(claim)
    printError("typedstore demo: store \(path); 2 writers for \(seconds) s, 1 merger")
    _ = try container(path)  // created here, so the processes all open an existing store

    let merger = try spawn(["demo-merger", "--store", path], input: true)
    guard merger.readLine() == "ready" else {
      throw .failed("the merging process did not start: \(merger.finish().errors)")
    }
    let writers = try ["writer-1", "writer-2"].map { (name) throws(Failure) in
      try spawn(["demo-writer", "--store", path, "--name", name, "--seconds", String(seconds)], input: false)
    }

    // Progress, on a terminal only: transactions committed and merged so far.
    let started = Date()
    let store = try openStore(path)
    let showsProgress = isatty(2) == 1
    while writers.contains(where: { $0.process.isRunning }) {
      if showsProgress, let current = try? store.currentHistoryToken(),
        let checkpoint = try? store.historyConsumers().first(where: { $0.name == "demo-merger" })?.checkpoint
      {
        FileHandle.standardError.write(
          Data(
            String(
              format: "\r  %.1f s  %d transactions committed, %d merged   ", Date().timeIntervalSince(started),
              current.transactionNumber, checkpoint.transactionNumber
            ).utf8))
      }
      usleep(100_000)
    }
    if showsProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }

    let writerReports = writers.map { $0.finish() }
    for (index, report) in writerReports.enumerated() where report.status != 0 {
      merger.process.terminate()
      throw .failed("writer-\(index + 1) failed: \(report.errors)")
    }
    let newest = try perform("cannot read the history") { try store.currentHistoryToken() }
    merger.send("stop \(newest.transactionNumber)\n")
    let mergerReport = merger.finish()
    guard mergerReport.status == 0 else { throw .failed("the merging process failed: \(mergerReport.errors)") }

    // What each process saw.
    func object(_ text: String) -> [String: Any] {
      (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
    func number(_ value: Any?) -> String {
      switch value {
      case let value as Int: String(value)
      case let value as Double: String(format: "%.2f", value)
      default: "—"
      }
    }
    var rows = [["PROCESS", "PID", "COMMITS", "INSERTED", "UPDATED", "DELETED", "MERGED", "LATENCY P50", "P99"]]
    for (index, report) in writerReports.enumerated() {
      let seen = object(report.output)
      rows.append([
        "writer-\(index + 1)", number(seen["pid"]), number(seen["commits"]), number(seen["inserted"]),
        number(seen["updated"]), number(seen["deleted"]), "—", "—", "—",
      ])
    }
    let merged = object(mergerReport.output)
    rows.append([
      "merger", number(merged["pid"]), "—", number(merged["inserted"]), number(merged["updated"]),
      number(merged["deleted"]), number(merged["transactions"]), number(merged["p50"]) + " ms",
      number(merged["p99"]) + " ms",
    ])
    let stats = try perform("cannot read the history") { try store.historyStatistics() }
    var lines = [
      "TypedStore demo: \(path)", "",
      StoreCommands.table(rows), "",
      "The merger's live objects: \(number(merged["liveObjects"])) notes, equal to the store's rows "
        + "(values, each note's folder, each folder's notes): "
        + ((merged["matchesStore"] as? Bool) == true ? "yes" : "NO"),
      "History: \(stats.transactions) transactions, \(stats.changes) changes ("
        + stats.changesByEntity.sorted { $0.key < $1.key }.map {
          "\($0.key): \($0.value.inserts) inserted, \($0.value.updates) updated, \($0.value.deletes) deleted"
        }.joined(separator: "; ") + ")",
      "Newest token: \(stats.currentToken.stringRepresentation); consumer demo-merger is at "
        + "\(number(merged["checkpoint"])).",
      "",
      "Try, on this store:",
    ]
    // Commands that run as printed, where the demo was started: no `typedstore` need be on
    // the PATH (README.md says how to install it).
    let tool = invocation
    let storePath = Values.shellQuoted(path)
    lines += [
      "history export --store \(storePath) --limit 3",
      "history export --store \(storePath) --gzip -o history.ndjson.gz",
      "history watch --store \(storePath)",
      "demo-writer --store \(storePath) --name writer-3 --seconds 2   # more commits, in another shell",
      "history stats --store \(storePath)",
      "history prune --store \(storePath) --consumed --dry-run",
      "history prune --store \(storePath) --consumed --archive archive.ndjson.gz",
      "consumers list --store \(storePath)",
      "inspect --store \(storePath)",
      "check --store \(storePath)",
    ].map { "  \(tool) \($0)" }
    if (merged["matchesStore"] as? Bool) != true { lines.append("\nThe merger's objects differ from the store.") }
    print(lines.joined(separator: "\n"))
    if (merged["matchesStore"] as? Bool) != true { throw .failed("the demo's merger did not converge") }
  }

  // MARK: - A writer process

  static func writer(_ command: ParsedCommand) throws(Failure) {
    let path = try usage { try command.required("--store") }
    let name = try usage { try command.required("--name") }
    let seconds = try usage { try command.integer("--seconds", in: 1...3600) } ?? 3
    let context = try container(path).newModelContext(name: name)
    context.transactionAuthor = name
    var mine: [Note] = []
    var counts = (commits: 0, inserted: 0, updated: 0, deleted: 0)
    var generator = SystemRandomNumberGenerator()
    let deadline = Date().addingTimeInterval(Double(seconds))
    try perform("\(name) failed") {
      let folder = Folder(context: context)
      folder.name = name
      try context.save()
      counts.commits += 1
      counts.inserted += 1
      while Date() < deadline {
        let roll = Double.random(in: 0..<1, using: &generator)
        if mine.count < 10 || roll < 0.45 {
          for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let note = Note(context: context)
            note.title = "\(name) note \(counts.inserted)"
            note.folder = folder
            mine.append(note)
            counts.inserted += 1
          }
          try context.save()
        } else if roll < 0.8 {
          let note = mine[Int.random(in: 0..<mine.count, using: &generator)]
          note.revision += 1
          note.done.toggle()
          try context.save()
          counts.updated += 1
        } else if roll < 0.95 {
          let note = mine.remove(at: Int.random(in: 0..<mine.count, using: &generator))
          context.delete(note)
          try context.save()
          counts.deleted += 1
        } else {
          // A batch request: set-based, recorded in history like a save.
          let ids = mine.prefix(5).map(\.managedID)
          var update = BatchUpdateRequest<Note>(objectIDs: Array(ids), propertiesToUpdate: [.set(\.done, true)])
          update.author = name
          let result = try context.execute(update)
          for note in mine.prefix(5) { context.refresh(note, mergeChanges: false) }
          counts.updated += result.count
        }
        counts.commits += 1
        usleep(UInt32.random(in: 500...3000, using: &generator))
      }
    }
    print(
      try Values.json([
        "pid": Int(getpid()), "commits": counts.commits, "inserted": counts.inserted, "updated": counts.updated,
        "deleted": counts.deleted,
      ]))
  }

  // MARK: - The merging process

  static func merger(_ command: ParsedCommand) throws(Failure) {
    let path = try usage { try command.required("--store") }
    let container = try container(path)
    let context = container.newBackgroundContext()
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try perform("cannot start the merger") {
      try HistoryMerger(container: container, consumer: "demo-merger", contexts: [context], options: options)
    }
    struct Seen {
      var latencies: [Double] = []
      var inserted = 0
      var updated = 0
      var deleted = 0
    }
    let seen = Mutex(Seen())
    merger.addHook { event in
      let latency = Date().timeIntervalSince(event.transaction.timestamp) * 1000
      seen.withLock {
        $0.latencies.append(latency)
        $0.inserted += event.inserted(Note.self).count + event.inserted(Folder.self).count
        $0.updated += event.updated(Note.self).count
        $0.deleted += event.deleted(Note.self).count
      }
    }
    try perform("cannot start the merger") { try blocking { try await merger.start() } }
    print("ready")
    fflush(nil)

    // The parent says when the writers are done: "stop <newest transaction>".
    let target = readLine().flatMap { Int64($0.split(separator: " ").last ?? "") } ?? 0
    let deadline = Date().addingTimeInterval(30)
    while merger.checkpoint.transactionNumber < target && merger.error == nil && Date() < deadline { usleep(2000) }
    blocking { await merger.stop() }
    if let error = merger.error { throw .failed("the merger stopped: \(error)") }

    // The merger's objects (merged as the writers committed) against a fresh read of the rows.
    let (objects, matches) = try perform("cannot compare with the store") {
      try context.performAndWait { context in
        // Each note's values and folder, and each folder's notes: both sides of the
        // relationship, as merged and as stored.
        func values(_ notes: [Note]) -> [ManagedID<Note>: String] {
          Dictionary(
            uniqueKeysWithValues: notes.map {
              ($0.managedID, "\($0.title)|\($0.done)|\($0.revision)|\($0.folder?.name ?? "-")")
            })
        }
        func contents(_ folders: [Folder]) -> [String: Set<ManagedID<Note>>] {
          Dictionary(uniqueKeysWithValues: folders.map { ($0.name, Set($0.notes.map(\.managedID))) })
        }
        let merged = try context.fetch(FetchRequest<Note>())
        let mergedFolders = try context.fetch(FetchRequest<Folder>())
        let fresh = ModelContext(store: container.persistentStore)
        let rows = try fresh.fetch(FetchRequest<Note>())
        let storedFolders = try fresh.fetch(FetchRequest<Folder>())
        return (
          merged.count,
          withExtendedLifetime(fresh) {
            values(merged) == values(rows) && contents(mergedFolders) == contents(storedFolders)
          }
        )
      }
    }
    let report = seen.withLock { $0 }
    let sorted = report.latencies.sorted()
    func percentile(_ p: Double) -> Double {
      sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
    print(
      try Values.json([
        "pid": Int(getpid()), "transactions": sorted.count, "inserted": report.inserted, "updated": report.updated,
        "deleted": report.deleted, "p50": percentile(0.5), "p99": percentile(0.99), "liveObjects": objects,
        "matchesStore": matches, "checkpoint": Int(merger.checkpoint.transactionNumber),
      ]))
  }

  // MARK: - Processes

  /// A child process running this program, its output read as it goes.
  final class Child {
    let process: Process
    private let input: Pipe?
    private let output = Pipe()
    private let errors = Pipe()

    init(_ arguments: [String], input: Bool) throws(Failure) {
      process = Process()
      process.executableURL = DemoCommand.executable
      process.arguments = arguments
      self.input = input ? Pipe() : nil
      process.standardInput = self.input ?? FileHandle.nullDevice
      process.standardOutput = output
      process.standardError = errors
      do { try process.run() } catch { throw .failed("cannot start \(arguments[0]): \(error)") }
    }

    /// One line of the child's output (for the merger's "ready").
    func readLine() -> String {
      var line = Data()
      while true {
        let byte = output.fileHandleForReading.readData(ofLength: 1)
        if byte.isEmpty || byte == Data("\n".utf8) { break }
        line.append(byte)
      }
      return String(decoding: line, as: UTF8.self)
    }

    func send(_ text: String) {
      input?.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Waits for the child; its remaining output and its errors.
    func finish() -> (status: Int32, output: String, errors: String) {
      // Both pipes at once: a child filling one while we wait on the other would block.
      let collected = Mutex(Data())
      let done = DispatchSemaphore(value: 0)
      let reader = errors.fileHandleForReading
      Thread.detachNewThread {
        collected.withLock { $0 = reader.readDataToEndOfFile() }
        done.signal()
      }
      let out = output.fileHandleForReading.readDataToEndOfFile()
      done.wait()
      let err = collected.withLock { $0 }
      process.waitUntilExit()
      return (
        process.terminationStatus, String(decoding: out, as: UTF8.self),
        String(decoding: err, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      )
    }
  }

  static func spawn(_ arguments: [String], input: Bool) throws(Failure) -> Child {
    try Child(arguments, input: input)
  }
}

/// Runs async work from synchronous code and waits for it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
  let result = Mutex<Result<T, any Error>?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task {
    let value: Result<T, any Error>
    do { value = .success(try await body()) } catch { value = .failure(error) }
    result.withLock { $0 = value }
    done.signal()
  }
  done.wait()
  guard let value = result.withLock({ $0 }) else { throw CancellationError() }
  return try value.get()
}

func blocking(_ body: @escaping @Sendable () async -> Void) {
  _ = try? blocking { () async throws -> Int in
    await body()
    return 0
  }
}
