import Foundation

// MARK: - Migrating a store on opening
//
// A store whose `_metadata.model_hash` differs from the model it is opened with is migrated
// by the open itself, in the protocol of `PersistentStore+Opening.swift`:
//
// 1. Before the write lock (on a read-only connection where a `-shm` exists), the migration
//    is planned and a refused one throws: the files stay byte for byte as they were.
// 2. Under the write lock (`BEGIN IMMEDIATE`), the metadata is read again, and only then is
//    it decided what to run: another process may have migrated meanwhile (the hash now
//    matches: nothing to do), or the store may have changed (the plan is made again).
// 3. The schema changes, the new `_metadata` stamp, a `_model_versions` row and one history
//    transaction (author `typedstore.migration`, no changes) commit together, or, on any
//    error or a crash, not at all. Every migration re-creates `_model_versions`' index, so
//    that it moves SQLite's schema cookie (`PRAGMA schema_version`) even when the two models
//    store alike: the cheap test other processes use to notice that the store moved on.
//
// The store's UUID, its history rows, tokens and consumer checkpoints are not touched, except
// that history's entity names and attribute keys follow renames.

extension PersistentStore {
  /// What an open does with a store whose model differs from the one given.
  enum ModelChange {
    /// Refuse it (a read-only open, which cannot migrate).
    case refuse
    /// Plan the migration and throw if it would be refused; change nothing (before the lock).
    case check(StoreOptions, StagedMigration?)
    /// Migrate it (under the write lock), through the stages of a plan when one is given.
    case migrate(StoreOptions, StagedMigration?)

    /// The plan the open was given, if any.
    var migration: StagedMigration? {
      switch self {
      case .refuse: nil
      case .check(_, let migration), .migrate(_, let migration): migration
      }
    }
  }

  /// The author of the history transaction each migration records.
  public static let migrationTransactionAuthor = "typedstore.migration"

  /// Handles a store whose stored model hash differs from `model`'s, as `change` says.
  static func handleModelChange(
    _ change: ModelChange, connection: SQLiteConnection, metadata: [String: String], model: ManagedObjectModel,
    path: String
  ) throws {
    let storedHash = metadata["model_hash"] ?? ""
    let options: StoreOptions
    switch change {
    case .refuse: throw StoreError.modelMismatch(storeHash: storedHash, modelHash: model.versionHash)
    case .check(let given, _), .migrate(let given, _): options = given
    }
    guard options.shouldMigrateStoreAutomatically else {
      throw StoreError.modelMismatch(storeHash: storedHash, modelHash: model.versionHash)
    }
    if let migration = change.migration {
      guard case .migrate = change else { return try migration.checkStart(metadata, connection: connection) }
      return try migrateInStages(migration, connection: connection, metadata: metadata, path: path, options: options)
    }
    if try isEarlierVersion(model.versionHash, connection: connection) {
      throw MigrationError.olderModel(storeHash: storedHash, modelHash: model.versionHash)
    }
    guard options.shouldInferMappingModelAutomatically else {
      throw MigrationError.migrationPlanRequired(storeHash: storedHash, modelHash: model.versionHash)
    }
    let migration = try inferMigration(connection: connection, metadata: metadata, model: model, path: path)
    if let refusal = migration.refusals.first { throw refusal }
    guard case .migrate = change else { return }
    try run(migration.commands, connection: connection)
    try recordMigration(to: [(model, nil)], connection: connection, previous: metadata)
  }

  /// Runs a migration's SQL commands, each with its values bound.
  static func run(_ commands: [MigrationCommand], connection: SQLiteConnection) throws {
    for command in commands {
      let statement = try Statement(connection: connection, sql: command.sql)
      for (index, argument) in command.arguments.enumerated() { statement.bind(argument, at: Int32(index + 1)) }
      try statement.run()
    }
  }

  /// The migration from the model the store keeps to `model`, planned by reading the store.
  static func inferMigration(
    connection: SQLiteConnection, metadata: [String: String], model: ManagedObjectModel, path: String
  ) throws -> InferredMigration {
    let stored = try storedModel(metadata, path: path)
    return try MigrationPlanner.infer(connection: connection, old: stored, new: model)
  }

