import Foundation
import TypedStore

/// A store's tables on PostgreSQL, from its model: the same tables as an SQLite store file
/// (`docs/file-format.md`), in the store's own schema, so that one database may hold several
/// stores.
///
/// The layout is the SQLite store's (`TableLayout`: one table per root entity with `pk`,
/// `_version`, `_entity` and a column per stored attribute, join tables, the same indexes),
/// with PostgreSQL's types chosen by attribute type (a `Decimal` is `numeric`, a `UUID` is
/// `uuid`, a `Bool` is `boolean`), and the catalog tables `_metadata`, `_primary_key`,
/// `_entities` and `_history_consumer`, plus the history tables (`PostgreSQLHistory`).
///
/// Opening is safe among racing sessions (of this process, another process, or another
/// host): it runs in one transaction under the advisory lock of the schema's name, so exactly
/// one session creates the tables and the others open what it made. A schema that holds other
/// tables and no store is refused and left as it is; so is a store made with another model.
package struct PostgreSQLStoreTables {
  /// What `open(on:)` found.
  package struct Opened: Sendable, Equatable {
    /// The store's UUID, fixed when its tables were created.
    package var identifier: UUID
    /// Whether this call created the tables.
    package var created: Bool
    /// Whether this call migrated the store from another model.
    package var migrated = false
  }

  /// PostgreSQL cuts identifiers to 63 bytes (`NAMEDATALEN` - 1).
  static let identifierLimit = SchemaSQL.postgreSQLIdentifierLimit

  let history: PostgreSQLHistory
  let model: ManagedObjectModel
  let tables: [TableLayout]

  var schema: String { history.schema }

  /// The tables of `model` in `schema`.
  ///
  /// - Throws: `PostgreSQLError` (`.model`) when a table, column or join table name of the
  ///   model is longer than PostgreSQL keeps (63 bytes), naming it; `.statement` for a schema
  ///   name that is not lowercase letters, digits and `_`.
  package init(schema: String, model: ManagedObjectModel) throws(PostgreSQLError) {
    self.history = try PostgreSQLHistory(schema: schema)
    self.model = model
    self.tables = TableLayout.tables(of: model)
    for table in tables {
      var names = [("table", table.root.name)] + table.columns.map { ("column", "\(table.root.name).\($0.name)") }
      names += table.objects.filter { $0.kind == .joinTable }.map { ("join table", $0.name) }
      for (kind, name) in names {
        let last = name.split(separator: ".").last.map(String.init) ?? name
        guard last.utf8.count <= Self.identifierLimit else {
          throw PostgreSQLError(
            kind: .model,
            message: "the \(kind) name \(name) is longer than PostgreSQL's \(Self.identifierLimit) bytes;"
              + " give it a shorter persistent name")
        }
      }
    }
  }

  private func table(_ name: String) -> String { "\"\(schema)\".\"\(name)\"" }

  /// Opens the store in the schema, creating its tables when the schema has none (unless
  /// `options.isReadOnly`), and leaves `connection` finding the store's tables by their names
  /// (`PostgreSQLConnection.use(schema:)`).
  ///
  /// A store of another model is migrated as a store file is (`docs/migration.md`): inferred,
  /// or through `migration`'s stages, as `options` allow, in this one transaction, holding the
  /// schema's advisory lock (so one of racing sessions migrates, and the others open what it
  /// made) and the store's write lock (so no write of the old model commits after it: writers
  /// of other processes wait, then find the new model and throw `StoreError.modelChanged`).
  ///
  /// - Throws: `StoreError.notFound` for a schema without a store on a read-only open,
  ///   `.modelMismatch` for a store of another model that is not to be migrated (read-only, or
  ///   `shouldMigrateStoreAutomatically` off), `MigrationError` for a migration that is refused
  ///   or whose stage throws, `.unsupportedFormatVersion` for a store of a format this library
  ///   does not read, `.notATypedStore` for a schema that holds other tables, `.corrupt` for
  ///   entity codes that are not the model's; `PostgreSQLError` when the server fails. Nothing
  ///   is changed then.
  package func open(
    on connection: PostgreSQLConnection, options: StoreOptions = StoreOptions(), migration: StagedMigration? = nil
  ) throws -> Opened {
    try Self.checkServer(connection)
    return try connection.transaction {
      try connection.execute(
        "SELECT pg_advisory_xact_lock(hashtext('typedstore'), hashtext($1))", [history.lockName])
      try connection.use(schema: schema)
      if let metadata = try PersistentStore.readMetadata(connection) {
        // Another application's `_metadata`: none of a store's keys.
        guard metadata["store_uuid"] != nil || metadata["format_version"] != nil else {
          throw StoreError.notATypedStore(path: location)
        }
        let version = metadata["format_version"].flatMap { Int($0) } ?? 0
        guard version == PersistentStore.formatVersion else {
          throw StoreError.unsupportedFormatVersion(found: version, supported: PersistentStore.formatVersion)
        }
        guard let identifier = metadata["store_uuid"].flatMap(UUID.init(uuidString:)) else {
          throw StoreError.corrupt(path: location, message: "its metadata has no store UUID")
        }
        let migrated = try migrateIfNeeded(metadata, on: connection, options: options, migration: migration)
        try PersistentStore.checkEntityCodes(connection: connection, path: location, model: model)
        return Opened(identifier: identifier, created: false, migrated: migrated)
      }
      let others = try connection.execute(
        "SELECT count(*) FROM pg_class WHERE relnamespace = to_regnamespace($1) AND relkind IN ('r', 'p', 'v', 'm', 'f', 'S')",
        [schema])
      guard others.rows.first?.first == "0" else { throw StoreError.notATypedStore(path: location) }
      guard !options.isReadOnly else { throw StoreError.notFound(path: location) }
      return Opened(
        identifier: try create(on: connection, versionIdentifier: migration?.lastVersionIdentifier), created: true)
    }
  }

  /// Migrates a store whose model is not `model` (or that has stages of `migration` still to
  /// run) under the write lock, or refuses it; returns whether it migrated.
  private func migrateIfNeeded(
    _ metadata: [String: String], on connection: PostgreSQLConnection, options: StoreOptions,
    migration: StagedMigration?
  ) throws -> Bool {
    let sameModel = metadata["model_hash"] == model.versionHash
    guard !sameModel || migration?.hasStagesToRun(metadata) == true else { return false }
    if options.isReadOnly {
      try PersistentStore.handleModelChange(
        .refuse(migration), connection: connection, metadata: metadata, model: model, path: location)
      return false
    }
    // A migration that would be refused is refused before it holds up any writer or reader.
    try PersistentStore.handleModelChange(
      .check(options, migration), connection: connection, metadata: metadata, model: model, path: location)
    try connection.lockWrites(timeout: options.busyTimeout)
    try connection.lockAgainstReaders()
    try PersistentStore.handleModelChange(
      .migrate(options, migration), connection: connection, metadata: metadata, model: model, path: location)
    return true
  }

  /// Throws `StoreError.unsupportedOperation` for a server older than PostgreSQL 14 or whose
  /// database is not UTF-8: Swift's string semantics need `normalize` on UTF-8 text, and
  /// decimals' order a `numeric` infinity.
  static func checkServer(_ connection: PostgreSQLConnection) throws {
    let row = try connection.execute(
      "SELECT current_setting('server_version_num'), current_setting('server_encoding')"
    ).rows.first
    let version = row?.first.flatMap { $0.flatMap { Int($0) } } ?? 0
    let encoding = row?.last.flatMap { $0 } ?? ""
    guard version >= 140_000, encoding == "UTF8" else {
      throw StoreError.unsupportedOperation(
        "a TypedStore store needs PostgreSQL 14 or later with a UTF8 database; the server is version \(version)"
          + " with \(encoding)")
    }
  }

  /// "PostgreSQL schema <name>": where errors say the store is.
  var location: String { "PostgreSQL schema \(schema)" }

  private func create(on connection: PostgreSQLConnection, versionIdentifier: String?) throws -> UUID {
    let identifier = UUID()
    try history.createTables(on: connection)  // the schema, too
    for statement in catalogSQL + tables.flatMap(tableSQL) { try connection.execute(statement) }
    let metadata: [(String, String)] =
      [
        ("store_uuid", identifier.uuidString),
        ("format_version", String(PersistentStore.formatVersion)),
        ("model_hash", model.versionHash),
        ("model_json", String(decoding: model.jsonRepresentation, as: UTF8.self)),
        ("history_horizon", "1"),  // the first transaction kept (`HistorySchema`)
      ] + (versionIdentifier.map { [("model_version", $0)] } ?? [])
    try connection.execute(
      "INSERT INTO \(table("_metadata")) (key, value) SELECT * FROM unnest($1::text[], $2::text[])",
      [PostgreSQLHistory.array(metadata.map(\.0)), PostgreSQLHistory.array(metadata.map(\.1))])
    try connection.execute(
      "INSERT INTO \(table("_entities")) (code, name) SELECT * FROM unnest($1::bigint[], $2::text[])",
      [
        PostgreSQLHistory.array(model.entities.map { String($0.code) }),
        PostgreSQLHistory.array(model.entities.map(\.name)),
      ])
    try connection.execute(
      "INSERT INTO \(table("_primary_key")) (entity) SELECT * FROM unnest($1::text[])",
      [PostgreSQLHistory.array(tables.map(\.root.name))])
    try PersistentStore.recordFirstVersion(model, identifier: versionIdentifier, connection: connection)
    return identifier
  }

  /// The catalog's tables (the history tables are `PostgreSQLHistory`'s).
  private var catalogSQL: [String] {
    [
      "CREATE TABLE \(table("_metadata")) (key text PRIMARY KEY, value text NOT NULL)",
      "CREATE TABLE \(table("_primary_key")) (entity text PRIMARY KEY, key_floor bigint NOT NULL DEFAULT 0)",
      "CREATE TABLE \(table("_entities")) (code bigint PRIMARY KEY, name text NOT NULL UNIQUE)",
      """
      CREATE TABLE \(table("_history_consumer")) (
        name text PRIMARY KEY, store_uuid text NOT NULL, transaction_number bigint NOT NULL,
        advanced_at double precision NOT NULL, seen_at double precision NOT NULL,
        lease_seconds double precision NOT NULL)
      """,
    ]
  }

  /// `CREATE TABLE` for one root entity's table, then its indexes and join tables, in
  /// `TableLayout.objects`' order (`SchemaSQL`), by names the connection's schema resolves.
  func tableSQL(_ layout: TableLayout) -> [String] {
    let sql = SchemaSQL(.postgreSQL)
    return [sql.createTable(named: layout.root.name, columns: layout.columns)] + layout.objects.flatMap(sql.create)
  }

  /// An index's name as PostgreSQL keeps it (`SchemaSQL.indexName(_:)`).
  static func indexName(_ name: String) -> String {
    SchemaSQL(.postgreSQL).indexName(name)
  }
}
