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
//
// On PostgreSQL (`TypedStorePostgreSQL`'s `PostgreSQLStoreTables.open`) the same planner and
// stages run on the open's connection, in the SQL of its dialect (`SchemaSQL`), in one
// transaction that holds the schema's advisory lock and the store's write lock: DDL is
// transactional there, so a refusal, an error or a lost connection leaves nothing. Other
// processes notice by the model hash each of their transactions reads first
// (`PostgreSQLConnection.expectedModel`), as SQLite's notice by the schema cookie.

extension PersistentStore {
  /// What an open does with a store whose model differs from the one given.
  package enum ModelChange {
    /// Refuse it (a read-only open, which cannot migrate), as well as a store with stages of
    /// the plan still to run.
    case refuse(StagedMigration?)
    /// Plan the migration and throw if it would be refused; change nothing (before the lock).
    case check(StoreOptions, StagedMigration?)
    /// Migrate it (under the write lock), through the stages of a plan when one is given.
    case migrate(StoreOptions, StagedMigration?)

    /// The plan the open was given, if any.
    package var migration: StagedMigration? {
      switch self {
      case .refuse(let migration), .check(_, let migration), .migrate(_, let migration): migration
      }
    }
  }

  /// The author of the history transaction each migration records.
  public static let migrationTransactionAuthor = "typedstore.migration"

  /// Handles a store whose stored model hash differs from `model`'s, as `change` says.
  package static func handleModelChange(
    _ change: ModelChange, connection: some DatabaseConnection, metadata: [String: String], model: ManagedObjectModel,
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
      guard case .migrate = change else { return try migration.check(metadata, connection: connection, path: path) }
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
  static func run(_ commands: [MigrationCommand], connection: some DatabaseConnection) throws {
    for command in commands {
      if let connection = connection as? SQLiteConnection {
        let statement = try Statement(connection: connection, sql: command.sql)
        for (index, argument) in command.arguments.enumerated() { statement.bind(argument, at: Int32(index + 1)) }
        try statement.run()
        continue
      }
      let statement = try connection.statement(command.sql)
      defer { statement.reset() }
      for (index, argument) in command.arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
      try statement.run()
    }
  }

  /// The migration from the model the store keeps to `model`, planned by reading the store.
  static func inferMigration(
    connection: some DatabaseConnection, metadata: [String: String], model: ManagedObjectModel, path: String
  ) throws -> InferredMigration {
    let stored = try storedModel(metadata, path: path)
    return try MigrationPlanner.infer(connection: connection, old: stored, new: model)
  }

  /// The model kept in `metadata`, without classes.
  package static func storedModel(_ metadata: [String: String], path: String) throws -> ManagedObjectModel {
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

}
