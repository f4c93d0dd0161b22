import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// A `PersistentContainer` on a PostgreSQL store, opened by its `postgresql://` URL with the
/// same code as a file: its contexts, its change notifications and automatic merging, with
/// other processes (over loopback TCP, as other hosts) saving to the same store.
@Suite struct PostgreSQLContainerTests {
  /// The URL of a new store's schema on the tests' server, through its socket or over TCP.
  private static func storeURL(tcp: Bool = false) throws -> (url: URL, schema: String) {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let base = tcp ? server.tcpURL : server.url
    let url = try #require(URL(string: base + (base.contains("?") ? "&" : "?") + "schema=\(schema)"))
    return (url, schema)
  }

  private static func dropSchema(_ schema: String) {
    guard let server = try? PostgreSQLTestServer.server(), let admin = try? PostgreSQLConnection(url: server.url)
    else { return }
    _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE")
  }

  @Test func aContainerOpensAPostgreSQLStoreByItsURL() async throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    let model = try ManagedObjectModel(Event.self)
    let container = try PersistentContainer(name: "Events", model: model, storeURL: url)
    #expect(container.persistentStore.url == url)
    let id = try await container.performBackgroundTask { context in
      let event = Event(context: context)
      event.source = "first"
      try context.save()
      return event.managedID
    }
    // Another container of the same URL opens the same store: its UUID, its rows, its IDs.
    let again = try PersistentContainer(name: "Events", model: model, storeURL: url)
    #expect(again.persistentStore.identifier == container.persistentStore.identifier)
    let source = try again.newModelContext().existingObject(with: id).source
    #expect(source == "first")
    #expect(try again.persistentStore.currentHistoryToken().transactionNumber == 1)

