import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// The store's write path on PostgreSQL (`PostgreSQLStoreWriter`) in processes connecting over
/// loopback TCP, as hosts would: writers that take turns on the store's write lock, meet each
/// other's versions (each run retries conflicts, typically a few dozen), and one killed
/// mid-run. `TYPEDSTORE_SOAK=1` runs 8 writers of 200 saves and kills 3.
@Suite struct PostgreSQLWriterProcessTests {
  /// Writes the tally, the event of key 1 that every writer adds one to; returns the store's
  /// identifier.
  private static func storeWithTally(schema: String, server: PostgreSQLTestServer.Server) throws -> UUID {
    let model = try ManagedObjectModel(Event.self)
    let identifier = try PostgreSQLStoreTables(schema: schema, model: model).open(
      on: PostgreSQLConnection(url: server.url)
    ).identifier
    guard let url = URL(string: server.url), let event = model.entity(named: "Event") else {
      throw PostgreSQLError(kind: .statement, message: "no URL or no Event")
    }
    let store = PersistentStore(onAnotherEngineAt: url, identifier: identifier, model: model)
    let writer = try PostgreSQLStoreWriter(url: server.url, schema: schema, store: store)
    var changes = RowWrites()
    let values: [PrimitiveValue] = event.storedAttributes.map { $0.name == "source" ? .text("tally") : .integer(0) }
    changes.inserts = [RowWrites.Insert(entityIndex: event.index, primaryKey: nil, values: values)]
    let (applied, recorded) = try writer.write(changes, info: TransactionInfo(author: "tests"))
    #expect(applied.insertedKeys == [1] && recorded?.number == 1)
    return identifier
  }

