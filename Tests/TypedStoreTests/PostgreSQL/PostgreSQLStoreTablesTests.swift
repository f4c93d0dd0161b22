import Foundation
import ShopModel
import Testing

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// A store's tables on PostgreSQL, made from its model against a real server: the same layout
/// as an SQLite store, PostgreSQL's types, one creation among racing processes, and refusals
/// that change nothing.
@Suite struct PostgreSQLStoreTablesTests {
  private static func columns(_ schema: String, _ table: String, on connection: PostgreSQLConnection) throws
    -> [String]
  {
    try connection.execute(
      """
      SELECT column_name || ' ' || data_type || CASE WHEN is_nullable = 'NO' THEN ' not null' ELSE '' END
      FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
      """, [schema, table]
    ).rows.map { $0[0] ?? "" }
  }

  private static func relations(_ schema: String, on connection: PostgreSQLConnection) throws -> [String] {
    try connection.execute(
      "SELECT relname || ' ' || relkind::text FROM pg_class WHERE relnamespace = to_regnamespace($1) ORDER BY relname",
      [schema]
    ).rows.map { $0[0] ?? "" }
  }

  @Test func everyAttributeTypeGetsAColumnOfPostgreSQLsTypeThatKeepsItsValues() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    let opened = try PostgreSQLStoreTables(schema: schema, model: allTypesModel).open(on: connection)
    #expect(opened.created)
    let columns = try Self.columns(schema, "AllTypes", on: connection)
    #expect(
      Array(columns.prefix(16)) == [
        "pk bigint not null", "_version bigint not null", "_entity bigint not null", "bool boolean not null",
        "int bigint not null", "int16 smallint not null", "int32 integer not null", "int64 bigint not null",
        "double double precision not null", "float real not null", "string text not null",
        "date double precision not null", "data bytea not null", "uuid uuid not null", "url text not null",
        "decimal numeric not null",
      ])
    #expect(columns.contains("optionalBool boolean"), "an optional attribute's column takes NULL")
  }

  @Test func theShopModelsTablesIndexesJoinTablesAndCatalogMatchItsSQLiteLayout() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    let model = try ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses)
    let tables = try PostgreSQLStoreTables(schema: schema, model: model)
    let opened = try tables.open(on: connection)
    for layout in TableLayout.tables(of: model) {
      let columns = try Self.columns(schema, layout.root.name, on: connection)
      #expect(
        columns.map { String($0.prefix { $0 != " " }) } == ["pk", "_version", "_entity"] + layout.columns.map(\.name))
      for (column, described) in zip(layout.columns, columns.dropFirst(3)) {
        #expect(described.hasSuffix(" not null") == column.isNotNull, "\(layout.root.name).\(column.name)")
      }
      for object in layout.objects {
        let found = try connection.execute(
          "SELECT relkind, coalesce((SELECT indisunique FROM pg_index WHERE indexrelid = c.oid), false) "
            + "FROM pg_class c WHERE relnamespace = to_regnamespace($1) AND relname = $2", [schema, object.name])
        #expect(
          found.rows == [[object.kind == .joinTable ? "r" : "i", object.isUnique ? "t" : "f"]],
          "\(object.name)")
      }
    }
    let shopper = try Self.columns(schema, "Shopper", on: connection)
    #expect(shopper.contains("address_geo_latitude double precision not null"), "\(shopper)")
    #expect(!TableLayout.tables(of: model).flatMap(\.objects).filter { $0.kind == .joinTable }.isEmpty)
    let metadata = try #require(try PersistentStore.readMetadata(connection))
    #expect(metadata["store_uuid"] == opened.identifier.uuidString)
    #expect(metadata["model_hash"] == model.versionHash)
    #expect(metadata["format_version"] == String(PersistentStore.formatVersion))
    #expect(try ModelSchema(json: Data((metadata["model_json"] ?? "").utf8)).entities.count == model.entities.count)
    let entities = try connection.execute("SELECT code, name FROM \(schema)._entities ORDER BY code").rows
    #expect(entities == model.entities.map { [String($0.code), $0.name] })
    let keys = try connection.execute("SELECT entity, key_floor FROM \(schema)._primary_key ORDER BY entity").rows
    #expect(keys == model.entities.filter(\.isRoot).map(\.name).sorted().map { [$0, "0"] })
    #expect(try PostgreSQLHistory(schema: schema).lastNumber(on: connection) == 0)
    // Opening again opens the same store and creates nothing.
    let before = try Self.relations(schema, on: connection)
    #expect(
      try tables.open(on: connection) == PostgreSQLStoreTables.Opened(identifier: opened.identifier, created: false))
    #expect(try Self.relations(schema, on: connection) == before)
  }

  @Test func processesOpeningOneSchemaAtOnceCreateItOnceAndAllOpenTheSameStore() async throws {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let connection = try PostgreSQLConnection(url: server.url)
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    let outputs = try await offThePool {
      let start = Date().timeIntervalSince1970 * 1000 + 400
      let runs = try (0..<5).map { _ in
        try SpawnedProcess(
          builtProduct("typedstore-test-writer"),
          ["pg-open-shop", server.tcpURL, schema, String(format: "%.0f", start)])
      }
      return runs.map { run in
        let output = run.finish().trimmingCharacters(in: .whitespacesAndNewlines)
        return run.process.terminationStatus == 0 ? output : "failed: \(output)"
      }
    }
    #expect(outputs.filter { $0.hasPrefix("created ") }.count == 1, "\(outputs)")
    #expect(Set(outputs.map { $0.split(separator: " ").last ?? "" }).count == 1, "\(outputs)")
    #expect(outputs.allSatisfy { $0.hasPrefix("created ") || $0.hasPrefix("opened ") }, "\(outputs)")
  }

  @Test func anotherModelOrAnotherApplicationsSchemaIsRefusedAndLeftAsItWas() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    _ = try PostgreSQLStoreTables(schema: schema, model: notesModel).open(on: connection)
    let before = try Self.relations(schema, on: connection)
    var noMigration = StoreOptions()
    noMigration.shouldMigrateStoreAutomatically = false
    let mismatch = #expect(throws: StoreError.self) {
      try PostgreSQLStoreTables(schema: schema, model: allTypesModel).open(on: connection, options: noMigration)
    }
    #expect(mismatch == .modelMismatch(storeHash: notesModel.versionHash, modelHash: allTypesModel.versionHash))
    // Migrating, as by default, a model that shares no entity with the store's is refused.
    let refusal = #expect(throws: MigrationError.self) {
      try PostgreSQLStoreTables(schema: schema, model: allTypesModel).open(on: connection)
    }
    #expect("\(String(describing: refusal))".contains("shares no entity"))
    #expect(try Self.relations(schema, on: connection) == before)
    // Entity codes that are not the model's would read rows as the wrong entity.
    try connection.execute("UPDATE \(schema)._entities SET name = 'Renamed' WHERE code = 1")
    let codes = #expect(throws: StoreError.self) {
      try PostgreSQLStoreTables(schema: schema, model: notesModel).open(on: connection)
    }
    guard case .corrupt(let location, let message) = codes else {
      Issue.record("\(String(describing: codes))")
      return
    }
    #expect(location == "PostgreSQL schema \(schema)" && message.contains("entity codes"))

    let foreign = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(foreign) CASCADE") }
    try connection.execute("CREATE SCHEMA \(foreign)")
    try connection.execute("CREATE TABLE \(foreign).invoices (id bigint PRIMARY KEY)")
    let refused = #expect(throws: StoreError.self) {
      try PostgreSQLStoreTables(schema: foreign, model: notesModel).open(on: connection)
    }
    #expect(refused == .notATypedStore(path: "PostgreSQL schema \(foreign)"))
    #expect(try Self.relations(foreign, on: connection) == ["invoices r", "invoices_pkey i"])
  }

  /// An entity whose name PostgreSQL would cut to 63 bytes.
  final class AnEntityWhoseNameIsFarLongerThanTheSixtyThreeBytesPostgreSQLKeeps: ManagedObject {
    @Attribute var title: String = ""
  }

  /// A column whose name PostgreSQL would cut.
  final class Measured: ManagedObject {
    @Attribute(persistentName: "a_column_whose_name_is_far_longer_than_the_sixty_three_bytes_kept")
    var reading: Double = 0
  }

  /// Names that fit, and an index name that does not.
  final class AnEntityWithAFairlyLongNameForItsTable: ManagedObject {
    @Attribute(indexed: true) var anAttributeWhoseNameIsLongToo: String = ""
  }

  @Test func anIndexWhoseNameIsTooLongIsMadeUnderItsShortenedName() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    let model = try ManagedObjectModel(AnEntityWithAFairlyLongNameForItsTable.self)
    _ = try PostgreSQLStoreTables(schema: schema, model: model).open(on: connection)
    let name = "_index_AnEntityWithAFairlyLongNameForItsTable_anAttributeWhoseNameIsLongToo"
    #expect(name.utf8.count > 63)
    let found = try connection.execute(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = $2",
      [schema, PostgreSQLStoreTables.indexName(name)])
    #expect(found.rows.first?.first??.contains("(\"anAttributeWhoseNameIsLongToo\")") == true, "\(found.rows)")
    let column = #expect(throws: PostgreSQLError.self) {
      try PostgreSQLStoreTables(schema: schema, model: ManagedObjectModel(Measured.self))
    }
    #expect(column?.message.contains("a_column_whose_name_is_far_longer_than_the_sixty_three_bytes_kept") == true)
  }

  @Test func namesLongerThanPostgreSQLKeepsAreRefusedByNameAndLongIndexNamesShortened() throws {
    let model = try ManagedObjectModel(AnEntityWhoseNameIsFarLongerThanTheSixtyThreeBytesPostgreSQLKeeps.self)
    let error = #expect(throws: PostgreSQLError.self) {
      try PostgreSQLStoreTables(schema: PostgreSQLTestServer.schemaName(), model: model)
    }
    #expect(error?.kind == .model)
    #expect(error?.message.contains("AnEntityWhoseNameIsFarLongerThanTheSixtyThreeBytesPostgreSQLKeeps") == true)
    let long = "_unique_" + String(repeating: "Basket", count: 10)
    let shortened = PostgreSQLStoreTables.indexName(long + "_a")
    #expect(shortened.utf8.count == 63 && shortened.hasPrefix(String(long.prefix(46))))
    #expect(shortened != PostgreSQLStoreTables.indexName(long + "_b"))
    #expect(PostgreSQLStoreTables.indexName("_index_Note_title") == "_index_Note_title")
  }
}