    // Read-only: nothing is written, and a schema without a store is not made.
    var readOnly = StoreOptions()
    readOnly.isReadOnly = true
    let reader = try PersistentContainer(name: "Events", model: model, storeURL: url, options: readOnly)
    #expect(throws: StoreError.readOnly(path: url.absoluteString)) {
      try reader.newModelContext().execute(BatchDeleteRequest<Event>())
    }
    #expect(try reader.newModelContext().count(for: FetchRequest<Event>()) == 1)
    let empty = try #require(URL(string: url.absoluteString.replacingOccurrences(of: schema, with: schema + "_none")))
    #expect(throws: StoreError.notFound(path: "PostgreSQL schema \(schema)_none")) {
      _ = try PersistentContainer(name: "Events", model: model, storeURL: empty, options: readOnly)
    }

    // Without a schema, the container's name names it.
    let server = try PostgreSQLTestServer.server()
    let named = PostgreSQLStoreOpener.location(of: try #require(URL(string: server.tcpURL)), name: "My Notes")
    #expect(named.schema == "my_notes" && named.connection == server.tcpURL)

    // Another application's model is refused, as for a file; an unknown scheme is a typed error.
    #expect(throws: MigrationError.self) {
      _ = try PersistentContainer(name: "Events", model: heirloomModel, storeURL: url)
    }
    let mysql = try #require(URL(string: "mysql://h/db"))
    #expect(throws: StoreError.invalidStoreType(scheme: "mysql")) {
      _ = try PersistentContainer(name: "Events", model: model, storeURL: mysql)
    }
  }

  /// Processes save events and add to a tally through their own containers while one is
  /// killed; this process's observer hears every commit once, in commit order, and a live
  /// context that merges automatically shows the tally they made, without fetching it again.
  @Test func otherProcessesCommitsReachThisOnesObserversAndContexts() async throws {
    let (url, schema) = try Self.storeURL(tcp: true)
    defer { Self.dropSchema(schema) }
    let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    let live = container.newModelContext(name: "live")
    live.automaticallyMergesChangesFromParent = true
    let tally = Event(context: live)
    tally.source = "tally"
    try live.save()
    let heard = Recorder<StoreChanges>()
    let observation = container.addStoreChangesObserver { heard.add($0) }
    defer { _ = observation }

    let count = 12
    func saver(_ author: String, _ count: Int) throws -> SpawnedProcess {
      try SpawnedProcess(
        builtProduct("typedstore-test-writer"), ["pg-container", url.absoluteString, author, "\(count)"])
    }
    let savers = try ["a", "b"].map { try saver($0, count) }
    let doomed = try saver("doomed", 100_000)
    #expect(doomed.waitForLine("saved 3"), "\(doomed.transcript.all.joined())")
    doomed.kill()
    let outputs = try await offThePool { savers.map { $0.finish() } }
    for output in outputs { #expect(output.contains("saved \(count)\n"), "\(output)") }

    let newest = try container.persistentStore.currentHistoryToken().transactionNumber
    #expect(await eventually { heard.all.last?.token?.transactionNumber == newest })
    let numbers = heard.all.compactMap { $0.token?.transactionNumber }
    #expect(numbers == Array((2...newest)), "each commit once, in commit order")
    let saved = try live.count(for: FetchRequest<Event>(predicate: #Predicate { $0.source != "tally" }))
    #expect(saved >= 2 * count + 3 && newest == Int64(saved) + 1, "every save one transaction")
    let inserted = heard.all.flatMap { $0.insertedIDs }
    #expect(inserted.count == saved, "every event heard of, by its typed ID")
    #expect(tally.sequence == saved, "the live context merged the tally")
  }

  /// A durable consumer (`HistoryMerger`) of a PostgreSQL store reads every transaction once,
  /// keeps its checkpoint in the store, and a new merger of its name goes on after it; a
  /// prune keeps what it has not read: as on a store file.
  @Test func aConsumerResumesFromItsCheckpointAsOnAStoreFile() async throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    let model = try ManagedObjectModel(Event.self)
    let onPostgreSQL = try await Self.consumerScenario(
      PersistentContainer(name: "Events", model: model, storeURL: url))
    let onSQLite = try await Self.consumerScenario(PersistentContainer.makeTest(model: model))
    #expect(onPostgreSQL == onSQLite)
    #expect(onSQLite == ["seen 1 1, 2 2, 3 3", "pruned 2", "seen 1 1, 2 2, 3 3, 4 4, 5 5", "checkpoint 5"])
  }

  /// Two events, a merger started, one more, the merger stopped; two more, a prune of what
  /// was consumed, a new merger of the same name.
  private static func consumerScenario(_ container: PersistentContainer) async throws -> [String] {
    func save(_ sources: [String]) async throws {
      try await container.performBackgroundTask { context in
        for source in sources {
          let event = Event(context: context)
          event.source = source
          try context.save()
        }
      }
    }
    let seen = Recorder<String>()
    func merger() throws -> HistoryMerger {
      let merger = try HistoryMerger(container: container, consumer: "indexer")
      merger.addHook { event in
        for id in event.inserted(Event.self) {
          seen.add("\(event.transaction.transactionNumber) \(id.primaryKey ?? 0)")
        }
      }
      return merger
    }
    var log: [String] = []
    try await save(["a", "b"])
    let first = try merger()
    try await first.start()
    try await save(["c"])
    _ = await seen.wait(for: 3)
    await first.stop()
    log.append("seen " + seen.all.joined(separator: ", "))
    try await save(["d", "e"])  // while no merger runs
    log.append("pruned \(try HistoryPruner(container: container).prune(.consumed).deletedTransactions)")
    let second = try merger()
    try await second.start()
    _ = await seen.wait(for: 5)
    await second.stop()
    log.append("seen " + seen.all.joined(separator: ", "))
    let consumer = try container.persistentStore.historyConsumers().first { $0.name == "indexer" }
    log.append("checkpoint \(consumer?.checkpoint.transactionNumber ?? -1)")
    return log
  }

  /// What only narrows the rows on PostgreSQL (a search in strings) is checked in Swift by a
  /// fetch and a count. An aggregate over it reads the saved rows Swift found (by their keys);
  /// a batch request over it changes the rows Swift picks in its write transaction.
  @Test func aggregatesAndBatchesOverANarrowingPredicateAnswerAsSwift() throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    let context = container.newModelContext()
    for (source, sequence) in [("cafe\u{301}", 1), ("café", 2), ("cafeteria", 3)] {
      let event = Event(context: context)
      event.source = source
      event.sequence = sequence
    }
    try context.save()
    let narrowing = FetchRequest<Event>(predicate: #Predicate { $0.source.contains("é") })
    #expect(try context.fetch(narrowing).map(\.sequence).sorted() == [1, 2])
    #expect(try context.count(for: narrowing) == 2)
    #expect(try context.aggregate(.sum(\.sequence), for: narrowing) == 3)
    #expect(try context.aggregate(.count, for: narrowing, groupedBy: \.source) == ["café": 2])
    // Unsaved changes do not count, as for any aggregate.
    Event(context: context).source = "é"
    #expect(try context.aggregate(.count, for: narrowing) == 2)
    context.rollback()
    var update = BatchUpdateRequest<Event>(predicate: #Predicate { $0.source.contains("é") })
    update.propertiesToUpdate = [.set(\.sequence, 20)]
    update.returnsObjectIDs = true
    let updated = try context.execute(update)
    #expect(updated.count == 2)
    let accented: [ManagedID<Event>] = try context.fetch(FetchRequest<Event>())
      .filter { $0.source != "cafeteria" }.map(\.managedID)
    #expect(Set(updated.objectIDs ?? []) == Set(accented))
    let deleted = try context.execute(
      BatchDeleteRequest<Event>(predicate: #Predicate { $0.source.starts(with: "cafe\u{301}") }))
    #expect(deleted.count == 2, "café, composed and decomposed, is one string to Swift")
    let left = try container.newModelContext().fetch(FetchRequest<Event>())
    #expect(left.map(\.source) == ["cafeteria"] && left.map(\.sequence) == [3])
    let history = try container.fetchHistory(HistoryRequest())
    #expect(history.suffix(2).map { $0.changes.count } == [2, 2], "history names the rows changed, no other")
    // An exact one runs in SQL, aggregates included.
    let exact = FetchRequest<Event>(predicate: #Predicate { $0.sequence > 1 })
    #expect(try context.aggregate(.sum(\.sequence), for: exact) == 3)
  }

  /// A batch request over a predicate PostgreSQL only narrows picks its rows in Swift inside
  /// its write transaction, after it has the store's write lock: a row another writer commits
  /// while the batch waits for the lock is changed too, as a row committed before it would be.
  @Test func aNarrowingBatchPicksItsRowsInsideItsWriteTransaction() async throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    var options = StoreOptions()
    options.busyTimeout = .seconds(60)  // the batch waits for the holder below, on a busy machine
    let container = try PersistentContainer(
      name: "Events", model: ManagedObjectModel(Event.self), storeURL: url, options: options)
    let context = container.newModelContext()
    Event(context: context).source = "early é"
    try context.save()
    // All on a thread of its own, from the holder's lock to its commit: a task on the shared
    // pool may be resumed seconds late while the rest of the suite keeps the pool busy.
    let serverURL = try PostgreSQLTestServer.server().url
    let outcome = try await offThePool { () throws -> (waited: Bool, deleted: Int?) in
      // Another writer holds the write lock, and inserts a matching row it has not committed.
      let holder = try PostgreSQLConnection(url: serverURL)
      try holder.execute(
        script: "BEGIN; SELECT 1 FROM \(schema)._history_counter WHERE id = 1 FOR UPDATE; "
          + "INSERT INTO \(schema).\"Event\" (pk, _version, _entity, source, sequence) "
          + "SELECT 1000, 1, code, 'late é', 0 FROM \(schema)._entities WHERE name = 'Event'")
      let result = Shared<Result<Int, any Error>?>(nil)
      Thread {
        result.value = Result {
          try container.newModelContext().execute(
            BatchDeleteRequest<Event>(predicate: #Predicate { $0.source.contains("é") })
          ).count
        }
      }.start()
      // The batch waits for the write lock: a lock of another session not granted.
      let admin = try PostgreSQLConnection(url: serverURL)
      let deadline = ContinuousClock.now + .seconds(60)
      var waited = false
      while !waited && result.value == nil && ContinuousClock.now < deadline {
        let rows = try admin.execute(
          "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            + "WHERE NOT l.granted AND a.query LIKE '%_history_counter%' AND l.pid <> $1::integer",
          [String(holder.processID)])
        waited = rows.rows.first?.first != "0"
        if !waited { Thread.sleep(forTimeInterval: 0.01) }
      }
      waited = waited && result.value == nil
      try holder.execute(script: "COMMIT")
      while result.value == nil && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
      return (waited, try result.value?.get())
    }
    #expect(outcome.waited, "the batch waits for the write lock")
    #expect(outcome.deleted == 2, "both rows, the late one's too")
    #expect(try container.newModelContext().count(for: FetchRequest<Event>()) == 0)
  }

  /// The server stops and starts again under a running container: while it is down, reads and
  /// saves throw and write nothing; once it is back, the same contexts read and save again, and
  /// the observer hears every commit (of this process and of another) once, in order.
  /// A save that cannot have the store's write lock within the busy timeout throws the
  /// server's typed error, busy, as SQLite's on a file, and writes nothing.
  @Test func aWriteLockNotHadInTimeIsABusyStoreServerError() throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    var options = StoreOptions()
    options.busyTimeout = .milliseconds(200)
    let container = try PersistentContainer(
      name: "Events", model: ManagedObjectModel(Event.self), storeURL: url, options: options)
    let holder = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    try holder.execute(script: "BEGIN; SELECT 1 FROM \(schema)._history_counter WHERE id = 1 FOR UPDATE")
    let context = container.newModelContext()
    Event(context: context).source = "blocked"
    let error = #expect(throws: StoreServerError.self) { try context.save() }
    #expect(error?.isBusy == true && error?.isConnectionLost == false, "\(String(describing: error))")
    try holder.execute(script: "ROLLBACK")
    try context.save()
    #expect(try container.newModelContext().count(for: FetchRequest<Event>()) == 1)
  }

  @Test func contextsAndObserversGoOnAfterTheServerRestarts() async throws {
    let server = try PostgreSQLTestServer.ownServer()
    let schema = PostgreSQLTestServer.schemaName()
    let url = try #require(URL(string: server.tcpURL + "?schema=\(schema)"))
    let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    let heard = Recorder<Int64>()
    let observation = container.addStoreChangesObserver { changes in
      if let number = changes.token?.transactionNumber { heard.add(number) }
    }
    defer { _ = observation }
    let context = container.newModelContext()
    func save(_ source: String) throws {
      let event = Event(context: context)
      event.source = source
      do { try context.save() } catch {
        context.rollback()
        throw error
      }
    }
    try save("tally")  // the other process's saves add to it
    #expect(await heard.wait(for: 1, seconds: 60))
    // The context's reader and the store's own are connected, and stay so across the restart.
    #expect(try context.count(for: FetchRequest<Event>()) == 1)
    #expect(try container.persistentStore.currentHistoryToken().transactionNumber == 1)

    try PostgreSQLTestServer.stop(server)
    // The public, typed error of the server's side, as a file's is `SQLiteError`.
    let down = [
      #expect(throws: StoreServerError.self) { _ = try context.fetch(FetchRequest<Event>()) },
      #expect(throws: StoreServerError.self) { try save("while down") },
      #expect(throws: StoreServerError.self) { _ = try container.persistentStore.currentHistoryToken() },
    ]
    #expect(down.allSatisfy { $0?.isConnectionLost == true }, "\(down)")
    try PostgreSQLTestServer.restart(server)

    // Within seconds alone; the whole suite's load (its own server among other processes)
    // has made these waits last half a minute.
    #expect(
      await eventually(seconds: 60) { try context.count(for: FetchRequest<Event>()) == 1 },
      "the same context reads again")
    #expect(
      await eventually(seconds: 60) { try container.persistentStore.currentHistoryToken().transactionNumber == 1 })
    try save("after")
    let saver = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), ["pg-container", url.absoluteString, "other", "2"])
    let output = try await offThePool { saver.finish() }
    #expect(output.contains("saved 2\n"), "\(output)")
    #expect(await eventually(seconds: 60) { heard.all.count >= 4 })
    #expect(heard.all == [1, 2, 3, 4], "each commit once, in order, across the restart")
    let sources = try context.fetch(FetchRequest<Event>()).map(\.source)
    #expect(sources.sorted() == ["after", "other", "other", "tally"], "nothing of the saves while it was down")
  }

  /// What the review found on PostgreSQL, each answered as on a store file and as Swift does:
  /// a request that ignores unsaved changes checks the saved values in Swift; a captured nil in
  /// `flatMap` and a NaN literal compare as Swift says; text with a NUL is a typed error.
  @Test func narrowedFetchesNilsNaNsAndNULsAnswerAsOnAStoreFile() async throws {
    let (url, schema) = try Self.storeURL(tcp: true)
    defer { Self.dropSchema(schema) }
    let model = try ManagedObjectModel(Dial.self)
    let onPostgreSQL = try PersistentContainer(name: "Dials", model: model, storeURL: url)
    #expect(onPostgreSQL.persistentStore.url.password == nil, "no password in what the store shows")
    #expect(url.password != nil)
    let onSQLite = try PersistentContainer.makeTest(model: model)
    let answers = try [onSQLite, onPostgreSQL].map { try Self.edgeScenario($0.newModelContext()) }
    #expect(answers[0] == answers[1])
    #expect(answers[0] == ["saved [1, 2]", "pending [2, 3]", "nil [1, 2, 3]", "nan [] [1, 2, 3]"], "\(answers[0])")
    let context = onPostgreSQL.newModelContext()
    Dial(context: context).source = "a\u{0}b"
    #expect(throws: StoreError.self) { try context.save() }
  }

  /// Three events ("café", "cafe\u{301}", "cafeteria"), one edited without saving; the answers.
  private static func edgeScenario(_ context: ModelContext) throws -> [String] {
    for (source, sequence) in [("café", 1), ("cafe\u{301}", 2), ("cafeteria", 3)] {
      let dial = Dial(context: context)
      dial.source = source
      dial.sequence = sequence
      dial.reading = Double(sequence)
    }
    try context.save()
    let dials = try context.fetch(FetchRequest<Dial>(sortBy: [SortDescriptor(\.sequence)]))
    dials[0].source = "cafe"  // saved "café": still found by saved values
    dials[2].source = "caféteria"  // saved "cafeteria": found only with pending changes
    var saved = FetchRequest<Dial>(
      predicate: #Predicate { $0.source.contains("é") }, sortBy: [SortDescriptor(\.sequence)])
    saved.includesPendingChanges = false
    let pending = FetchRequest<Dial>(
      predicate: #Predicate { $0.source.contains("é") }, sortBy: [SortDescriptor(\.sequence)])
    let none: Int? = nil
    let nilRequest = FetchRequest<Dial>(
      predicate: #Predicate { dial in none.flatMap { dial.sequence > $0 } ?? true },
      sortBy: [SortDescriptor(\.sequence)])
    let notANumber = Double.nan
    let below = FetchRequest<Dial>(predicate: #Predicate { $0.reading < notANumber })
    let notBelow = FetchRequest<Dial>(predicate: #Predicate { !($0.reading < notANumber) })
    return [
      "saved \(try context.fetch(saved).map(\.sequence))",
      "pending \(try context.fetch(pending).map(\.sequence))",
      "nil \(try context.fetch(nilRequest).map(\.sequence))",
      "nan \(try context.fetch(below).map(\.sequence)) \(try context.fetch(notBelow).map(\.sequence).sorted())",
    ]
  }

  /// A database whose encoding is not UTF-8 cannot keep Swift's string semantics: refused with
  /// a typed error, and nothing is made in it.
  @Test func aDatabaseThatIsNotUTF8IsRefused() throws {
    // A server of its own: creating and dropping a database stalled the shared one's sessions.
    let server = try PostgreSQLTestServer.ownServer()
    let admin = try PostgreSQLConnection(url: server.url)
    let database = "ascii_\(PostgreSQLTestServer.schemaName())"
    _ = try admin.execute("CREATE DATABASE \(database) ENCODING 'SQL_ASCII' TEMPLATE template0")
    defer { _ = try? admin.execute("DROP DATABASE \(database)") }
    let url = try #require(URL(string: String(server.tcpURL.dropLast("postgres".count)) + database))
    #expect {
      _ = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    } throws: { error in
      guard case StoreError.unsupportedOperation(let message) = error else { return false }
      return message.contains("UTF8")
    }
  }

  /// `destroyPersistentStore(at:)` drops a PostgreSQL store's schema: not while a container
  /// (of this process or another) uses it, and never a schema of another application's.
  @Test func destroyingAPostgreSQLStoreDropsItsSchemaOnceNobodyUsesIt() throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    let admin = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    func schemaExists() throws -> Bool {
      try admin.execute("SELECT count(*) FROM pg_namespace WHERE nspname = $1", [schema]).rows.first?.first == "1"
    }
    do {
      let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
      let context = container.newModelContext()
      Event(context: context).source = "kept"
      try context.save()
      #expect(throws: StoreError.storeInUse(path: "PostgreSQL schema \(schema)")) {
        try PersistentContainer.destroyPersistentStore(at: url)
      }
      #expect(try schemaExists())
    }
    try PersistentContainer.destroyPersistentStore(at: url)
    #expect(try !schemaExists())
    try PersistentContainer.destroyPersistentStore(at: url)  // nothing there: fine
    // Another application's schema is left as it is.
    try admin.execute(script: "CREATE SCHEMA \(schema); CREATE TABLE \(schema).accounts (id int)")
    #expect(throws: StoreError.notATypedStore(path: "PostgreSQL schema \(schema)")) {
      try PersistentContainer.destroyPersistentStore(at: url)
    }
    #expect(try schemaExists())
  }

  /// docs/postgresql.md's example, run against the tests' server.
  @Test func thePagesExampleRuns() async throws {
    let (url, schema) = try Self.storeURL()
    defer { Self.dropSchema(schema) }
    #expect(try await PostgreSQLPage.example(url: url) == ["Draft"])
    // "Migration": version 2 adds a required attribute with a default, through a plan.
    let migrated = try PostgreSQLPage.migrate(url: url)
    #expect(try migrated.newModelContext().fetch(FetchRequest<PostgreSQLPage.NoteV2>()).map(\.pinned) == [false])
    // "Errors of the server": a save that waits for the write lock past the busy timeout.
    var options = StoreOptions()
    options.busyTimeout = .milliseconds(100)
    let impatient = try PersistentContainer(
      name: "Notes", model: ManagedObjectModel(PostgreSQLPage.NoteV2.self), storeURL: url, options: options)
    let holder = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    try holder.execute(script: "BEGIN; SELECT 1 FROM \(schema)._history_counter WHERE id = 1 FOR UPDATE")
    #expect(try PostgreSQLPage.saveOrRollBack(impatient.newModelContext()) == "rolled back")
    try holder.execute(script: "ROLLBACK")
  }
}

