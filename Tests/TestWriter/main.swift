import CSQLite
import Foundation
import Synchronization
import TypedStore

// A second process for the multi-process tests.
//
//   typedstore-test-writer <store> <author> <count>
//       opens the store and saves one event per transaction, <count> times.
//   typedstore-test-writer race <store> <author> <count> <start, ms since 1970>
//       waits until the start time, opens (or creates) the store (waiting up to 30 s for the
//       write lock) and saves <count> events,
//       one per transaction, printing "saved <sequence> <primary key>" as each save returns:
//       what the test may hold the store to. Prints "open failed: <error>" and exits 2 when
//       the store cannot be opened.
//   typedstore-test-writer hold <store> <count>
//       saves <count> events, one per transaction, prints "ready" and keeps the store open
//       until killed: the WAL then holds those commits, not yet checkpointed.
//   typedstore-test-writer set <store> <primary key> <sequence>
//   typedstore-test-writer delete <store> <primary key>
//       changes or deletes one event, in one transaction.
//   typedstore-test-writer open <store> [read-only]
//       opens the store, counts its events and tries to save one; prints what happened.
//   typedstore-test-writer soak-writer <store> <author> <seconds>
//       for that long: inserts, updates and deletes through a context (object-trump merge
//       policy) and batch inserts and updates; prints "ops <n>" at the end and
//       "error: <error>" (exit 3) if anything reaches it, a busy error included.
//   typedstore-test-writer consumer <store> <name> <log>
//       a HistoryMerger named <name> from the beginning, with a context holding every event,
//       whose hook appends "tx <number>" to <log> ("start <pid> <checkpoint>" first). When
//       <log>.stop exists it catches up with the store, stops, checks that its live objects
//       equal the store's rows, prints "verified <n>" (or "mismatch …") and exits.
//   typedstore-test-writer effects-consumer <store> <name> <stop file>
//       a HistoryMerger named <name> from the beginning whose transactional hook inserts, for
//       each transaction it processes, one event with source "effect" and the transaction's
//       number as its sequence, saved with the checkpoint. When the stop file exists it
//       catches up with the store, stops and prints "done <checkpoint>".
//   typedstore-test-writer app <store> <name> <log> [<prune after n merges>]
//       the app of an app-and-extension pair, as a PersistentHistoryTrackingKit user writes
//       it: default merger options, a hook registry with finish() (AppRole.swift).
//   typedstore-test-writer pruner <store> <stop file>
//       prunes what every consumer has read, every 100 ms, until the stop file exists;
//       prints "pruned <transactions>".
//   typedstore-test-writer expiry-watch <store> <primary key>
//       a context that merges automatically holds that event; prints "ready". When history it
//       had not read is pruned while it sleeps (the test stops it with SIGSTOP), it prints
//       "expired <horizon> sequence <the held event's sequence after the refresh>".
//   typedstore-test-writer graph-writer <store> <author> <seconds>
//       random relationship edits, cascades and batch deletes of a graph of crates, items
//       and stickers (GraphWriter.swift); prints "ops <n> dangling <d>" or "error: <error>".
//   typedstore-test-writer link-writer <store> <author> <count> <start, s since 1970>
//       reads the store's one item's stickers, waits until the start time, then links <count>
//       new stickers to it from that stale copy; prints "linked <text>" after each save.
//   typedstore-test-writer migrate-open <store> <author> <start, ms since 1970>
//       opens the store with version 2 of Event (migrating it), saves one event
//       (MigrationWriter.swift); prints "migrating", "opened", "saved <primary key>".
//   typedstore-test-writer plan-open <store> <author> <start, ms since 1970>
//       opens the store with the three-version Customer plan (migrating it), saves one
//       customer (PlanWriter.swift); prints "migrating", "opened", "saved <primary key>".
//   Any of these after "as-user <uid>" runs as that user (the tests run as root, which may
//   write any file).

final class Event: ManagedObject {
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
}

func fail(_ message: String, code: Int32) -> Never {
  FileHandle.standardError.write(Data("typedstore-test-writer: \(message)\n".utf8))
  exit(code)
}

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The store at `location`: a file's path, or a `postgresql://` URL.
func storeURL(_ location: String) -> URL {
  guard location.contains("://"), let url = URL(string: location) else { return URL(fileURLWithPath: location) }
  return url
}

func openContainer(_ location: String, readOnly: Bool = false, busyTimeout: Duration? = nil) throws
  -> PersistentContainer
{
  var options = StoreOptions()
  options.isReadOnly = readOnly
  if let busyTimeout { options.busyTimeout = busyTimeout }
  return try PersistentContainer(
    name: "Events", model: ManagedObjectModel(Event.self), storeURL: storeURL(location), options: options)
}