  @Test func writerProcessesTakeTurnsAndAKilledOneLeavesNoRowWithoutHistory() async throws {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let identifier = try Self.storeWithTally(schema: schema, server: server)
    let connection = try PostgreSQLConnection(url: server.url)
    try connection.use(schema: schema)
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"
    let count = soak ? 200 : 15
    let authors = soak ? ["a", "b", "c", "d", "e", "f", "g", "h"] : ["a", "b", "c"]
    func writer(_ author: String, _ count: Int) throws -> SpawnedProcess {
      try SpawnedProcess(
        builtProduct("typedstore-test-writer"),
        ["pg-save", server.tcpURL, schema, identifier.uuidString, author, String(count)])
    }
    let writers = try authors.map { try writer($0, count) }
    for round in 1...(soak ? 3 : 1) {
      let doomed = try writer("doomed", 100_000)
      #expect(doomed.waitForLine("saved \(round * 5)"), "\(doomed.transcript.all.joined())")
      doomed.kill()  // mid-transaction or between two, while the others write
    }
    let outputs = try await offThePool { writers.map { $0.finish() } }
    for (output, writer) in zip(outputs, writers) {
      #expect(output.contains("saved \(count)\n") && writer.process.terminationStatus == 0, "\(output)")
    }

    // Every commit is one transaction of history: numbers dense and in order, each with its
    // own contiguous range of change rows, and every change row in its transaction's range.
    let history = try HistoryReader.fetch(
      HistoryRequest(), storeIdentifier: identifier, model: ManagedObjectModel(Event.self), connection: connection)
    #expect(history.map(\.transactionNumber) == Array(1...Int64(history.count)))
    let ranges = try connection.execute(
      "SELECT first_change, last_change FROM _history_transaction ORDER BY number"
    ).rows.map { (Int64($0[0] ?? "") ?? 0, Int64($0[1] ?? "") ?? 0) }
    #expect(ranges.first?.0 == 1)
    #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $1.0 == $0.1 + 1 } && ranges.allSatisfy { $0.0 <= $0.1 })
    let strays = try connection.execute(
      """
      SELECT count(*) FROM _history_change c JOIN _history_transaction t ON t.number = c.transaction_number
      WHERE c.id NOT BETWEEN t.first_change AND t.last_change
      """)
    #expect(strays.rows.first?.first == "0")
    let counter = try connection.execute("SELECT last, last_change FROM _history_counter")
    #expect(counter.rows.first == [String(history.count), ranges.last.map { String($0.1) }])

    // Each save inserted its event and added one to the tally, or did neither: the tally is
    // the number of events, and the history holds exactly the rows there are.
    let events = try connection.execute("SELECT pk, source FROM \"Event\" WHERE pk > 1 ORDER BY pk").rows
    let tally = try connection.execute("SELECT sequence FROM \"Event\" WHERE pk = 1").rows.first?.first ?? nil
    #expect(tally == String(events.count))
    let inserted = history.dropFirst().flatMap(\.changes).filter { $0.changeType == .insert }
    #expect(inserted.compactMap(\.objectID.primaryKey) == events.compactMap { Int64($0[0] ?? "") })
    #expect(
      history.dropFirst().allSatisfy { transaction in
        transaction.changes.map { "\($0.changeType) \($0.updatedProperties)" } == [
          "update [\"sequence\"]", "insert []",
        ]
      })
    for author in authors {
      #expect(events.filter { $0[1] == author }.count == count)
      #expect(history.filter { $0.author == author }.count == count)
    }
    #expect(history.contains { $0.author == "doomed" })
  }

  @Test func aWriterThatCannotHaveTheWriteLockInTimeGivesUpAndWritesNothing() throws {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let identifier = try Self.storeWithTally(schema: schema, server: server)
    let holder = try PostgreSQLConnection(url: server.url)
    try holder.use(schema: schema)
    defer { _ = try? holder.execute("DROP SCHEMA \(schema) CASCADE") }
    let model = try ManagedObjectModel(Event.self)
    let store = PersistentStore(
      onAnotherEngineAt: try #require(URL(string: server.url)), identifier: identifier, model: model)
    let writer = try PostgreSQLStoreWriter(
      url: server.url, schema: schema, store: store, lockTimeout: .milliseconds(200))
    let event = try #require(model.entity(named: "Event"))
    var changes = RowWrites()
    changes.inserts = [
      RowWrites.Insert(
        entityIndex: event.index, primaryKey: nil,
        values: event.storedAttributes.map { $0.name == "source" ? .text("late") : .integer(7) })
    ]
    try holder.execute("BEGIN")
    try holder.execute("SELECT 1 FROM _history_counter WHERE id = 1 FOR UPDATE")  // another writer's lock
    let start = ContinuousClock.now
    #expect {
      _ = try writer.write(changes, info: TransactionInfo(author: "late"))
    } throws: { ($0 as? PostgreSQLError)?.sqlState == "55P03" }
    #expect(ContinuousClock.now - start < .seconds(5))
    try holder.execute("COMMIT")
    #expect(try holder.execute("SELECT count(*) FROM \"Event\"").rows == [["1"]])
    let (applied, recorded) = try writer.write(changes, info: TransactionInfo(author: "late"))
    #expect(applied.insertedKeys == [2] && recorded?.number == 2)
  }

  /// One event's save, by `writer`.
  private static func saveEvent(_ writer: PostgreSQLStoreWriter, _ sequence: Int64) throws -> Int64? {
    let event = try #require(writer.store.model.entity(named: "Event"))
    var changes = RowWrites()
    let values: [PrimitiveValue] = event.storedAttributes.map {
      $0.name == "source" ? .text("restart") : .integer(sequence)
    }
    changes.inserts = [RowWrites.Insert(entityIndex: event.index, primaryKey: nil, values: values)]
    return try writer.write(changes, info: TransactionInfo(author: "restart")).1?.number
  }

  @Test func aWriterSurvivesTheServerStoppingAndStartingAgain() throws {
    let server = try PostgreSQLTestServer.ownServer()
    let schema = PostgreSQLTestServer.schemaName()
    let identifier = try Self.storeWithTally(schema: schema, server: server)
    let model = try ManagedObjectModel(Event.self)
    let store = PersistentStore(
      onAnotherEngineAt: try #require(URL(string: server.url)), identifier: identifier, model: model)
    let writer = try PostgreSQLStoreWriter(url: server.tcpURL, schema: schema, store: store)
    #expect(try Self.saveEvent(writer, 1) == 2)
    try PostgreSQLTestServer.stop(server)
    // While it is down, each write throws the connection's typed error and writes nothing.
    for sequence: Int64 in [2, 3] {
      #expect {
        _ = try Self.saveEvent(writer, sequence)
      } throws: { ($0 as? PostgreSQLError)?.kind == .connection }
    }
    try PostgreSQLTestServer.restart(server)
    // The next write connects again, and history goes on with no gap.
    #expect(try Self.saveEvent(writer, 4) == 3)
    let connection = try PostgreSQLConnection(url: server.url)
    try connection.use(schema: schema)
    let history = try HistoryReader.fetch(
      HistoryRequest(), storeIdentifier: identifier, model: store.model, connection: connection)
    #expect(history.map(\.transactionNumber) == [1, 2, 3])
    #expect(try connection.execute("SELECT sequence FROM \"Event\" ORDER BY pk").rows == [["0"], ["1"], ["4"]])
  }
}
