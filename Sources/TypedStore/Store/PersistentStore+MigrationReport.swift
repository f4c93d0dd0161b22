import Foundation

extension PersistentStore {
  /// Describes what opening the store at `url` with `model` would do to it, step by step,
  /// without changing anything: the operations, the tables rebuilt, the rows each touches,
  /// and why it would be refused (a change that needs a custom stage, rows a new uniqueness
  /// constraint would find twice). The store is read on a read-only connection (a file), or in
  /// a read-only transaction (a `postgresql://` store).
  ///
  /// ```swift
  /// let report = try PersistentStore.migrationReport(forStoreAt: url, to: version2)
  /// print(report)
  /// let json = try JSONEncoder().encode(report)   // for tools
  /// ```
  ///
  /// - Parameters:
  ///   - url: the store file, or a store URL of another engine.
  ///   - model: the model to migrate to.
  ///   - options: the busy timeout to wait for a store being created.
  /// - Throws: as ``PersistentStore/metadataForPersistentStore(at:options:)``.
  public static func migrationReport(
    forStoreAt url: URL, to model: ManagedObjectModel, options: StoreOptions = StoreOptions()
  ) throws -> MigrationReport {
    let stored = try metadataForPersistentStore(at: url, options: options)
    let report = MigrationReport(
      storeModelHash: stored.modelHash, modelHash: model.versionHash, steps: [], refusals: [])
    guard report.isMigrationNeeded else { return report }
    if let opener = try opener(for: url) {
      return try opener.read(at: url) { connection, location in
        try plan(report, connection: connection, path: location, model: model, options: options)
      }
    }
    let path = url.path  // errors name the path given; the file is where a link points
    let file = resolvedStorePath(path)
    let connection = try SQLiteConnection(
      path: file, mode: .readOnly, busyTimeout: options.busyTimeout, companions: CompanionFileCleanup(forOpening: file))
    return try connection.readTransaction {
      try plan(report, connection: connection, path: path, model: model, options: options)
    }
  }

  /// The report's steps and refusals, planned in the read transaction in progress.
  private static func plan(
    _ report: MigrationReport, connection: some DatabaseConnection, path: String, model: ManagedObjectModel,
    options: StoreOptions
  ) throws -> MigrationReport {
    var report = report
    guard let metadata = try readMetadata(connection) else { throw StoreError.notATypedStore(path: path) }
    report.storeModelHash = metadata["model_hash"] ?? ""
    let migration = try inferMigration(connection: connection, metadata: metadata, model: model, path: path)
    report.steps = [
      MigrationReport.Step(
        kind: .lightweight, sourceModelHash: report.storeModelHash, destinationModelHash: model.versionHash,
        operations: migration.operations)
    ]
    report.refusals = migration.refusals
    if try isEarlierVersion(model.versionHash, connection: connection) {
      report.refusals.insert(.olderModel(storeHash: report.storeModelHash, modelHash: model.versionHash), at: 0)
    }
    if !options.shouldInferMappingModelAutomatically {
      report.refusals.insert(
        .migrationPlanRequired(storeHash: report.storeModelHash, modelHash: model.versionHash), at: 0)
    }
    return report
  }
}
