import Foundation

extension PersistentStore {
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
    let path = url.path  // errors name the path given; the file is where a link points
    let file = resolvedStorePath(path)
    let connection = try SQLiteConnection(
      path: file, mode: .readOnly, busyTimeout: options.busyTimeout, companions: CompanionFileCleanup(forOpening: file))
    let migration = try connection.readTransaction {
      guard let metadata = try readMetadata(connection) else { throw StoreError.notATypedStore(path: path) }
      report.storeModelHash = metadata["model_hash"] ?? ""
      return try inferMigration(connection: connection, metadata: metadata, model: model, path: path)
    }
    report.steps = [
      MigrationReport.Step(
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