func save(_ context: ManagedObjectContext, author: String, sequence: Int) throws -> Int64 {
  try context.performAndWait { context in
    context.transactionAuthor = author
    let event = Event(context: context)
    event.source = author
    event.sequence = sequence
    try context.save()
    return event.managedID.primaryKey ?? -1
  }
}

/// Runs `body` on a task off the main actor and waits for it here (the main thread): an
/// error it throws is printed as "error: <error>".
func waitForTask(_ body: @escaping @Sendable () async throws -> Void) {
  let semaphore = DispatchSemaphore(value: 0)
  Task.detached {
    do {
      try await body()
    } catch {
      say("error: \(error)")
    }
    semaphore.signal()
  }
  semaphore.wait()
}

/// A function that appends a line to the log at `path` (made if missing), as consumers log
/// what they process: each line goes to the end, whoever wrote before (a killed run too).
func appender(_ path: String) -> @Sendable (String) -> Void {
  if !FileManager.default.fileExists(atPath: path) {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
  }
  guard let log = FileHandle(forUpdatingAtPath: path) else { fail("cannot open \(path)", code: 66) }
  return { line in
    _ = try? log.seekToEnd()
    try? log.write(contentsOf: Data((line + "\n").utf8))
  }
}

/// Starts `merger`, and stops it once `stopFile` exists and it has processed the store's
/// newest transaction; throws the error that stopped it, if one did.
func follow(_ merger: HistoryMerger, in container: PersistentContainer, until stopFile: String) async throws {
  try await merger.start()
  while true {
    if let error = merger.error { throw error }
    let current = try container.currentHistoryToken.transactionNumber
    if FileManager.default.fileExists(atPath: stopFile) && merger.checkpoint.transactionNumber >= current { break }
    try await Task.sleep(for: .milliseconds(10))
  }
  await merger.stop()
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "as-user", arguments.count > 1, let uid = UInt32(arguments[1]) {
  guard setgid(uid) == 0, setuid(uid) == 0 else { fail("cannot become user \(uid)", code: 70) }
  arguments.removeFirst(2)
}

switch arguments.first {
case "migrate-open":
  migrateOpen(arguments)

case "plan-open":
  planOpen(arguments)

case "shop-plan":
  shopPlanOpen(arguments)

case "shopper-move":
  shopperMove(arguments)

case "pg-open-shop":
  postgreSQLOpenShop(arguments)

case "pg-record":
  postgreSQLRecord(arguments)

case "pg-save":
  postgreSQLSave(arguments)

case "pg-container":
  postgreSQLContainer(arguments)

case "try-write":
  // `try-write <store>`: tries to take the store's write lock, waiting 300 ms, as any other
  // SQLite program would: prints "wrote" or "busy".
  guard arguments.count == 2 else { fail("usage: try-write <store>", code: 64) }
  var database: OpaquePointer?
  guard sqlite3_open_v2(arguments[1], &database, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
    fail("cannot open \(arguments[1])", code: 66)
  }
  sqlite3_busy_timeout(database, 300)
  let code = sqlite3_exec(database, "BEGIN IMMEDIATE", nil, nil, nil)
  if code == SQLITE_OK {
    sqlite3_exec(database, "ROLLBACK", nil, nil, nil)
    say("wrote")
  } else {
    say("busy (\(code))")
  }
  sqlite3_close(database)

case "race":
  guard arguments.count == 5, let count = Int(arguments[3]), let start = Double(arguments[4]) else {
    fail("usage: race <store> <author> <count> <start ms>", code: 64)
  }
  let wait = start / 1000 - Date().timeIntervalSince1970
  if wait > 0 { Thread.sleep(forTimeInterval: wait) }
  let container: PersistentContainer
  do {
    // Eight opens that start at one moment queue for the write lock. On two cores that also
    // run the rest of the suite they took more than the default 5 s (CI, 2026-12-05); the
    // race is about who creates the store and what is kept, not about how long the queue is.
    container = try openContainer(arguments[1], busyTimeout: .seconds(30))
  } catch {
    say("open failed: \(error)")
    exit(2)
  }
  let context = container.newBackgroundContext()
  do {
    for sequence in 0..<count {
      let key = try save(context, author: arguments[2], sequence: sequence)
      say("saved \(sequence) \(key)")
    }
  } catch {
    say("save failed: \(error)")
    exit(3)
  }

case "hold":
  guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: hold <store> <count>", code: 64) }
  do {
    let container = try openContainer(arguments[1])
    let context = container.newBackgroundContext()
    for sequence in 0..<count { _ = try save(context, author: "holder", sequence: sequence) }
    say("ready")
    while true { Thread.sleep(forTimeInterval: 60) }
  } catch {
    fail("\(error)", code: 1)
  }

case "expiry-watch":
  guard arguments.count == 3, let key = Int64(arguments[2]) else { fail("usage: expiry-watch <store> <pk>", code: 64) }
  do {
    let container = try openContainer(arguments[1])
    let storeID = container.persistentStore.identifier
    let context = container.newBackgroundContext()
    let id = try ManagedID<Event>(validating: URL(string: "typedstore://\(storeID.uuidString)/Event/p\(key)")!)
    try context.performAndWait { context in
      context.automaticallyMergesChangesFromParent = true
      _ = try context.existingObject(with: id).sequence
    }
    let observation = container.addHistoryExpiredObserver { horizon in
      // The context's refresh was enqueued before this callback: this block runs after it.
      let sequence = context.performAndWait { context in (try? context.registeredObject(for: id))?.sequence ?? -1 }
      say("expired \(horizon.transactionNumber) sequence \(sequence)")
    }
    say("ready")
    withExtendedLifetime(observation) {
      while true { Thread.sleep(forTimeInterval: 60) }
    }
  } catch {
    fail("\(error)", code: 1)
  }

case "set", "delete":
  guard arguments.count >= 3, let key = Int64(arguments[2]) else {
    fail("usage: set|delete <store> <pk> …", code: 64)
  }
  let value = arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0
  let isDelete = arguments[0] == "delete"
  do {
    let container = try openContainer(arguments[1])
    let storeID = container.persistentStore.identifier
    try container.newBackgroundContext().performAndWait { context in
      context.transactionAuthor = "changer"
      let id = try ManagedID<Event>(validating: URL(string: "typedstore://\(storeID.uuidString)/Event/p\(key)")!)
      let event = try context.existingObject(with: id)
      if isDelete { context.delete(event) } else { event.sequence = value }
      try context.save()
    }
    say("done")
  } catch {
    fail("\(error)", code: 1)
  }

case "soak-writer":
  guard arguments.count == 4, let seconds = Double(arguments[3]) else {
    fail("usage: soak-writer <store> <author> <seconds>", code: 64)
  }
  let author = arguments[2]
  do {
    let container = try openContainer(arguments[1])
    let context = container.newBackgroundContext()
    let deadline = Date().addingTimeInterval(seconds)
    var operations = 0
    while Date() < deadline {
      let choice = Int.random(in: 0..<20)
      try context.performAndWait { context in
        context.transactionAuthor = author
        context.mergePolicy = .objectTrump
        let count = try context.count(for: FetchRequest<Event>())
        switch choice {
        case 0:
          _ = try context.execute(
            BatchInsertRequest<Event>(count: 5) { index, event in
              event.source = author
              event.sequence = index
            })
        case 1 where count > 0:
          _ = try context.execute(BatchUpdateRequest<Event>(propertiesToUpdate: [.set(\.sequence, choice)]))
        case 2...5 where count > 0:
          var request = FetchRequest<Event>()
          request.fetchOffset = Int.random(in: 0..<count)
          request.fetchLimit = 1
          if let event = try context.fetch(request).first { context.delete(event) }
          try context.save()
        case 6...11 where count > 0:
          var request = FetchRequest<Event>()
          request.fetchOffset = Int.random(in: 0..<count)
          request.fetchLimit = 1
          if let event = try context.fetch(request).first { event.sequence += 1 }
          try context.save()
        default:
          for sequence in 0..<Int.random(in: 1...3) {
            let event = Event(context: context)
            event.source = author
            event.sequence = sequence
          }
          try context.save()
        }
        context.reset()
      }
      operations += 1
    }
    say("ops \(operations)")
  } catch {
    say("error: \(error)")
    exit(3)
  }

case "consumer":
  guard arguments.count == 4 else { fail("usage: consumer <store> <name> <log>", code: 64) }
  let logPath = arguments[3]
  let append = appender(logPath)
  do {
    let container = try openContainer(arguments[1])
    let live = container.newBackgroundContext()
    // The live objects: every event, loaded and kept loaded for the merger to update.
    let loaded = try live.performAndWait { context in
      try context.fetch(FetchRequest<Event>()).count
    }
    _ = loaded
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.checkpointInterval = .milliseconds(20)
    let merger = try HistoryMerger(container: container, consumer: arguments[2], contexts: [live], options: options)
    // The first hook call logs where this run started: the checkpoint before that transaction.
    let started = Mutex(false)
    merger.addHook { [merger] event in
      let first = started.withLock { wasStarted in
        defer { wasStarted = true }
        return !wasStarted
      }
      if first {
        append("start \(getpid()) \(merger.checkpoint.transactionNumber)")
      }
      append("tx \(event.transaction.transactionNumber)")
    }
    waitForTask {
      try await follow(merger, in: container, until: logPath + ".stop")
      // The live objects equal the store's rows; objects whose rows are gone left.
      let mismatches = try live.performAndWait { context in
        let rows = try container.newBackgroundContext().performAndWait { reader in
          Dictionary(
            uniqueKeysWithValues: try reader.fetch(FetchRequest<Event>()).map {
              ($0.managedID.primaryKey ?? -1, "\($0.source) \($0.sequence)")
            })
        }
        var mismatches: [String] = []
        var checked = 0
        for case let event as Event in context.registeredObjects where !event.isFault && !event.isDeleted {
          checked += 1
          let key = event.managedID.primaryKey ?? -1
          if rows[key] != "\(event.source) \(event.sequence)" {
            mismatches.append("p\(key): live \(event.source) \(event.sequence), store \(rows[key] ?? "gone")")
          }
        }
        return (checked, mismatches)
      }
      say(mismatches.1.isEmpty ? "verified \(mismatches.0)" : "mismatch \(mismatches.1.prefix(5))")
    }
  } catch {
    say("error: \(error)")
    exit(3)
  }

case "effects-consumer":
  guard arguments.count == 4 else { fail("usage: effects-consumer <store> <name> <stop file>", code: 64) }
  let stopFile = arguments[3]
  do {
    let container = try openContainer(arguments[1])
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.checkpointInterval = .milliseconds(20)
    let merger = try HistoryMerger(container: container, consumer: arguments[2], options: options)
    merger.addTransactionalHook { event, context in
      let effect = Event(context: context)
      effect.source = "effect"
      effect.sequence = Int(event.transaction.transactionNumber)
    }
    waitForTask {
      try await follow(merger, in: container, until: stopFile)
      say("done \(merger.checkpoint.transactionNumber)")
    }
  } catch {
    say("error: \(error)")
    exit(3)
  }

case "pruner":
  guard arguments.count == 3 else { fail("usage: pruner <store> <stop file>", code: 64) }
  do {
    let container = try openContainer(arguments[1])
    let pruner = HistoryPruner(container: container)
    var pruned = 0
    while !FileManager.default.fileExists(atPath: arguments[2]) {
      pruned += try pruner.prune(.consumed).deletedTransactions
      Thread.sleep(forTimeInterval: 0.1)
    }
    say("pruned \(pruned)")
  } catch {
    say("error: \(error)")
    exit(3)
  }

case "open":
  guard arguments.count >= 2 else { fail("usage: open <store> [read-only]", code: 64) }
  do {
    let container = try openContainer(arguments[1], readOnly: arguments.dropFirst(2).first == "read-only")
    let count = try container.viewContext.performAndWait { context in try context.count(for: FetchRequest<Event>()) }
    say("opened: \(count) events, \(try container.fetchHistory(HistoryRequest()).count) transactions")
    do {
      _ = try save(container.newBackgroundContext(), author: "probe", sequence: 0)
      say("saved")
    } catch {
      say("save failed: \(error)")
    }
  } catch {
    say("open failed: \(error)")
  }

case "app":
  guard arguments.count == 4 || arguments.count == 5 else {
    fail("usage: app <store> <name> <log> [<prune after n merges>]", code: 64)
  }
  runApp(
    path: arguments[1], name: arguments[2], logPath: arguments[3],
    pruneAfter: arguments.dropFirst(4).first.flatMap { Int($0) })

case "graph-writer":
  guard arguments.count == 4, let seconds = Double(arguments[3]) else {
    fail("usage: graph-writer <store> <author> <seconds>", code: 64)
  }
  runGraphWriter(path: arguments[1], author: arguments[2], seconds: seconds)

case "link-writer":
  guard arguments.count == 5, let count = Int(arguments[3]), let start = Double(arguments[4]) else {
    fail("usage: link-writer <store> <author> <count> <start, s since 1970>", code: 64)
  }
  runLinkWriter(path: arguments[1], author: arguments[2], count: count, start: start)

default:
  guard arguments.count == 3, let count = Int(arguments[2]) else {
    fail("usage: typedstore-test-writer <store path> <author> <count>", code: 64)
  }
  do {
    let container = try openContainer(arguments[0])
    let context = container.newBackgroundContext()
    for sequence in 0..<count { _ = try save(context, author: arguments[1], sequence: sequence) }
    print("\(arguments[1]): saved \(count)")
  } catch {
    fail("\(error)", code: 1)
  }
}
