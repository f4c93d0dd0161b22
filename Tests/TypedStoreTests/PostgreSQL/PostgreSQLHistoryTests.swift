import Foundation
import Synchronization
import Testing

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// The PostgreSQL engine's first parts, against a real server (`PostgreSQLTestServer`): the
/// libpq connection, and history numbers that are dense and in commit order.
@Suite struct PostgreSQLConnectionTests {
  @Test func statementsBindTheirValuesAndErrorsAreTyped() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    try connection.execute("CREATE SCHEMA \(schema)")
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    try connection.execute("CREATE TABLE \(schema).note (pk bigint PRIMARY KEY, title text)")
    let quote = "Robert'); DROP TABLE note; -- é \u{1F469}"
    try connection.execute("INSERT INTO \(schema).note VALUES ($1::bigint, $2), (2, $3)", ["1", quote, nil])
    let rows = try connection.execute("SELECT pk, title FROM \(schema).note ORDER BY pk")
    #expect(rows.columns == ["pk", "title"])
    #expect(rows.rows == [["1", quote], ["2", nil]])
    #expect(rows[0, "title"] == quote)
    let duplicate = #expect(throws: PostgreSQLError.self) {
      try connection.execute("INSERT INTO \(schema).note VALUES (1, 'again')")
    }
    #expect(duplicate?.kind == .statement && duplicate?.sqlState == "23505")
    // A failed statement leaves the connection usable; a rolled-back transaction writes nothing.
    #expect(throws: PostgreSQLError.self) {
      try connection.transaction {
        try connection.execute("INSERT INTO \(schema).note VALUES (3, 'three')")
        try connection.execute("SELECT 1 / 0")
      }
    }
    #expect(try connection.execute("SELECT count(*) FROM \(schema).note").rows == [["2"]])
    // A body that swallows a failed statement's error does not commit the aborted transaction.
    let aborted = #expect(throws: PostgreSQLError.self) {
      try connection.transaction {
        try connection.execute("INSERT INTO \(schema).note VALUES (4, 'four')")
        _ = try? connection.execute("SELECT 1 / 0")
      }
    }
    #expect(aborted?.sqlState == "25P02")
    #expect(try connection.execute("SELECT count(*) FROM \(schema).note").rows == [["2"]])
    #expect(throws: PostgreSQLError.self) { try connection.execute("SELECT $1::text", ["a\u{0}b"]) }
  }

  @Test func aServerThatIsNotThereIsAConnectionError() {
    let error = #expect(throws: PostgreSQLError.self) {
      _ = try PostgreSQLConnection(url: "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2")
    }
    #expect(error?.kind == .connection)
  }

  @Test func notificationsArriveAtCommitInCommitOrder() throws {
    let server = try PostgreSQLTestServer.server()
    let listener = try PostgreSQLConnection(url: server.url)
    let writer = try PostgreSQLConnection(url: server.tcpURL)  // as another host would
    let channel = "typedstore_" + PostgreSQLTestServer.schemaName()
    try listener.listen(channel)
    try writer.execute("BEGIN")
    try writer.execute("SELECT pg_notify($1, 'first')", [channel])
    #expect(try listener.notifications(waitingUpTo: .milliseconds(200)).isEmpty)  // not committed
    try writer.execute("COMMIT")
    try writer.execute("SELECT pg_notify($1, 'second')", [channel])
    var received: [PostgreSQLNotification] = []
    let deadline = ContinuousClock.now + .seconds(10)
    while received.count < 2 && ContinuousClock.now < deadline {
      received += try listener.notifications(waitingUpTo: .seconds(1))
    }
    #expect(received.map(\.payload) == ["first", "second"])
    #expect(received.allSatisfy { $0.channel == channel && $0.processID == writer.processID })
  }
}

@Suite struct PostgreSQLHistoryTests {
  /// A new store's history, in a schema of its own.
  struct Store {
    var history: PostgreSQLHistory
    var server: PostgreSQLTestServer.Server
    var identifier: UUID

    /// The transactions after `number`, at most `limit`, as the store's history reader
    /// (`HistoryReader`, shared with SQLite) reads them on `connection`.
    func transactions(after number: Int64, limit: Int? = nil, on connection: PostgreSQLConnection) throws
      -> [HistoryTransaction]
    {
      try connection.use(schema: history.schema)
      var request = HistoryRequest(after: HistoryToken(storeIdentifier: identifier, transactionNumber: number))
      request.transactionLimit = limit
      return try HistoryReader.fetch(request, storeIdentifier: identifier, model: notesModel, connection: connection)
    }
  }

  static func store() throws -> Store {
    let server = try PostgreSQLTestServer.server()
    let tables = try PostgreSQLStoreTables(schema: PostgreSQLTestServer.schemaName(), model: notesModel)
    let opened = try tables.open(on: PostgreSQLConnection(url: server.url))
    return Store(history: tables.history, server: server, identifier: opened.identifier)
  }

