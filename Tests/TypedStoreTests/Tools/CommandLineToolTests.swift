import Foundation
import Spawning
import Synchronization
import Testing
import TypedStore
import TypedStoreTesting

/// What one run of the built `typedstore` printed.
struct ToolRun {
  var status: Int32
  var stdout: String
  var stderr: String

  var lines: [String] { stdout.split(separator: "\n").map(String.init) }
  /// The objects of NDJSON output, one per line.
  var objects: [[String: Any]] {
    lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
  }
  var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:] }
}

/// Runs the built tool as a user would, with a deadline (a hung tool fails its test); as the
/// user `uid` when given (through `setpriv`: the tests run as root, which may open any file).
func typedstore(
  _ arguments: [String], shell prefix: String? = nil, user uid: String? = nil, seconds: Double = 120
) throws -> ToolRun {
  let process = POSIXProcess()
  let tool = builtProduct("typedstore")
  if let uid {
    process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
    process.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", tool.path] + arguments
  } else if let prefix {
    // For a limit set by the shell (ulimit) before the tool runs.
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    let quoted = ([tool.path] + arguments).map { "'\($0.replacingOccurrences(of: "'", with: "'\\''"))'" }
    process.arguments = ["-c", "\(prefix); exec \(quoted.joined(separator: " "))"]
  } else {
    process.executableURL = tool
    process.arguments = arguments
  }
  return try runCollectingOutput(process, seconds: seconds)
}

/// Runs `process` with no input, collecting what it writes to standard output and error;
/// SIGKILLed after `seconds`, so that a hung process fails its test instead of the run.
func runCollectingOutput(_ process: POSIXProcess, seconds: Double) throws -> ToolRun {
  let output = Pipe()
  let errors = Pipe()
  process.standardOutput = output
  process.standardError = errors
  process.standardInput = FileHandle.nullDevice
  try process.run()
  let pid = process.processIdentifier
  let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
  DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
  defer { watchdog.cancel() }
  let collected = Mutex(Data())
  let reader = Thread { collected.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() } }
  reader.start()
  let out = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  while reader.isExecuting || !reader.isFinished { usleep(1000) }
  return ToolRun(
    status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
    stderr: String(decoding: collected.withLock { $0 }, as: UTF8.self))
}

/// What `gzip -d` makes of a file: the check that our gzip output is gzip's.
func gunzip(_ path: String) throws -> String {
  let gzip = POSIXProcess()
  gzip.executableURL = URL(fileURLWithPath: "/bin/sh")
  gzip.arguments = ["-c", "gzip -dc '\(path)'"]
  let pipe = Pipe()
  gzip.standardOutput = pipe
  try gzip.run()
  let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  gzip.waitUntilExit()
  guard gzip.terminationStatus == 0 else { throw CocoaError(.fileReadCorruptFile) }
  return text
}

/// The built tool running in the background (`history watch`), read as it prints.
struct RunningTool {
  let process = POSIXProcess()
  private let output = Pipe()
  private let errors = Pipe()

  init(_ arguments: [String]) throws {
    process.executableURL = builtProduct("typedstore")
    process.arguments = arguments
    process.standardOutput = output
    process.standardError = errors
    try process.run()
  }

  /// Reads `pipe` until its text contains `marker` (false when it ends or after 30 s).
  private static func read(_ pipe: Pipe, until marker: String) -> String? {
    var text = ""
    let deadline = Date().addingTimeInterval(30)
    while Date() < deadline {
      let data = pipe.fileHandleForReading.availableData
      if data.isEmpty { return nil }
      text += String(decoding: data, as: UTF8.self)
      if text.contains(marker) { return text }
    }
    return nil
  }

  /// Whether stderr says `marker` within 30 s.
  func waitForError(_ marker: String) async throws -> Bool {
    let errors = errors
    return try await offThePool { Self.read(errors, until: marker) != nil }
  }

  /// The first line on stdout (empty when none came within 30 s).
  func firstLine() async throws -> String {
    let output = output
    return try await offThePool { Self.read(output, until: "\n") ?? "" }
  }

