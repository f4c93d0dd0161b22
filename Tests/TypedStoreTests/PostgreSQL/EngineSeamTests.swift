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

  /// A transaction as the comparison sees it: everything but when and by which process.
  private static func summary(_ transaction: HistoryTransaction) -> String {
    "\(transaction.transactionNumber) \(transaction.author ?? "-") \(transaction.contextName ?? "-"): "
      + transaction.changes.map {
        "\($0.changeType) \($0.objectID.entityName) \($0.objectID.primaryKey ?? 0) \($0.updatedProperties) \($0.index)"
      }.joined(separator: ", ")
  }

  /// `transaction`'s changes as change rows: runs of one kind, entity and attributes.
  private static func changeRows(_ transaction: HistoryTransaction) -> [PostgreSQLHistory.Change] {
    var rows: [PostgreSQLHistory.Change] = []
    for change in transaction.changes {
      let key = change.objectID.primaryKey ?? 0
      if let last = rows.last, last.kind == change.changeType, last.entity == change.objectID.entityName,
        last.changedAttributes == change.updatedProperties
      {
        rows[rows.count - 1].primaryKeys.append(key)
      } else {
        rows.append(
          .init(
            kind: change.changeType, entity: change.objectID.entityName, primaryKeys: [key],
            changedAttributes: change.updatedProperties))
      }
    }
    return rows
  }

  /// Twin stores: an SQLite store with six transactions (three importer saves, an editor's
  /// save of updates and an insert, a deletion, another importer save), and a PostgreSQL store
  /// with the same history, recorded change row by change row; the same store UUID.
  private struct Twins {
    var container: PersistentContainer
    var connection: PostgreSQLConnection
    var schema: String
    var store: UUID { container.persistentStore.identifier }
  }

  private static func twins(function: String = #function) async throws -> Twins {
    let container = try PersistentContainer.makeTest(model: notesModel, function: function)
    try await save(["one", "two", "three"], in: container, author: "importer")
    try await container.performBackgroundTask { context in
      context.transactionAuthor = "editor"
      let notes = try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
      notes[0].title = "uno"
      notes[2].status = .published
      Folder(context: context).name = "inbox"
      try context.save()
    }
    try await container.performBackgroundTask { context in
      let folders = try context.fetch(FetchRequest<Folder>())
      for folder in folders { context.delete(folder) }
      try context.save()
    }
    try await save(["four"], in: container, author: "importer")
    let all = try container.persistentStore.fetchHistory(HistoryRequest())
    #expect(all.count == 6)  // one per title saved, the editor's, the deletion

    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    let tables = try PostgreSQLStoreTables(schema: schema, model: notesModel)
    _ = try tables.open(on: connection)
    for transaction in all {
      try connection.transaction {
        try tables.history.record(
          Self.changeRows(transaction), author: transaction.author, contextName: transaction.contextName,
          on: connection)
      }
    }
    try connection.use(schema: schema)
    return Twins(container: container, connection: connection, schema: schema)
  }

  @Test func historyIsReadFilteredAndPrunedAlikeOnBothEngines() async throws {
    let twins = try await Self.twins()
    let (connection, schema, store) = (twins.connection, twins.schema, twins.store)
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    let sqlite = twins.container.persistentStore

    func token(_ number: Int64) -> HistoryToken { HistoryToken(storeIdentifier: store, transactionNumber: number) }
    var requests: [(String, HistoryRequest)] = [
      ("all", HistoryRequest()), ("after 1", HistoryRequest(after: token(1))),
    ]
    requests.append(("1 through 3", HistoryRequest(after: token(1), through: token(3))))
    requests.append(("after 2", HistoryRequest(after: token(2))))
    var request = HistoryRequest()
    request.authors = ["importer"]
    requests.append(("by the importer", request))
    request = HistoryRequest()
    request.excludedAuthors = ["importer"]
    requests.append(("not by the importer", request))
    request = HistoryRequest()
    request.entities = [Folder.self]
    requests.append(("of folders", request))
    request = HistoryRequest()
    request.entityNames = ["Note"]
    request.transactionLimit = 2
    requests.append(("two of notes", request))
    func read<Connection: DatabaseConnection>(on connection: Connection) -> [String] {
      requests.map { name, request in
        do {
          let read = try HistoryReader.fetch(request, storeIdentifier: store, model: notesModel, connection: connection)
          return "\(name): " + read.map(Self.summary).joined(separator: " | ")
        } catch {
          return "\(name): \(error)"
        }
      }
    }
    let reader = try sqlite.makeReadConnection()
    let onSQLite = read(on: reader)
    let onPostgreSQL = read(on: connection)
    #expect(onPostgreSQL == onSQLite)
    #expect(onSQLite.allSatisfy { $0.contains(" | ") }, "every request selects several transactions: \(onSQLite)")

    // Pruned before 3 on both: the horizon moves alike, and an old token is refused alike.
    _ = try sqlite.writer.withConnection { connection in
      try connection.writeTransaction(deadline: .now + .seconds(5)) {
        try HistoryReader.deleteHistory(before: 3, connection: connection)
      }
    }
    let deleted = try connection.transaction { try HistoryReader.deleteHistory(before: 3, connection: connection) }
    #expect(deleted == 2)
    let afterPruning = read(on: connection)
    #expect(afterPruning == read(on: reader))
    #expect(afterPruning[0].hasPrefix("all: the history asked for was deleted"), "\(afterPruning[0])")
    #expect(afterPruning[2].hasPrefix("1 through 3: the history asked for was deleted"), "\(afterPruning[2])")
    #expect(afterPruning[1].hasPrefix("after 1: the history asked for was deleted"), "\(afterPruning[1])")
    #expect(afterPruning[3] == onSQLite[3] && afterPruning[3].hasPrefix("after 2: 3 "), "\(afterPruning[3])")
  }

  /// Prunes by `policy` on each engine, in a write transaction (a dry run in a read one); the
  /// report, and the numbers of the transactions kept after it.
  private static func prune<Connection: DatabaseConnection>(
    _ policy: HistoryPruningPolicy, includingStale: Bool, authors: Set<String>? = nil, dryRun: Bool,
    twins: Twins, on connection: Connection,
    inTransaction: (() throws -> HistoryPruningReport) throws
      -> HistoryPruningReport
  ) throws -> (HistoryPruningReport, [Int64]) {
    var archived: [Int64] = []
    let report = try inTransaction {
      try PersistentStore.pruneHistory(
        policy, includingStale: includingStale, authors: authors, dryRun: dryRun,
        archive: { archived.append($0.transactionNumber) }, willDelete: nil, store: twins.store, model: notesModel,
        connection: connection)
    }
    #expect(archived.count == report.deletedTransactions)
    var request = HistoryRequest(after: report.horizon)
    request.transactionLimit = 100
    let kept = try HistoryReader.fetch(request, storeIdentifier: twins.store, model: notesModel, connection: connection)
    return (report, kept.map(\.transactionNumber))
  }

  /// Consumers hold pruning back alike on both engines: a live one's unread transactions are
  /// never deleted, a stale one's only when asked, and a prune limited to some authors stops
  /// at the first transaction of another.
  @Test func pruningStopsAtTheConsumersAlikeOnBothEngines() async throws {
    let twins = try await Self.twins()
    let pg = twins.connection
    defer { _ = try? pg.execute("DROP SCHEMA \(twins.schema) CASCADE") }
    let sqlite = try twins.container.persistentStore.makeReadConnection(queryOnly: false)
    let consumers: [(String, Int64, Duration)] = [
      ("reader", 3, .seconds(60)), ("fast", 6, .seconds(60)), ("gone", 1, .milliseconds(1)),
    ]
    for (name, number, lease) in consumers {
      try sqlite.writeTransaction(deadline: .now + .seconds(5)) {
        try HistoryConsumers.write(
          name: name, storeIdentifier: twins.store, number: number, lease: lease, advanced: true, connection: sqlite)
      }
      try pg.transaction {
        try HistoryConsumers.write(
          name: name, storeIdentifier: twins.store, number: number, lease: lease, advanced: true, connection: pg)
      }
    }
    try await Task.sleep(for: .milliseconds(20))  // "gone" is stale
    let steps: [(HistoryPruningPolicy, Bool, Set<String>?, Bool)] = [
      (.keepLast(1), false, nil, true),  // a dry run: the stale consumer holds it at 1
      (.keepLast(1), true, ["editor"], false),  // the editor's only: the importer's 1 comes first
      (.keepLast(1), true, nil, false),  // past the stale one, up to the reader's checkpoint, 3
      (.consumed, true, nil, false),  // as far as the live consumers read: nothing more
    ]
    var reports: [String] = []
    for (policy, includingStale, authors, dryRun) in steps {
      let onSQLite = try Self.prune(
        policy, includingStale: includingStale, authors: authors, dryRun: dryRun, twins: twins, on: sqlite
      ) { body in
        dryRun ? try sqlite.readTransaction(body) : try sqlite.writeTransaction(deadline: .now + .seconds(5), body)
      }
      let onPostgreSQL = try Self.prune(
        policy, includingStale: includingStale, authors: authors, dryRun: dryRun, twins: twins, on: pg
      ) { body in dryRun ? try pg.readTransaction(body) : try pg.transaction(body) }
      #expect(onPostgreSQL.0 == onSQLite.0)
      #expect(onPostgreSQL.1 == onSQLite.1)
      let report = onSQLite.0
      reports.append(
        "\(report.deletedTransactions) deleted, horizon \(report.horizon.transactionNumber), held by "
          + "\(report.heldBackBy) \(report.heldBackByTransaction.map { "and \($0.transactionNumber)" } ?? "-"), "
          + "past stale \(report.prunedPastStale), kept \(onSQLite.1)")
    }
    #expect(
      reports == [
        "0 deleted, horizon 0, held by [\"gone\", \"reader\"] -, past stale [], kept [1, 2, 3, 4, 5, 6]",
        "0 deleted, horizon 0, held by [\"reader\"] and 1, past stale [], kept [1, 2, 3, 4, 5, 6]",
        "2 deleted, horizon 2, held by [\"reader\"] -, past stale [\"gone\"], kept [3, 4, 5, 6]",
        "0 deleted, horizon 2, held by [] -, past stale [\"gone\"], kept [3, 4, 5, 6]",
      ])
  }

  @Test func sqlitesParametersAreRewrittenAsPostgreSQLsOutsideQuotes() {
    #expect(PostgreSQLConnection.parameters(in: "SELECT ?, ?") == "SELECT $1, $2")
    #expect(PostgreSQLConnection.parameters(in: "VALUES (?1, ?2, ?1, ?)") == "VALUES ($1, $2, $1, $3)")
    #expect(
      PostgreSQLConnection.parameters(in: #"SELECT '?', "a?b", 'it''s ?', ? FROM t WHERE x = ?12"#)
        == #"SELECT '?', "a?b", 'it''s ?', $1 FROM t WHERE x = $12"#)
    #expect(PostgreSQLConnection.parameters(in: "SELECT $1::bigint") == "SELECT $1::bigint")
    #expect(PostgreSQLConnection.parameters(in: "SELECT $1, ?") == "SELECT $1, $2", "a $N written counts")
    #expect(
      PostgreSQLConnection.parameters(in: "SELECT ? -- don't ?\n, ? /* ? /* '? */ ? */ , ?")
        == "SELECT $1 -- don't ?\n, $2 /* ? /* '? */ ? */ , $3")
    #expect(
      PostgreSQLConnection.parameters(in: #"SELECT E'it\'s ?', e'\\', ?, $$ it's ? $$, $tag$ ? $tag$, ?"#)
        == #"SELECT E'it\'s ?', e'\\', $1, $$ it's ? $$, $tag$ ? $tag$, $2"#)
    #expect(PostgreSQLConnection.parameters(in: "SELECT 'é?', ?") == "SELECT 'é?', $1")
  }

  @Test func sqlWithCommentsAndEveryKindOfLiteralRunsWithItsParametersInPlace() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let statement = try connection.statement(
      """
      SELECT ?::text AS a, E'it\\'s ?' AS b, $$ ? $$ AS c, /* ? /* ? */ ? */ ?::bigint AS d -- ? '
      , ?1 || 'x' AS e
      """)
    try statement.bind("first", at: 1)
    try statement.bind(Int64(42), at: 2)
    #expect(try statement.step())
    let values = try (0..<5).map { try statement.value(Int32($0)) }
    #expect(values == [.text("first"), .text("it's ?"), .text(" ? "), .integer(42), .text("firstx")])
  }
}
