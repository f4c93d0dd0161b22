import Foundation

extension PersistentStore {
  /// One model version a store has had: its first, and one more for each migration, oldest
  /// first (the `_model_versions` table, `docs/file-format.md`).
  ///
  /// ```swift
  /// for version in try store.inspect().modelVersions {
  ///   print(version.number, version.versionHash.prefix(12), version.migrationTransaction?.transactionNumber ?? 0)
  /// }
  /// ```
  public struct ModelVersion: Sendable, Equatable, Codable {
    /// Its position in the store's versions, from 1.
    public var number: Int64
    /// The model's ``ManagedObjectModel/versionHash``.
    public var versionHash: String
    /// When the store took it: created with it, or migrated to it; nil for the first version
    /// of a store made before versions were recorded.
    public var date: Date?
    /// The token after the migration's marker transaction (author
    /// ``PersistentStore/migrationTransactionAuthor``); nil for the version the store was
    /// created with.
    public var migrationTransaction: HistoryToken?
    /// The identifier of the ``MigrationPlan`` version the store took, when it was created or
    /// migrated with a plan; nil otherwise.
    public var versionIdentifier: String?
  }

  /// The store's model versions, oldest first; empty for a store made before they were
  /// recorded and never migrated since.
  static func modelVersions(_ connection: some DatabaseConnection, storeIdentifier: UUID) throws -> [ModelVersion] {
    guard try hasModelVersions(connection) else { return [] }
    let identifier = try hasIdentifiers(connection) ? "identifier" : "NULL"
    let statement = try connection.statement(
      "SELECT number, hash, date, history_transaction, \(identifier) FROM _model_versions ORDER BY number")
    defer { statement.reset() }
    var versions: [ModelVersion] = []
    while try statement.step() {
      versions.append(
        ModelVersion(
          number: statement.int64(0), versionHash: statement.string(1),
          date: statement.isNull(2) ? nil : Date(timeIntervalSinceReferenceDate: statement.double(2)),
          migrationTransaction: statement.isNull(3)
            ? nil : HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: statement.int64(3)),
          versionIdentifier: statement.isNull(4) ? nil : statement.string(4)))
    }
    return versions
  }

  /// The problems of the model stamp against the file: the newest recorded version is the
  /// stamped one, and every table and column the stamped model stores in exists, with no
  /// column it does not know (what a migration half applied by hand would leave).
  static func stampProblems(_ connection: some DatabaseConnection, schema: ModelSchema, stampedHash: String) throws
    -> [String]
  {
    var problems: [String] = []
    let versions = try modelVersions(connection, storeIdentifier: UUID())
    if let newest = versions.last, newest.versionHash != stampedHash {
      problems.append(
        "the newest recorded model version (\(newest.versionHash.prefix(12))) is not the stamped model "
          + "(\(stampedHash.prefix(12)))")
    }
    for (table, expected) in expectedColumns(schema).sorted(by: { $0.key < $1.key }) {
      let found = try columns(of: table, connection)
      guard !found.isEmpty else {
        problems.append("the table \(table) of the stamped model is missing")
        continue
      }
      let missing = expected.subtracting(found).sorted()
      let unknown = found.subtracting(expected).sorted()
      if !missing.isEmpty {
        problems.append("the table \(table) lacks the stamped model's column(s) \(missing.joined(separator: ", "))")
      }
      if !unknown.isEmpty {
        problems.append(
          "the table \(table) has column(s) the stamped model does not know: \(unknown.joined(separator: ", "))")
      }
    }
    return problems
  }

  /// The columns of every table the schema stores rows or links in, lowercased (SQLite's
  /// column names are case-insensitive).
  private static func expectedColumns(_ schema: ModelSchema) -> [String: Set<String>] {
    var tables: [String: Set<String>] = [:]
    for entity in schema.entities {
      tables[entity.table, default: ["pk", "_version", "_entity"]].formUnion(entity.attributes.map(\.column))
      for relationship in entity.relationships ?? [] {
        if let join = relationship.ownedJoinTable {
          tables[join] = ["source", "target", "source_order", "target_order"]
        } else if let column = relationship.column {
          tables[entity.table, default: []].insert(column)
          if let order = relationship.orderColumn { tables[entity.table, default: []].insert(order) }
        }
      }
    }
    return tables.mapValues { Set($0.map { $0.lowercased() }) }
  }

  private static func columns(of table: String, _ connection: some DatabaseConnection) throws -> Set<String> {
    let statement = try connection.statement(connection.dialect.columnsSQL)
    defer { statement.reset() }
    try statement.bind(table, at: 1)
    var names = Set<String>()
    while try statement.step() { names.insert(statement.string(0).lowercased()) }
    return names
  }

  /// Whether the store has been at the plan version `identifier` (a `_model_versions` row names
  /// it).
  static func hasPassedVersion(identifier: String, connection: some DatabaseConnection) throws -> Bool {
    guard try hasModelVersions(connection), try hasIdentifiers(connection) else { return false }
    let statement = try connection.statement("SELECT count(*) FROM _model_versions WHERE identifier = ?")
    defer { statement.reset() }
    try statement.bind(identifier, at: 1)
    return try statement.step() && statement.int64(0) > 0
  }

  /// Whether `_model_versions` has its `identifier` column: stores made before plans recorded
  /// their version identifiers get it with their next migration.
  private static func hasIdentifiers(_ connection: some DatabaseConnection) throws -> Bool {
    let statement = try connection.statement(connection.dialect.columnExistsSQL)
    defer { statement.reset() }
    try statement.bind("_model_versions", at: 1)
    try statement.bind("identifier", at: 2)
    return try statement.step() && statement.int64(0) == 1
  }

  /// Whether the store has a `_model_versions` table (stores made before it do not).
  private static func hasModelVersions(_ connection: some DatabaseConnection) throws -> Bool {
    try connection.tableExists("_model_versions")
  }

  // MARK: - Writing versions

  /// Whether `hash` is one of the versions the store has passed through (not its current one).
  static func isEarlierVersion(_ hash: String, connection: some DatabaseConnection) throws -> Bool {
    guard try hasModelVersions(connection) else { return false }
    let statement = try connection.statement("SELECT count(*) FROM _model_versions WHERE hash = ?")
    defer { statement.reset() }
    try statement.bind(hash, at: 1)
    return try statement.step() && statement.int64(0) > 0
  }

  /// `CREATE TABLE _model_versions`: every model version the store has had, oldest first.
  static let modelVersionsSQL = """
    CREATE TABLE IF NOT EXISTS _model_versions (
      number INTEGER PRIMARY KEY,
      hash TEXT NOT NULL,
      json TEXT NOT NULL,
      date REAL,
      history_transaction INTEGER,
      identifier TEXT
    )
    """

  /// Re-created by every migration, so that each one commits DDL (and moves the schema cookie).
  static let modelVersionsIndexSQL = """
    DROP INDEX IF EXISTS _index__model_versions_hash;
    CREATE INDEX _index__model_versions_hash ON _model_versions(hash);
    """

  /// `CREATE TABLE _model_versions` on PostgreSQL: `number` counts from 1 as SQLite's rowid.
  static let modelVersionsSQLPostgreSQL = """
    CREATE TABLE IF NOT EXISTS _model_versions (
      number bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
      hash text NOT NULL,
      json text NOT NULL,
      date double precision,
      history_transaction bigint,
      identifier text
    );
    CREATE INDEX IF NOT EXISTS _index__model_versions_hash ON _model_versions(hash);
    """

  /// Records the first version of a new store.
  package static func recordFirstVersion(
    _ model: ManagedObjectModel, identifier: String?, connection: some DatabaseConnection
  ) throws {
    if connection.dialect == .sqlite {
      try connection.execute(script: modelVersionsSQL)
      try connection.execute(script: modelVersionsIndexSQL)
    } else {
      try connection.execute(script: modelVersionsSQLPostgreSQL)
    }
    try insertVersion(
      hash: model.versionHash, json: String(decoding: model.jsonRepresentation, as: UTF8.self), date: Date(),
      transaction: nil, identifier: identifier, connection: connection)
  }

  /// The stamp of the last of `versions` (a model and its plan's identifier, if any), a
  /// `_model_versions` row for each, and the one marker history transaction of the migration.
  static func recordMigration(
    to versions: [(model: ManagedObjectModel, identifier: String?)], connection: some DatabaseConnection,
    previous: [String: String]
  ) throws {
    let sqlite = connection.dialect == .sqlite
    try connection.execute(script: sqlite ? modelVersionsSQL : modelVersionsSQLPostgreSQL)
    if try !hasIdentifiers(connection) {
      try connection.execute(script: "ALTER TABLE _model_versions ADD COLUMN identifier TEXT")
    }
    if try connection.scalarInt("SELECT count(*) FROM _model_versions") == 0 {
      // A store made before versions were recorded: its first known version, of unknown date.
      try insertVersion(
        hash: previous["model_hash"] ?? "", json: previous["model_json"] ?? "", date: nil, transaction: nil,
        identifier: previous["model_version"], connection: connection)
    }
    let now = Date()
    let transaction = try recordMarker(at: now, connection: connection)
    for version in versions {
      try insertVersion(
        hash: version.model.versionHash, json: String(decoding: version.model.jsonRepresentation, as: UTF8.self),
        date: now, transaction: transaction, identifier: version.identifier, connection: connection)
    }
    if sqlite { try connection.execute(script: modelVersionsIndexSQL) }
    guard let last = versions.last else { return }
    let stamp = try connection.statement(
      sqlite
        ? "INSERT OR REPLACE INTO _metadata (key, value) VALUES (?, ?)"
        : "INSERT INTO _metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    defer { stamp.reset() }
    for (key, value) in [
      ("model_hash", last.model.versionHash),
      ("model_json", String(decoding: last.model.jsonRepresentation, as: UTF8.self)),
    ] + (last.identifier.map { [("model_version", $0)] } ?? []) {
      stamp.reset()
      try stamp.bind(key, at: 1)
      try stamp.bind(value, at: 2)
      try stamp.run()
    }
    // An inferred migration leaves every plan's versions: the store is at none of them.
    if last.identifier == nil { try connection.execute(script: "DELETE FROM _metadata WHERE key = 'model_version'") }
  }

  /// The migration's history transaction, with no changes: an empty range of change IDs where
  /// the next change would go, so that a reader's page of transactions still covers one
  /// contiguous range of change rows. On PostgreSQL it moves the history counter and wakes the
  /// listeners of other processes, as a save's transaction does. Returns its number.
  private static func recordMarker(at now: Date, connection: some DatabaseConnection) throws -> Int64 {
    let sql =
      connection.dialect == .sqlite
      ? """
      INSERT INTO _history_transaction
        (number, timestamp, author, context_name, process_id, first_change, last_change, recorded_by)
      SELECT \(HistorySchema.nextNumberSQL), ?1, ?2, NULL, ?3, next, next - 1, \(formatVersion)
      FROM (SELECT ifnull(max(id), 0) + 1 AS next FROM _history_change) RETURNING number
      """
      : """
      WITH n AS (UPDATE _history_counter SET last = last + 1 WHERE id = 1 RETURNING last, last_change),
      t AS (
        INSERT INTO _history_transaction
          (number, timestamp, author, context_name, process_id, first_change, last_change, recorded_by, xid)
        SELECT last, CAST(?1 AS double precision), CAST(?2 AS text), NULL, CAST(?3 AS bigint), last_change + 1,
          last_change, \(formatVersion), pg_current_xact_id() FROM n RETURNING number)
      SELECT number, pg_notify('typedstore_' || current_schema(), CAST(number AS text)) FROM t
      """
    let marker = try connection.statement(sql)
    defer { marker.reset() }
    try marker.bind(now.timeIntervalSinceReferenceDate, at: 1)
    try marker.bind(migrationTransactionAuthor, at: 2)
    try marker.bind(Int64(getpid()), at: 3)
    guard try marker.step() else { throw MissingCatalogRow("the history counter row is missing") }
    return marker.int64(0)
  }

  private static func insertVersion(
    hash: String, json: String, date: Date?, transaction: Int64?, identifier: String?,
    connection: some DatabaseConnection
  ) throws {
    // On PostgreSQL the number is given as SQLite's rowid is, one above the largest, so that a
    // rolled-back migration leaves no gap (a sequence's would); writes hold the write lock.
    let statement = try connection.statement(
      connection.dialect == .sqlite
        ? "INSERT INTO _model_versions (hash, json, date, history_transaction, identifier) VALUES (?, ?, ?, ?, ?)"
        : "INSERT INTO _model_versions (number, hash, json, date, history_transaction, identifier) "
          + "SELECT coalesce(max(number), 0) + 1, ?, ?, CAST(? AS double precision), CAST(? AS bigint), ? "
          + "FROM _model_versions")
    defer { statement.reset() }
    try statement.bind(hash, at: 1)
    try statement.bind(json, at: 2)
    if let date { try statement.bind(date.timeIntervalSinceReferenceDate, at: 3) } else { try statement.bindNull(3) }
    if let transaction { try statement.bind(transaction, at: 4) } else { try statement.bindNull(4) }
    if let identifier { try statement.bind(identifier, at: 5) } else { try statement.bindNull(5) }
    try statement.run()
  }
}