  /// The model kept in `metadata`, without classes.
  static func storedModel(_ metadata: [String: String], path: String) throws -> ManagedObjectModel {
    let decoded = try decode(metadata, path: path)
    do {
      return try ManagedObjectModel(schema: decoded.schema, json: decoded.modelJSON)
    } catch let error as ModelError {
      throw StoreError.corrupt(path: path, message: "the model the store keeps is not valid: \(error)")
    }
  }

  /// `model` as a store that keeps it reads it back (without classes): what the planner
  /// compares a next version with.
  static func storedForm(of model: ManagedObjectModel, path: String) throws -> ManagedObjectModel {
    try storedModel(
      [
        "store_uuid": UUID().uuidString, "format_version": String(formatVersion), "model_hash": model.versionHash,
        "model_json": String(decoding: model.jsonRepresentation, as: UTF8.self),
      ], path: path)
  }

  /// Whether `hash` is one of the versions the store has passed through (not its current one).
  static func isEarlierVersion(_ hash: String, connection: SQLiteConnection) throws -> Bool {
    let exists = try connection.scalarInt(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_model_versions'")
    guard exists == 1 else { return false }
    let statement = try connection.statement("SELECT count(*) FROM _model_versions WHERE hash = ?")
    defer { statement.reset() }
    statement.bind(hash, at: 1)
    return try statement.step() && statement.int64(0) > 0
  }

  // MARK: - The version stamp

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

  /// Records the first version of a new store.
  static func recordFirstVersion(_ model: ManagedObjectModel, identifier: String?, connection: SQLiteConnection)
    throws
  {
    try connection.execute(modelVersionsSQL)
    try connection.execute(modelVersionsIndexSQL)
    try insertVersion(
      hash: model.versionHash, json: String(decoding: model.jsonRepresentation, as: UTF8.self), date: Date(),
      transaction: nil, identifier: identifier, connection: connection)
  }

  /// The stamp of the last of `versions` (a model and its plan's identifier, if any), a
  /// `_model_versions` row for each, and the one marker history transaction of the migration.
  static func recordMigration(
    to versions: [(model: ManagedObjectModel, identifier: String?)], connection: SQLiteConnection,
    previous: [String: String]
  ) throws {
    try connection.execute(modelVersionsSQL)
    if try connection.scalarInt("SELECT count(*) FROM pragma_table_info('_model_versions') WHERE name = 'identifier'")
      == 0
    {
      // A store made before plans recorded their version identifiers.
      try connection.execute("ALTER TABLE _model_versions ADD COLUMN identifier TEXT")
    }
    if try connection.scalarInt("SELECT count(*) FROM _model_versions") == 0 {
      // A store made before versions were recorded: its first known version, of unknown date.
      try insertVersion(
        hash: previous["model_hash"] ?? "", json: previous["model_json"] ?? "", date: nil, transaction: nil,
        identifier: previous["model_version"], connection: connection)
    }
    let now = Date()
    // No changes: an empty range of change rowids where the next change would go, so that a
    // reader's page of transactions still covers one contiguous range of change rows.
    let marker = try Statement(
      connection: connection,
      sql: """
        INSERT INTO _history_transaction (timestamp, author, context_name, process_id, first_change, last_change)
        SELECT ?1, ?2, NULL, ?3, next, next - 1 FROM (SELECT ifnull(max(id), 0) + 1 AS next FROM _history_change)
        """)
    marker.bind(now.timeIntervalSinceReferenceDate, at: 1)
    marker.bind(migrationTransactionAuthor, at: 2)
    marker.bind(Int64(ProcessInfo.processInfo.processIdentifier), at: 3)
    try marker.run()
    let transaction = connection.lastInsertRowID
    for version in versions {
      try insertVersion(
        hash: version.model.versionHash, json: String(decoding: version.model.jsonRepresentation, as: UTF8.self),
        date: now, transaction: transaction, identifier: version.identifier, connection: connection)
    }
    try connection.execute(modelVersionsIndexSQL)
    guard let last = versions.last else { return }
    let stamp = try Statement(
      connection: connection, sql: "INSERT OR REPLACE INTO _metadata (key, value) VALUES (?, ?)")
    for (key, value) in [
      ("model_hash", last.model.versionHash),
      ("model_json", String(decoding: last.model.jsonRepresentation, as: UTF8.self)),
    ] + (last.identifier.map { [("model_version", $0)] } ?? []) {
      stamp.reset()
      stamp.bind(key, at: 1)
      stamp.bind(value, at: 2)
      try stamp.run()
    }
    // An inferred migration leaves every plan's versions: the store is at none of them.
    if last.identifier == nil { try connection.execute("DELETE FROM _metadata WHERE key = 'model_version'") }
  }

  private static func insertVersion(
    hash: String, json: String, date: Date?, transaction: Int64?, identifier: String?, connection: SQLiteConnection
  ) throws {
    let statement = try Statement(
      connection: connection,
      sql: "INSERT INTO _model_versions (hash, json, date, history_transaction, identifier) VALUES (?, ?, ?, ?, ?)")
    statement.bind(hash, at: 1)
    statement.bind(json, at: 2)
    if let date { statement.bind(date.timeIntervalSinceReferenceDate, at: 3) } else { statement.bindNull(3) }
    if let transaction { statement.bind(transaction, at: 4) } else { statement.bindNull(4) }
    if let identifier { statement.bind(identifier, at: 5) } else { statement.bindNull(5) }
    try statement.run()
  }

  // MARK: - Dry run

  /// Describes what opening the store at `url` with `model` would do to it, step by step,
  /// without changing anything: the operations, the tables rebuilt, the rows each touches,
  /// and why it would be refused (a change that needs a custom stage, rows a new uniqueness
  /// constraint would find twice). The store is read on a read-only connection.
  ///
  /// ```swift
  /// let report = try PersistentStore.migrationReport(forStoreAt: url, to: version2)
  /// print(report)
  /// let json = try JSONEncoder().encode(report)   // for tools
  /// ```
  ///
  /// - Parameters:
  ///   - url: the store file.
  ///   - model: the model to migrate to.
  ///   - options: the busy timeout to wait for a store being created.
  /// - Throws: as ``PersistentStore/metadataForPersistentStore(at:options:)``.
  public static func migrationReport(
    forStoreAt url: URL, to model: ManagedObjectModel, options: StoreOptions = StoreOptions()
  ) throws -> MigrationReport {
    let stored = try metadataForPersistentStore(at: url, options: options)
    var report = MigrationReport(
      storeModelHash: stored.modelHash, modelHash: model.versionHash, steps: [], refusals: [])
    guard report.isMigrationNeeded else { return report }
    let path = url.path
    let connection = try SQLiteConnection(
      path: path, mode: .readOnly, busyTimeout: options.busyTimeout, companions: CompanionFileCleanup(forOpening: path))
    let migration = try connection.readTransaction {
      guard let metadata = try readMetadata(connection) else { throw StoreError.notATypedStore(path: path) }
      report.storeModelHash = metadata["model_hash"] ?? ""
      return try inferMigration(connection: connection, metadata: metadata, model: model, path: path)
    }
    report.steps = [
      MigrationStep(
        kind: .lightweight, sourceModelHash: report.storeModelHash, destinationModelHash: model.versionHash,
        operations: migration.operations)
    ]
    report.refusals = migration.refusals
    if try connection.readTransaction({ try isEarlierVersion(model.versionHash, connection: connection) }) {
      report.refusals.insert(.olderModel(storeHash: report.storeModelHash, modelHash: model.versionHash), at: 0)
    }
    if !options.shouldInferMappingModelAutomatically {
      report.refusals.insert(
        .migrationPlanRequired(storeHash: report.storeModelHash, modelHash: model.versionHash), at: 0)
    }
    return report
  }
}
