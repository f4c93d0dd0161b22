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
  static func modelVersions(_ connection: SQLiteConnection, storeIdentifier: UUID) throws -> [ModelVersion] {
    let exists = try connection.scalarInt(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_model_versions'")
    guard exists == 1 else { return [] }
    // Stores made before plans recorded identifiers have no such column.
    let identifier =
      try connection.scalarInt(
        "SELECT count(*) FROM pragma_table_info('_model_versions') WHERE name = 'identifier'") == 1
      ? "identifier" : "NULL"
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
  static func stampProblems(_ connection: SQLiteConnection, schema: ModelSchema, stampedHash: String) throws
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

  private static func columns(of table: String, _ connection: SQLiteConnection) throws -> Set<String> {
    let statement = try connection.statement("SELECT name FROM pragma_table_info(?)")
    defer { statement.reset() }
    statement.bind(table, at: 1)
    var names = Set<String>()
    while try statement.step() { names.insert(statement.string(0).lowercased()) }
    return names
  }
}