  /// Sends `signal` and returns the exit status.
  func stop(with signal: Int32) async throws -> Int32 {
    kill(process.processIdentifier, signal)
    let process = process
    return try await offThePool {
      process.waitUntilExit()
      return process.terminationStatus
    }
  }

  func killIfRunning() {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}

/// A store with a known history: inserts, updates, a delete with its tombstone, a batch
/// update, by two authors.
func makeToolStore(variant: String = "", function: String = #function) async throws -> PersistentContainer {
  let container = try PersistentContainer.makeTest(model: notesModel, variant: variant, function: function)
  try await container.performBackgroundTask { context in
    context.transactionAuthor = "alice"
    let folder = Folder(context: context)
    folder.name = "Inbox \"quoted\"\n"
    let notes = (0..<4).map { index in
      let note = Note(context: context)
      note.title = "note \(index) — ünïcode"
      return note
    }
    try context.save()
    context.transactionAuthor = "bob"
    notes[0].title = "changed"
    try context.save()
    context.delete(notes[1])
    try context.save()
    var update = BatchUpdateRequest<Note>(
      objectIDs: [notes[2].managedID, notes[3].managedID], propertiesToUpdate: [.set(\.status, .published)])
    update.author = "batch"
    _ = try context.execute(update)
  }
  return container
}

@Suite(.serialized) struct CommandLineToolTests {
  // MARK: - history export

  @Test func exportRoundTripsAgainstFetchHistory() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let history = try container.fetchHistory(HistoryRequest())
    let run = try typedstore(["history", "export", "--store", path])
    #expect(run.status == 0, "\(run.stderr)")
    let objects = run.objects
    try #require(objects.count == history.count)
    for (index, (object, transaction)) in zip(objects, history).enumerated() {
      #expect(object["version"] as? Int == 1)
      #expect(object["number"] as? Int == Int(transaction.transactionNumber))
      #expect(object["token"] as? String == transaction.token.stringRepresentation)
      #expect(object["author"] as? String == transaction.author)
      #expect(object["processID"] as? Int == Int(transaction.processID))
      let changes = object["changes"] as? [[String: Any]] ?? []
      try #require(changes.count == transaction.changes.count)
      for (exported, change) in zip(changes, transaction.changes) {
        #expect(exported["kind"] as? String == ["insert", "update", "delete"][change.changeType.rawValue])
        #expect(exported["entity"] as? String == change.objectID.entityName)
        #expect(exported["pk"] as? Int == change.objectID.primaryKey.map(Int.init))
        #expect(exported["uri"] as? String == change.objectID.uriRepresentation.absoluteString)
        #expect(exported["changedAttributes"] as? [String] == change.updatedProperties)
        if let tombstone = change.tombstone {
          let values = exported["tombstone"] as? [String: Any]
          #expect(values?["uuid"] as? String == tombstone[\Note.uuid]?.uuidString)
        } else {
          #expect(exported["tombstone"] is NSNull)
        }
      }
      // The library's JSON form of the transaction is the line.
      #expect(String(decoding: transaction.jsonData(), as: UTF8.self) == run.lines[index])
    }
    let last = try #require(history.last?.token)
    #expect(run.stderr.contains("last token: \(last.stringRepresentation)"))
    // The timestamp is ISO 8601 in UTC, and the folder's odd name survived JSON escaping.
    #expect((objects[0]["timestamp"] as? String)?.hasSuffix("Z") == true)

    // JSON format: one array of the same objects.
    let json = try typedstore(["history", "export", "--store", path, "--format", "json"])
    let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
    #expect(array.map { $0["number"] as? Int } == objects.map { $0["number"] as? Int })
  }