  /// Whatever the session's settings say (a role, a pooler, the URL's options), numbers
  /// and bytes are read back exactly and text as UTF-8.
  @Test func sessionSettingsCannotChangeTheValuesRead() throws {
    let server = try PostgreSQLTestServer.server()
    let connection = try PostgreSQLConnection(
      url: server.url + "&options=-c%20extra_float_digits%3D-15%20-c%20bytea_output%3Descape"
        + "&client_encoding=LATIN1")
    let statement = try connection.statement("SELECT ?::double precision, ?::real, ?::bytea, ?::text")
    try statement.bind(0.1 + 0.2, at: 1)
    try statement.bind(.real(Double(Float(0.1))), at: 2)
    try statement.bind(Data([0, 255, 92]), at: 3)
    try statement.bind("\u{1F469}\u{200D}\u{1F52C} é", at: 4)
    #expect(try statement.step())
    #expect(try statement.value(0) == .real(0.1 + 0.2))
    #expect(try statement.value(1) == .real(Double(Float(0.1))))
    #expect(try statement.value(2) == .blob(Data([0, 255, 92])))
    #expect(try statement.value(3) == .text("\u{1F469}\u{200D}\u{1F52C} é"))
  }

  @Test func aTransactionIsRecordedWithItsChanges() throws {
    let store = try Self.store()
    let history = store.history
    let connection = try PostgreSQLConnection(url: store.server.url)
    let changes: [PostgreSQLHistory.Change] = [
      .init(kind: .insert, entity: "Note", primaryKeys: [1, 2, 3]),
      .init(kind: .update, entity: "Folder", primaryKey: 7, changedAttributes: ["name", "address.city"]),
      .init(kind: .delete, entity: "Note \"quoted\" \\", primaryKeys: [9, 4]),
    ]
    let number = try connection.transaction {
      try history.record(changes, author: "importer", contextName: nil, on: connection)
    }
    #expect(number == 1)
    let read = try store.transactions(after: 0, on: connection)
    #expect(read.count == 1)
    #expect(
      read.first?.changes.map {
        "\($0.changeType) \($0.objectID.entityName) \($0.objectID.primaryKey ?? 0) \($0.index)"
      }
        == [
          "insert Note 1 0", "insert Note 2 1", "insert Note 3 2", "update Folder 7 3",
          "delete Note \"quoted\" \\ 9 4", "delete Note \"quoted\" \\ 4 5",
        ])
    #expect(read.first?.changes[3].updatedProperties == ["name", "address.city"])
    #expect(read.first?.author == "importer" && read.first?.contextName == nil)
    #expect(read.first?.processID == getpid())
    #expect(abs(read.first?.timestamp.timeIntervalSinceNow ?? 100) < 60)
    #expect(try history.lastNumber(on: connection) == 1)
    #expect(throws: PostgreSQLError.self) { try PostgreSQLHistory(schema: "bad\"; DROP") }
  }

  /// A transaction with no change rows (a migration's marker) takes the empty range where the
  /// next change would go, as on SQLite: a page that ends or begins with one still reads every
  /// change of the others.
  @Test func transactionsWithoutChangesKeepThePagesRangesWhole() throws {
    let store = try Self.store()
    let connection = try PostgreSQLConnection(url: store.server.url)
    for changes: [PostgreSQLHistory.Change] in [
      [], [.init(kind: .insert, entity: "Note", primaryKeys: [1, 2])], [],
      [.init(kind: .update, entity: "Note", primaryKey: 2, changedAttributes: ["title"])], [],
    ] {
      try connection.transaction { try store.history.record(changes, author: nil, contextName: nil, on: connection) }
    }
    func keys(after number: Int64, limit: Int?) throws -> [[Int64]] {
      try store.transactions(after: number, limit: limit, on: connection).map {
        $0.changes.compactMap(\.objectID.primaryKey)
      }
    }
    #expect(try keys(after: 0, limit: nil) == [[], [1, 2], [], [2], []])
    #expect(try keys(after: 0, limit: 3) == [[], [1, 2], []], "a page that ends with an empty transaction")
    #expect(try keys(after: 2, limit: 2) == [[], [2]], "a page that begins with one")
    let ranges = try connection.execute(
      "SELECT first_change, last_change FROM \(store.history.schema)._history_transaction ORDER BY number")
    #expect(
      ranges.rows == [["1", "0"], ["1", "1"], ["2", "1"], ["2", "2"], ["3", "2"]], "keys 1 and 2: one row, a run")
  }

  /// The outbox gap, made to happen: A takes its number and holds; B, which starts later,
  /// cannot take the next until A commits (with a sequence it could, and commit first, and a
  /// reader who saw B would never see A). A reader in between sees neither; after both, it
  /// sees A then B, once each.
  ///
  /// The waits run on threads of their own (`offThePool`), with `Thread.sleep`: a task sleeping
  /// on the shared pool may be resumed only after its deadline while the rest of the suite keeps
  /// the pool's two threads busy.
  @Test func aTransactionThatCommitsLateIsNeverSkipped() async throws {
    let store = try Self.store()
    let (history, server) = (store.history, store.server)
    let a = try PostgreSQLConnection(url: server.url)
    try a.execute("BEGIN")
    let first = try history.record(
      [.init(kind: .insert, entity: "Note", primaryKey: 1)], author: "A", contextName: nil, on: a)
    let bDone = Shared(false)
    let bProcess = Shared<Int32>(0)
    let failures = Shared<[String]>([])
    let b = Thread {
      do {
        let connection = try PostgreSQLConnection(url: server.url)
        bProcess.value = connection.processID
        _ = try connection.transaction {
          try history.record(
            [.init(kind: .insert, entity: "Note", primaryKey: 2)], author: "B", contextName: nil, on: connection)
        }
      } catch {
        failures.update { $0.append("B: \(error)") }
      }
      bDone.value = true
    }
    b.start()
    // B waits for A's lock on the counter row (the server's lock table says so: a lock of B's
    // not granted), and has not committed.
    let serverURL = server.url
    let waiting = try await offThePool { () throws -> Bool in
      let watcher = try PostgreSQLConnection(url: serverURL)
      let deadline = ContinuousClock.now + .seconds(60)  // both cores may be busy
      while true {
        let pid = bProcess.value
        if pid != 0 {
          let rows = try watcher.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = $1::integer AND NOT granted", [String(pid)])
          if rows.rows.first?.first != "0" { return true }
        }
        if bDone.value || ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.01)
      }
    }
    #expect(waiting, "B (server process \(bProcess.value)) never waited for A's number")
    let reader = try PostgreSQLConnection(url: server.url)
    let bCommitted = bDone.value
    #expect(!bCommitted)
    #expect(try store.transactions(after: 0, on: reader).isEmpty)  // neither committed
    try a.execute("COMMIT")
    try await offThePool {
      let deadline = ContinuousClock.now + .seconds(30)
      while !bDone.value && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }
    #expect(failures.value.isEmpty, "\(failures.value)")
    let read = try store.transactions(after: 0, on: reader)
    #expect(read.map(\.transactionNumber) == [first, first + 1])
    #expect(read.map(\.author) == ["A", "B"])
  }

  /// Writers on several connections record transactions while a reader follows "after the
  /// last number it saw": it sees every number once, each after the one before, none skipped.
  @Test func aReaderFollowingConcurrentWritersMissesNothing() async throws {
    let store = try Self.store()
    let (history, server) = (store.history, store.server)
    let writers = 4
    let perWriter = 40
    let finished = Shared(0)
    let failures = Shared<[String]>([])
    for writer in 0..<writers {
      Thread {
        do {
          let connection = try PostgreSQLConnection(url: writer % 2 == 0 ? server.url : server.tcpURL)
          for index in 0..<perWriter {
            _ = try connection.transaction {
              try connection.execute("SELECT pg_sleep(0.001 * random())")  // other work first
              try history.record(
                [.init(kind: .insert, entity: "Note", primaryKey: Int64(writer * 1000 + index))],
                author: "w\(writer)", contextName: nil, on: connection)
            }
          }
        } catch {
          failures.update { $0.append("writer \(writer): \(error)") }
        }
        finished.update { $0 += 1 }
      }.start()
    }
    // The reader follows on a thread of its own: a wait on the shared pool, which the whole
    // suite's synchronous tests keep busy, was once not resumed before the deadline, and the
    // test read nothing at all.
    let seen = try await offThePool {
      let reader = try PostgreSQLConnection(url: server.url)
      var seen: [Int64] = []
      let deadline = ContinuousClock.now + .seconds(60)
      while ContinuousClock.now < deadline {
        let done = finished.value == writers
        let read = try store.transactions(after: seen.last ?? 0, limit: 7, on: reader).map(\.transactionNumber)
        seen += read
        if done && read.isEmpty { break }  // every writer ended, and nothing is left to read
        if read.isEmpty { Thread.sleep(forTimeInterval: 0.002) }
      }
      return seen
    }
    #expect(failures.value.isEmpty, "\(failures.value)")
    #expect(seen == Array(1...Int64(writers * perWriter)))
  }
}

/// A value threads share, behind a lock.
final class Shared<Value: Sendable>: Sendable {
  private let storage: Mutex<Value>
  init(_ value: Value) { storage = Mutex(value) }
  var value: Value {
    get { storage.withLock { $0 } }
    set { storage.withLock { $0 = newValue } }
  }
  func update(_ change: (inout Value) -> Void) { storage.withLock { change(&$0) } }
}
