import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// `checkConsistency()` and `typedstore check` on a PostgreSQL store: the same invariants as on
/// a file, with the same words (a store file and a schema damaged alike report alike), and, in
/// place of SQLite's `PRAGMA integrity_check`, the history counter and the schema's indexes.
@Suite struct PostgreSQLConsistencyCheckTests {
  private static let model: ManagedObjectModel = {
    do { return try ManagedObjectModel(Crate.self, Item.self, Sticker.self) } catch { fatalError("\(error)") }
  }()

  /// A store at a new schema of the tests' server, and its schema's name.
  private static func postgreSQLContainer() throws -> (container: PersistentContainer, schema: String) {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let url = try #require(URL(string: server.url + (server.url.contains("?") ? "&" : "?") + "schema=\(schema)"))
    return (try PersistentContainer(name: "Graph", model: model, storeURL: url), schema)
  }

  /// A connection of the tests' server whose statements name the store's tables, as another
  /// tool's would.
  private static func admin(_ schema: String) throws -> PostgreSQLConnection {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    try connection.execute(script: "SET search_path TO \"\(schema)\"")
    return connection
  }

  private static func dropSchema(_ schema: String) {
    guard let server = try? PostgreSQLTestServer.server(), let admin = try? PostgreSQLConnection(url: server.url)
    else { return }
    _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE")
  }

  /// Crates of items with stickers (to-one keys, join rows, a cascade), a deleted item, and
  /// a consumer: the same transactions on either engine.
  private static func fill(_ container: PersistentContainer) async throws {
    try await container.performBackgroundTask { context in
      for label in ["same", "same", "other"] {
        let crate = Crate(context: context)
        crate.label = label
        for index in 0..<3 {
          let item = Item(context: context)
          item.name = "\(label) \(index)"
          crate.$items.insert(item)
          let sticker = Sticker(context: context)
          sticker.text = "sticker \(index)"
          item.$stickers.insert(sticker)
        }
      }
      try context.save()
    }
    try await container.performBackgroundTask { context in
      let items = try context.fetch(FetchRequest<Item>(sortBy: [SortDescriptor(\.name)]))
      context.delete(items[0])
      try context.save()
    }
    _ = try container.persistentStore.registerHistoryConsumer(name: "indexer", startingAt: .now)
  }

  /// What another tool does to a store behind TypedStore's back, in SQL both engines run.
  private static func damage(_ model: ManagedObjectModel) throws -> [String] {
    let join = try #require(model.schema.entities.flatMap { $0.relationships ?? [] }.compactMap(\.ownedJoinTable).first)
    return [
      // A row without history.
      "INSERT INTO \"Crate\" (pk, _version, _entity, label) SELECT 500, 1, code, 'no history' FROM _entities "
        + "WHERE name = 'Crate'",
      // A row deleted without history, whose links then name a missing row.
      "DELETE FROM \"Sticker\" WHERE pk = (SELECT min(pk) FROM \"Sticker\")",
      // A key naming a missing row.
      "UPDATE \"Item\" SET crate = 9999 WHERE pk = (SELECT max(pk) FROM \"Item\")",
      // A join row naming a missing row.
      "INSERT INTO \"\(join)\" (source, target, source_order, target_order) VALUES (8888, 1, 0, 0)",
      // A column the model does not know.
      "ALTER TABLE \"Crate\" ADD COLUMN stray integer",
    ]
  }

