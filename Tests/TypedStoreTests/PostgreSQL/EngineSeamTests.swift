import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// The store's SQL written once and run by both engines through the seam
/// (`Engine/Database.swift`): the same operations give the same answers on an SQLite store
/// file and on a PostgreSQL store's schema.
@Suite struct EngineSeamTests {
  /// One consumer as the scenario compares it.
  private struct Seen: Equatable, CustomStringConvertible {
    var name: String
    var number: Int64
    var lease: Duration
    var failed: Int64?

    var description: String { "\(name)@\(number) lease \(lease) failed \(failed.map(String.init) ?? "-")" }
  }

  /// Consumers written, advanced, failed and removed through `HistoryConsumers`, on
  /// `connection`; returns what was read at each step.
  private static func consumerScenario<Connection: DatabaseConnection>(
    store: UUID, on connection: Connection, inTransaction: (() throws -> Void) throws -> Void
  ) throws -> [[Seen]] {
    var steps: [[Seen]] = []
    func read() throws {
      steps.append(
        try HistoryConsumers.all(storeIdentifier: store, connection: connection).map {
          Seen(
            name: $0.name, number: $0.checkpoint.transactionNumber, lease: $0.lease,
            failed: $0.failure?.transactionNumber)
        })
    }
    try read()  // none yet
    try inTransaction {
      try HistoryConsumers.write(
        name: "indexer", storeIdentifier: store, number: 3, lease: .seconds(60), advanced: true, connection: connection)
      try HistoryConsumers.write(
        name: "mailer", storeIdentifier: store, number: 5, lease: .seconds(30), advanced: true, connection: connection)
    }
    try read()
    try inTransaction {
      try HistoryConsumers.advance(name: "indexer", from: 4, to: 7, lease: .seconds(90), connection: connection)
    }
    #expect(throws: HistoryError.consumerMovedOn(consumer: "indexer", transactionNumber: 6)) {
      try inTransaction {
        try HistoryConsumers.advance(name: "indexer", from: 6, to: 8, lease: .seconds(90), connection: connection)
      }
    }
    let failure = HistoryConsumer.Failure(
      message: "the mail server said no", transactionNumber: 6, date: Date(timeIntervalSinceReferenceDate: 1000))
    try inTransaction { try HistoryConsumers.recordFailure(failure, name: "mailer", connection: connection) }
    try inTransaction { try HistoryConsumers.recordFailure(failure, name: "mailer", connection: connection) }
    try read()
    try inTransaction {
      // Seen again without moving: the failure stays; then past it: the failure goes.
      try HistoryConsumers.write(
        name: "mailer", storeIdentifier: store, number: 5, lease: .seconds(30), advanced: false, connection: connection)
    }
    try read()
    try inTransaction {
      try HistoryConsumers.write(
        name: "mailer", storeIdentifier: store, number: 6, lease: .seconds(30), advanced: true, connection: connection)
      #expect(try HistoryConsumers.remove(name: "indexer", connection: connection))
      #expect(try !HistoryConsumers.remove(name: "nobody", connection: connection))
    }
    try read()
    return steps
  }

  @Test func consumersReadWriteAdvanceFailAndGoAlikeOnBothEngines() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let store = container.persistentStore.identifier
    let onSQLite = try container.persistentStore.writer.withConnection { connection in
      try Self.consumerScenario(store: store, on: connection) { body in
        try connection.writeTransaction(deadline: .now + .seconds(5)) { try body() }
      }
    }
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    _ = try PostgreSQLStoreTables(schema: schema, model: notesModel).open(on: connection)
    try connection.use(schema: schema)
    let onPostgreSQL = try Self.consumerScenario(store: store, on: connection) { body in
      try connection.transaction { try body() }
    }
    #expect(onPostgreSQL == onSQLite)
    #expect(
      onSQLite.map { $0.map(\.description) } == [
        [],
        ["indexer@3 lease 60.0 seconds failed -", "mailer@5 lease 30.0 seconds failed -"],
        ["indexer@7 lease 90.0 seconds failed -", "mailer@5 lease 30.0 seconds failed 6"],
        ["indexer@7 lease 90.0 seconds failed -", "mailer@5 lease 30.0 seconds failed 6"],
        ["mailer@6 lease 30.0 seconds failed -"],
      ])
  }

  @Test func sqlitesParametersAreRewrittenAsPostgreSQLsOutsideQuotes() {
    #expect(PostgreSQLConnection.parameters(in: "SELECT ?, ?") == "SELECT $1, $2")
    #expect(PostgreSQLConnection.parameters(in: "VALUES (?1, ?2, ?1, ?)") == "VALUES ($1, $2, $1, $3)")
    #expect(
      PostgreSQLConnection.parameters(in: #"SELECT '?', "a?b", 'it''s ?', ? FROM t WHERE x = ?12"#)
        == #"SELECT '?', "a?b", 'it''s ?', $1 FROM t WHERE x = $12"#)
    #expect(PostgreSQLConnection.parameters(in: "SELECT $1::bigint") == "SELECT $1::bigint")
  }
}