  @Test func exportResumesAfterTheTokenItPrintedAndFilters() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let first = try typedstore(["history", "export", "--store", path, "--limit", "2"])
    #expect(first.objects.count == 2)
    let token = try #require(first.stderr.split(separator: "\n").first { $0.hasPrefix("last token: ") }?.dropFirst(12))
    let rest = try typedstore(["history", "export", "--store", path, "--after", String(token)])
    #expect(rest.objects.map { $0["number"] as? Int } == [3, 4])
    // A bare transaction number is a token of this store.
    #expect(try typedstore(["history", "export", "--store", path, "--after", "3"]).objects.count == 1)
    #expect(try typedstore(["history", "export", "--store", path, "--until", "2"]).objects.count == 2)
    let bob = try typedstore(["history", "export", "--store", path, "--author", "bob"])
    #expect(bob.objects.map { $0["author"] as? String } == ["bob", "bob"])
    let notBob = try typedstore(["history", "export", "--store", path, "--exclude-author", "bob"])
    #expect(notBob.objects.map { $0["author"] as? String } == ["alice", "batch"])
    let folders = try typedstore(["history", "export", "--store", path, "--entity", "Folder"])
    #expect(folders.objects.count == 1)
    #expect((folders.objects.first?["changes"] as? [[String: Any]])?.count == 1)
    let since = try typedstore(["history", "export", "--store", path, "--since", "2000-01-01"])
    #expect(since.objects.count == 4)
    // Nothing after a date: resume after the newest transaction, not from the start.
    let later = try typedstore(["history", "export", "--store", path, "--since", "2999-01-01"])
    #expect(later.objects.isEmpty)
    #expect(later.stderr.contains("last token: \(container.persistentStore.identifier.uuidString):4"))
    let future = try typedstore(["history", "export", "--store", path, "--until", "2000-01-01T00:00:00Z"])
    #expect(future.status == 0 && future.objects.isEmpty)
  }

  @Test func gzipOutputDecompressesWithGzip() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let file = path + ".ndjson.gz"
    let plain = try typedstore(["history", "export", "--store", path])
    let run = try typedstore(["history", "export", "--store", path, "--gzip", "-o", file])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.isEmpty)
    #expect(try gunzip(file) == plain.stdout)
  }

  // MARK: - history watch

  @Test func watchPrintsATransactionAnotherProcessCommits() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let watcher = try RunningTool(["history", "watch", "--store", path, "--exclude-author", "alice"])
    defer { watcher.killIfRunning() }
    // The watcher says when it follows; commits after that are printed.
    try #require(try await watcher.waitForError("watching"))
    try await container.performBackgroundTask { context in
      context.transactionAuthor = "alice"  // excluded: not printed
      Note(context: context).title = "hidden"
      try context.save()
      context.transactionAuthor = "carol"
      Note(context: context).title = "seen"
      try context.save()
    }
    let line = try await watcher.firstLine()
    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    #expect(object["author"] as? String == "carol")
    #expect(object["number"] as? Int == 6)
    #expect(try await watcher.stop(with: SIGINT) == 0)
  }

  @Test func watchFollowsAnAuthorNotSeenYetAndEndsOnSIGTERM() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let watcher = try RunningTool(["history", "watch", "--store", path, "--author", "newcomer"])
    defer { watcher.killIfRunning() }
    try #require(try await watcher.waitForError("watching"))
    try await container.performBackgroundTask { context in
      context.transactionAuthor = "newcomer"
      Note(context: context).title = "first"
      try context.save()
    }
    #expect(try await watcher.firstLine().contains("\"author\":\"newcomer\""))
    #expect(try await watcher.stop(with: SIGTERM) == 0)
  }

  // MARK: - history prune

  @Test func pruneNeverDeletesWhatALiveConsumerHasNotRead() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    // A consumer that has read up to transaction 2.
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "indexer", contexts: [], options: options)
    merger.addHook { event in
      if event.transaction.transactionNumber > 2 { throw CancellationError() }
    }
    try? await merger.start()  // the hook stops it after transaction 2
    await merger.stop()
    #expect(merger.checkpoint.transactionNumber == 2)

    let dry = try typedstore(["history", "prune", "--store", path, "--keep-last", "0", "--dry-run"])
    #expect(dry.status == 0, "\(dry.stderr)")
    #expect(dry.stdout.contains("would delete 1 transactions; horizon 1"), "strictly before the checkpoint, 2")
    #expect(dry.stdout.contains("held back by consumers that have not read further: indexer"))
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 0)

    let run = try typedstore(["history", "prune", "--store", path, "--keep-last", "0", "--json"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.json["deletedTransactions"] as? Int == 1)
    #expect(run.json["heldBackBy"] as? [String] == ["indexer"])
    #expect(try container.fetchHistory(HistoryRequest(after: merger.checkpoint)).map(\.transactionNumber) == [3, 4])

    let consumers = try typedstore(["consumers", "list", "--store", path, "--json"])
    let listed = try #require(try JSONSerialization.jsonObject(with: Data(consumers.stdout.utf8)) as? [[String: Any]])
    #expect(listed.first?["name"] as? String == "indexer")
    #expect(listed.first?["lag"] as? Int == 2)
    #expect(listed.first?["status"] as? String == "live")
    #expect(try typedstore(["check", "--store", path]).status == 0)
  }

  @Test func pruningPastAStaleConsumerNeedsIncludeStaleAndNamesIt() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.lease = .milliseconds(200)
    let merger = try HistoryMerger(container: container, consumer: "gone", contexts: [], options: options)
    merger.addHook { event in
      if event.transaction.transactionNumber > 1 { throw CancellationError() }
    }
    try? await merger.start()  // the hook stops it after transaction 1
    await merger.stop()
    #expect(merger.checkpoint.transactionNumber == 1)
    try await Task.sleep(for: .milliseconds(400))

    let held = try typedstore(["history", "prune", "--store", path, "--keep-last", "0"])
    #expect(held.status == 0)
    #expect(held.stdout.contains("deleted 0 transactions; horizon 0"), "the checkpoint's own is kept")
    #expect(held.stdout.contains("stale consumers (pass --include-stale to prune past them): gone"))
    let past = try typedstore(["history", "prune", "--store", path, "--keep-last", "0", "--include-stale"])
    #expect(past.stdout.contains("deleted 4 transactions; horizon 4"))
    #expect(past.stdout.contains("pruned past stale consumers (their unread history is gone): gone"))
    // The check reports the consumer whose unread history is gone.
    let check = try typedstore(["check", "--store", path])
    #expect(check.status == 1)
    #expect(check.stdout.contains("consumer: gone has not read transactions 2…4, which were pruned"))
    #expect(try typedstore(["consumers", "remove", "gone", "--store", path]).status == 0)
    #expect(try typedstore(["check", "--store", path]).status == 0)
  }

  @Test func archiveThenPruneLosesNothing() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let before = try typedstore(["history", "export", "--store", path]).lines
    let archive = path + ".archive.ndjson.gz"
    let run = try typedstore(["history", "prune", "--store", path, "--keep-last", "1", "--archive", archive])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("archived 3 transactions"))
    let archived = try gunzip(archive)
    let remaining = try typedstore(["history", "export", "--store", path]).lines
    #expect(archived.split(separator: "\n").map(String.init) + remaining == before)
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 3)
  }

  @Test func anArchiveThatCannotBeWrittenPrunesNothing() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    for target in ["/dev/full", "/nonexistent-folder/archive.ndjson"] {
      let run = try typedstore(["history", "prune", "--store", path, "--keep-last", "0", "--archive", target])
      #expect(run.status == 1)
      #expect(run.stderr.contains("typedstore: "), "\(run.stderr)")
      #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
      #expect(try container.persistentStore.historyHorizon().transactionNumber == 0)
      #expect(try container.fetchHistory(HistoryRequest()).count == 4)
    }
  }

  // MARK: - stats, inspect, check

  @Test func statsInspectAndCheckDescribeTheStore() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let stats = try typedstore(["history", "stats", "--store", path, "--json"])
    #expect(stats.status == 0, "\(stats.stderr)")
    #expect(stats.json["transactions"] as? Int == 4)
    #expect(stats.json["changes"] as? Int == 9)  // 5 inserts, 1 update, 1 delete, 2 batch updates
    #expect(stats.json["transactionsByAuthor"] as? [String: Int] == ["alice": 1, "bob": 2, "batch": 1])
    let note = (stats.json["changesByEntity"] as? [String: [String: Int]])?["Note"]
    #expect(note == ["inserts": 4, "updates": 3, "deletes": 1])
    #expect((stats.json["bytesOnDisk"] as? Int ?? 0) > 0)
    #expect(
      try typedstore(["history", "stats", "--store", path]).stdout.contains("authors       alice 1, batch 1, bob 2"))

    let inspect = try typedstore(["inspect", "--store", path, "--json"])
    #expect(inspect.json["store"] as? String == container.persistentStore.identifier.uuidString)
    #expect(inspect.json["formatVersion"] as? Int == PersistentStore.formatVersion)
    let entities = inspect.json["entities"] as? [[String: Any]] ?? []
    #expect(entities.first { $0["name"] as? String == "Note" }?["rows"] as? Int == 3)
    #expect(entities.first { $0["name"] as? String == "Checklist" }?["superentity"] as? String == "Note")
    let text = try typedstore(["inspect", "--store", path])
    #expect(text.stdout.contains("created: date?, column created") == false)
    #expect(text.stdout.contains("createdAt: date?, column created"))

    let check = try typedstore(["check", "--store", path, "--json"])
    #expect(check.status == 0)
    #expect(check.json["passed"] as? Bool == true)
    #expect(check.json["rowsChecked"] as? Int == 4)
  }

  /// Every command that only reads, and every dry run, opens the store read-only and leaves
  /// its file, its -wal and its -shm byte for byte as they were: a store closed by its last
  /// connection, one a killed writer left with commits in its WAL, and that WAL without its
  /// index.
  @Test(arguments: LeftFiles.allCases)
  func readingCommandsAndDryRunsLeaveEveryFileByteForByte(state: LeftFiles) async throws {
    let url = try eventStore(state)
    let path = url.path
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-export-\(getpid()).gz")
    defer { try? FileManager.default.removeItem(at: output) }
    let before = storeBytes(url)
    for arguments in [
      ["history", "export", "--store", path], ["history", "export", "--store", path, "--gzip", "-o", output.path],
      ["history", "stats", "--store", path], ["history", "stats", "--store", path, "--json"],
      ["consumers", "list", "--store", path], ["inspect", "--store", path], ["check", "--store", path],
      ["history", "prune", "--store", path, "--consumed", "--dry-run"],
      ["history", "prune", "--store", path, "--keep-last", "1", "--dry-run", "--json"],
    ] {
      let run = try typedstore(arguments)
      #expect(run.status == 0, "\(arguments): \(run.stderr)")
      #expect(storeBytes(url) == before, "\(state): \(arguments.joined(separator: " "))")
    }
    let watcher = try RunningTool(["history", "watch", "--store", path, "--after", "0"])
    defer { watcher.killIfRunning() }
    #expect(try await watcher.waitForError("Ctrl-C stops"))
    #expect(try await watcher.firstLine().contains("\"number\":1"))
    #expect(try await watcher.stop(with: SIGINT) == 0)
    #expect(storeBytes(url) == before, "\(state): history watch")
    let dryRun = try typedstore(["history", "prune", "--store", path, "--keep-last", "1", "--dry-run"])
    #expect(dryRun.stdout.contains("would delete 2 transactions; horizon 2"), "\(dryRun.stdout)")
    #expect(storeBytes(url) == before)
  }

  /// `inspect` lists each entity's relationships (kind, inverse, delete rule, where the links
  /// are stored) and counts the links of the side that stores them, from the model the store
  /// keeps: the tool has none of the classes.
  @Test func inspectListsRelationshipsAndCountsTheirLinks() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      let shelf = Shelf(context: context)
      let red = Topic(context: context)
      let blue = Topic(context: context)
      for index in 0..<3 {
        let book = Book(context: context)
        book.shelf = index < 2 ? shelf : nil
        book.tags = index == 0 ? [red, blue] : [red]
      }
      let library = Library(context: context)
      Curator(context: context).library = library
      try context.save()
    }
    let path = container.persistentStore.url.path
    let text = try typedstore(["inspect", "--store", path])
    #expect(text.status == 0, "\(text.stderr)")
    for line in [
      "  Book — table \"Book\", 3 rows",
      "    shelf: to-one → Shelf.books, nullify, column shelf, 2 links",
      "    tags: many-to-many → Topic.books, nullify, join table _join_Book_tags, 4 links",
      "    chapters: ordered to-many → Chapter.book, cascade, order column _book_order",
      "    books: to-many → Book.shelf, cascade",
      "    curator: to-one → Curator.library, deny",
      "    library: to-one → Library.curator, nullify, required, column library, 1 link",
      "  Library — table \"Library\", 1 row",
    ] {
      #expect(text.stdout.contains(line + "\n"), "no line \(line) in:\n\(text.stdout)")
    }
    let json = try typedstore(["inspect", "--store", path, "--json"])
    let entities = json.json["entities"] as? [[String: Any]] ?? []
    let book = entities.first { $0["name"] as? String == "Book" }
    let relationships = book?["relationships"] as? [[String: Any]] ?? []
    let tags = relationships.first { $0["name"] as? String == "tags" }
    #expect(tags?["links"] as? Int == 4 && tags?["manyToMany"] as? Bool == true)
    #expect(tags?["joinTable"] as? String == "_join_Book_tags" && tags?["destination"] as? String == "Topic")
    let topic = entities.first { $0["name"] as? String == "Topic" }
    let books = (topic?["relationships"] as? [[String: Any]])?.first
    #expect(books?["links"] is NSNull)  // the owning side (Book.tags) stores them
    #expect(
      try container.persistentStore.inspect().linkCounts == [
        "Book.shelf": 2, "Book.tags": 4, "Chapter.book": 0, "Curator.library": 1, "Page.chapter": 0,
      ])
  }

  @Test func checkFindsRowsWrittenWithoutHistory() async throws {
    let container = try await makeToolStore()
    let url = container.persistentStore.url
    var options = StoreOptions()
    options.recordsHistory = false
    let silent = try PersistentContainer(name: "Silent", model: notesModel, storeURL: url, options: options)
    try await silent.performBackgroundTask { context in
      Note(context: context).title = "no history"
      try context.save()
    }
    let check = try typedstore(["check", "--store", url.path])
    #expect(check.status == 1)
    #expect(check.stdout.contains("problem: history: Note 5 has no change in history"), "\(check.stdout)")
    #expect(check.stderr.hasPrefix("typedstore: check failed"))
  }

  // MARK: - The demo

  @Test func demoRunsToTheEndAndEveryCommandWorksOnItsStore() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-demo-\(getpid())")
    try? FileManager.default.removeItem(at: directory)
    let run = try typedstore(["demo", "--dir", directory.path, "--seconds", "1"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("each folder's notes): yes"))
    #expect(run.stdout.contains("writer-1") && run.stdout.contains("writer-2") && run.stdout.contains("merger"))
    let path = directory.appendingPathComponent("demo.sqlite").path
    #expect(run.stdout.contains("typedstore history export --store \(path)"))
    let stats = try typedstore(["history", "stats", "--store", path, "--json"])
    let transactions = stats.json["transactions"] as? Int ?? 0
    #expect(transactions > 10)
    let consumers = try typedstore(["consumers", "list", "--store", path, "--json"])
    let listed = try JSONSerialization.jsonObject(with: Data(consumers.stdout.utf8)) as? [[String: Any]]
    #expect(listed?.first?["lag"] as? Int == 0)
    #expect(try typedstore(["check", "--store", path]).status == 0)
    #expect(try typedstore(["history", "export", "--store", path]).objects.count == transactions)
    let prune = try typedstore(["history", "prune", "--store", path, "--consumed"])
    // Every consumer has read everything: all but the newest transaction, its checkpoint, go.
    #expect(prune.stdout.contains("deleted \(transactions - 1) transactions"))
    #expect(try typedstore(["check", "--store", path]).status == 0)
    // A second demo in the same folder refuses, and changes nothing.
    let again = try typedstore(["demo", "--dir", directory.path, "--seconds", "1"])
    #expect(again.status == 1)
    #expect(again.stderr.contains("exists already"))
  }

  /// Runs `command` with `/bin/sh` in `folder`, with `path` as the PATH: the way a user types
  /// what the demo printed.
  private func shell(_ command: String, in folder: URL, path: String) throws -> ToolRun {
    let process = POSIXProcess()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    process.currentDirectoryURL = folder
    process.environment = ["PATH": path, "HOME": NSTemporaryDirectory()]
    return try runCollectingOutput(process, seconds: 60)
  }

  /// The demo prints commands that run as printed from where it was started: the tool's path
  /// when no `typedstore` on the PATH is this tool (after `swift run`), `typedstore` when it is.
  @Test func theDemosCommandsRunAsPrintedFromWhereItWasStarted() throws {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-demo-commands-\(getpid())")
    try? FileManager.default.removeItem(at: base)
    let bin = base.appendingPathComponent("bin")
    try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: base) }
    let tool = builtProduct("typedstore").path
    let quoted = "'\(tool.replacingOccurrences(of: "'", with: "'\\''"))'"
    for installed in [false, true] {
      if installed {
        try FileManager.default.createSymbolicLink(
          atPath: bin.appendingPathComponent("typedstore").path, withDestinationPath: tool)
      }
      let folder = base.appendingPathComponent(installed ? "installed" : "built")
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let path = "\(bin.path):/usr/bin:/bin"
      let demo = try shell("\(quoted) demo --dir store --seconds 1", in: folder, path: path)
      #expect(demo.status == 0, "\(demo.stderr)")
      let commands = demo.lines.drop { $0 != "Try, on this store:" }.dropFirst().map {
        String($0.trimmingCharacters(in: .whitespaces).split(separator: "#")[0]).trimmingCharacters(in: .whitespaces)
      }
      #expect(commands.count == 10, "\(demo.stdout)")
      for command in commands {
        let program = String(command.prefix { $0 != " " })
        if installed {
          #expect(program == "typedstore", "\(command)")
        } else {
          let resolved = URL(fileURLWithPath: program, relativeTo: folder).resolvingSymlinksInPath().path
          #expect(program.hasPrefix("/") && resolved == URL(fileURLWithPath: tool).resolvingSymlinksInPath().path)
        }
        // `watch` runs until interrupted; the demo's writer, once, is enough.
        guard !command.contains(" history watch "), !installed || command.contains(" check ") else { continue }
        let run = try shell(command, in: folder, path: path)
        #expect(run.status == 0, "\(command): \(run.stderr)")
      }
    }
  }

  @Test func ofTwoDemosStartedOnOneFolderAtOnceOneRunsAndOneRefuses() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-demos-\(getpid())")
    try? FileManager.default.removeItem(at: directory)
    async let first = offThePool { try typedstore(["demo", "--dir", directory.path, "--seconds", "1"]) }
    async let second = offThePool { try typedstore(["demo", "--dir", directory.path, "--seconds", "1"]) }
    let runs = try await [first, second]
    #expect(runs.map(\.status).sorted() == [0, 1])
    #expect(runs.contains { $0.stderr.contains("exists already") })
    #expect(runs.contains { $0.stdout.contains("each folder's notes): yes") })
  }

  // MARK: - Conventions and bad input

  @Test func helpAndVersion() throws {
    let help = try typedstore(["--help"])
    #expect(help.status == 0)
    #expect(help.stdout.contains("SUBCOMMANDS:") && help.stdout.contains("history"))
    #expect(!help.stdout.contains("demo-writer"))
    for command in [
      ["history", "export"], ["history", "watch"], ["history", "prune"], ["history", "stats"],
      ["consumers", "list"], ["consumers", "remove"], ["inspect"], ["check"], ["demo"],
    ] {
      let run = try typedstore(command + ["--help"])
      #expect(run.status == 0)
      #expect(run.stdout.hasPrefix("OVERVIEW: "), "\(command)")
      #expect(run.stdout.contains("USAGE: typedstore \(command.joined(separator: " "))"))
    }
    #expect(try typedstore(["help", "history", "prune"]).stdout.contains("--include-stale"))
    #expect(try typedstore(["--version"]).stdout.hasPrefix("typedstore "))
  }

  @Test func badInputGetsOneLineAndItsExitCodeAndLeavesTheStoreAsItWas() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    let text = path + ".txt"
    try Data("not a store".utf8).write(to: URL(fileURLWithPath: text))
    let cases: [(arguments: [String], status: Int32, says: String)] = [
      (["history", "export"], 2, "Missing expected argument '--store <path>'"),
      (["history", "export", "--store", path, "--bogus"], 2, "Unknown option '--bogus'"),
      (["history", "explode", "--store", path], 2, "Unknown command 'explode'"),
      (["history", "export", "--store", path, "--after", "yesterday"], 2, "expected a token"),
      (["history", "export", "--store", path, "--since", "soon"], 2, "expected an ISO 8601 date"),
      (["history", "export", "--store", path, "--limit", "-1"], 2, "expected a whole number"),
      (["history", "export", "--store", path, "--format", "xml"], 2, "expected ndjson or json"),
      (["history", "prune", "--store", path], 2, "Give one policy"),
      (["history", "prune", "--store", path, "--consumed", "--keep-last", "1"], 2, "not --consumed and --keep-last"),
      (["history", "prune", "--store", path, "--older-than", "a while"], 2, "expected a duration"),
      (["history", "export", "--store", path + ".missing"], 3, "there is no store at"),
      (["history", "export", "--store", text], 3, "not an SQLite database"),
      (["inspect", "--store", NSTemporaryDirectory()], 3, "is a directory"),
      (["history", "export", "--store", path, "--entity", "Nope"], 1, "no entity named 'Nope'"),
      (["history", "export", "--store", path, "--author", "mallory"], 1, "author 'mallory'"),
      (["history", "export", "--store", path, "--after", "\(UUID().uuidString):1"], 1, "belongs to store"),
      (["history", "export", "--store", path, "-o", "/nonexistent-folder/out.ndjson"], 1, "cannot write"),
      (["history", "export", "--store", path, "-o", "/dev/full"], 1, "No space left on device"),
      (["consumers", "remove", "nobody", "--store", path], 1, "no consumer named \"nobody\""),
      (["history", "export", "--store", path, "-o", path], 1, "it is a file of the store itself"),
      (["history", "prune", "--store", path, "--consumed", "--archive", path + "-wal"], 1, "a file of the store"),
    ]
    let token = try container.persistentStore.currentHistoryToken()
    for (arguments, status, says) in cases {
      let run = try typedstore(arguments)
      #expect(run.status == status, "\(arguments): \(run.stderr)")
      #expect(run.stderr.contains(says), "\(arguments): \(run.stderr)")
      #expect(run.stderr.hasPrefix("typedstore: "), "\(arguments)")
      #expect(!run.stderr.contains("Fatal error") && !run.stderr.contains("Backtrac"))
    }
    #expect(try container.persistentStore.currentHistoryToken() == token)
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 0)
  }

  @Test func aFileSizeLimitStopsAnExportWithOneLineAndNoFile() async throws {
    let container = try await makeToolStore()
    let path = container.persistentStore.url.path
    try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Note>(count: 5000) { index, note in note.title = "row \(index)" })
    }
    let before = try container.fetchHistory(HistoryRequest()).count
    #expect(before == 5)
    // 128 blocks: room for SQLite's shared-memory file, not for the export (about 600 KiB).
    let output = path + ".limited.ndjson"
    let limited = try typedstore(["history", "export", "--store", path, "-o", output], shell: "ulimit -f 128")
    #expect(limited.status == 1, "\(limited.stderr)")
    #expect(limited.stderr.contains("File too large"), "\(limited.stderr)")
    #expect(limited.stderr.split(separator: "\n").count == 1)
    #expect(!FileManager.default.fileExists(atPath: output))
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: NSString(string: path).deletingLastPathComponent)
        .allSatisfy { !$0.contains("limited.ndjson") })
    #expect(try container.fetchHistory(HistoryRequest()).count == before)
  }
}