// MARK: - docs/postgresql.md

enum PostgreSQLPage {
  final class Note: ManagedObject {
    @Attribute var title: String = ""
  }

  static func example(url: URL) async throws -> [String] {
    // url: postgresql://app@db.internal/notes?schema=notes
    let container = try PersistentContainer(name: "Notes", model: ManagedObjectModel(Note.self), storeURL: url)

    try await container.performBackgroundTask { context in
      let note = Note(context: context)
      note.title = "Draft"
      try context.save()
    }

    let titles = try await container.viewContext.perform { context in
      try context.fetch(FetchRequest<Note>(predicate: #Predicate { $0.title.starts(with: "Dr") })).map(\.title)
    }
    return titles
  }

  /// Version 2 of `Note`: a flag, which existing notes get as `false`.
  final class NoteV2: ManagedObject {
    override class var entityName: String { "Note" }
    @Attribute var title: String = ""
    @Attribute var pinned: Bool = false
  }

  static func migrate(url: URL) throws -> PersistentContainer {
    let plan = MigrationPlan(
      versions: [.init("1", try ManagedObjectModel(Note.self)), .init("2", try ManagedObjectModel(NoteV2.self))],
      stages: [.lightweight])
    let migrated = try PersistentContainer(name: "Notes", migrationPlan: plan, storeURL: url)
    return migrated
  }

  static func saveOrRollBack(_ context: ModelContext) throws -> String {
    NoteV2(context: context).title = "Later"
    do { try context.save() } catch let error as StoreServerError where error.isBusy { context.rollback() }
    let later = try context.count(for: FetchRequest<NoteV2>(predicate: #Predicate { $0.title == "Later" }))
    return later == 0 ? "rolled back" : "saved"
  }
}

/// An event with a reading, for comparisons with NaN.
final class Dial: ManagedObject {
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
  @Attribute var reading: Double = 0
}