  @Test func aPostgreSQLStoreIsCheckedAsAFileIsAndDamageIsReportedInTheSameWords() async throws {
    let file = try PersistentContainer.makeTest(model: Self.model)
    let (server, schema) = try Self.postgreSQLContainer()
    defer { Self.dropSchema(schema) }
    try await Self.fill(file)
    try await Self.fill(server)
    let fileReport = try file.persistentStore.checkConsistency()
    let serverReport = try server.persistentStore.checkConsistency()
    #expect(fileReport.passed, "\(fileReport.problems)")
    #expect(serverReport.passed, "\(serverReport.problems)")
    #expect(serverReport.rowsChecked == fileReport.rowsChecked && serverReport.rowsChecked == 20)
    #expect(serverReport.transactionsChecked == fileReport.transactionsChecked)

    let sqlite = try SQLiteConnection(path: file.persistentStore.url.path, mode: .readWrite, busyTimeout: .seconds(5))
    let postgreSQL = try Self.admin(schema)
    for statement in try Self.damage(Self.model) {
      try sqlite.execute(statement)
      try postgreSQL.execute(script: statement)
    }
    let damagedFile = try file.persistentStore.checkConsistency().problems
    let damagedServer = try server.persistentStore.checkConsistency().problems
    #expect(damagedServer.map(\.description) == damagedFile.map(\.description))
    #expect(
      Set(damagedServer.map(\.kind)) == [.history, .relationships, .metadata], "\(damagedServer.map(\.description))")
    #expect(damagedServer.contains { $0.message.contains("Crate 500 has no change in history") })
    #expect(damagedServer.contains { $0.message.contains("stray") })
  }

  /// The counter from which the next transaction takes its number and its change rows their
  /// IDs, behind or ahead of the history; an index a failed `CREATE INDEX CONCURRENTLY` left
  /// invalid. Each is reported, and once put right the store passes again.
  @Test func theHistoryCounterAndTheSchemasIndexesAreChecked() async throws {
    let (container, schema) = try Self.postgreSQLContainer()
    defer { Self.dropSchema(schema) }
    try await Self.fill(container)
    let store = container.persistentStore
    let admin = try Self.admin(schema)
    let newest = try container.currentHistoryToken.transactionNumber
    func integrity() throws -> [String] {
      try store.checkConsistency().problems.filter { $0.kind == .integrity }.map(\.message)
    }
    #expect(try integrity().isEmpty)

    try admin.execute(script: "UPDATE _history_counter SET last = last - 1")
    #expect(
      try integrity() == [
        "the history counter is at transaction \(newest - 1), but the newest is \(newest): "
          + "the next would take a number already taken"
      ])
    try admin.execute(script: "UPDATE _history_counter SET last = last + 2")
    #expect(try integrity().first?.hasSuffix("numbers were skipped") == true)
    try admin.execute(script: "UPDATE _history_counter SET last = last - 1, last_change = last_change - 1")
    #expect(try integrity().first?.contains("the next would repeat IDs") == true)
    try admin.execute(script: "UPDATE _history_counter SET last_change = last_change + 1")
    #expect(try integrity().isEmpty)

    // Two crates are labelled "same": a unique index made concurrently fails and stays, invalid.
    #expect(throws: PostgreSQLError.self) {
      try admin.execute(script: "CREATE UNIQUE INDEX CONCURRENTLY stray_unique ON \"Crate\" (label)")
    }
    #expect(
      try integrity() == [
        "the index stray_unique is not valid: a CREATE INDEX CONCURRENTLY failed (drop it) or is still running"
      ])
    try admin.execute(script: "DROP INDEX stray_unique")
    #expect(try store.checkConsistency().passed)
  }

  /// `typedstore check --store postgresql://…`: "ok" and status 0 for a sound store; the
  /// problems and status 1 for a damaged one, as for a file.
  @Test func theToolChecksAPostgreSQLStore() async throws {
    let (container, schema) = try Self.postgreSQLContainer()
    defer { Self.dropSchema(schema) }
    try await Self.fill(container)
    let store = try PostgreSQLTestServer.server().tcpURL + "?schema=\(schema)"
    let sound = try typedstore(["check", "--store", store])
    #expect(sound.status == 0, "\(sound.stdout)\(sound.stderr)")
    #expect(sound.stdout.hasPrefix("ok: the history counter, the indexes, metadata, 20 rows"), "\(sound.stdout)")
    try Self.admin(schema).execute(script: "UPDATE \"Item\" SET crate = 9999")
    let damaged = try typedstore(["check", "--store", store, "--json"])
    #expect(damaged.status == 1, "\(damaged.stdout)\(damaged.stderr)")
    #expect(damaged.json["passed"] as? Bool == false)
    let problems = damaged.json["problems"] as? [[String: String]]
    #expect(problems?.map { $0["kind"] } == ["relationships"], "\(damaged.stdout)")
  }
}
