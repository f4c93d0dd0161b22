import Foundation

// MARK: - Migrating through the stages of a plan
//
// A staged migration takes a store through an ordered list of model versions, one stage
// between each pair, all in the one write transaction the open takes (`BEGIN IMMEDIATE`):
//
// 1. The store's version is decided under the lock: the plan's version the store records
//    (`_metadata.model_version`) when the plan has it with the store's hash, otherwise the
//    earliest version with the store's hash. A store at no version of the plan is refused.
// 2. For each stage from there: its `willMigrate` runs with a store of the older version, then
//    the schema changes the planner infers between the two versions (made on what the stages
//    before left), then its `didMigrate` with a store of the newer version. The code of a
//    stage reads and writes through contexts whose connection is the migration's own, so it
//    sees what the stages before it did, and its saves are savepoints of the one transaction.
// 3. A `_model_versions` row for each version passed, the new stamp (with the plan's version
//    identifier) and one history marker transaction commit with everything else. The stages'
//    saves are in history before the marker, as any save is, so that processes whose storage
//    did not change (a data-only stage does not refuse them) merge what they changed.
//
// A stage that throws, a refused step or a crash rolls all of it back: the store stays at the
// version it was at. The public form of a plan is `MigrationPlan` (Context/), whose stages
// are code on contexts; the store runs them through `Hook`s, as a lower layer calls up.

/// A migration plan as the store runs it.
package struct StagedMigration: Sendable {
  /// A model version of the plan.
  struct Version: Sendable {
    let identifier: String
    let model: ManagedObjectModel
  }

  /// Code a custom stage runs inside the migration's transaction, given the store of one
  /// version (its model, the file's identity) and the migration's connection.
  typealias Hook = @Sendable (PersistentStore, any DatabaseConnection) throws -> Void

  /// What runs between two versions: before and after the inferred schema change.
  struct Stage: Sendable {
    var willMigrate: Hook?
    var didMigrate: Hook?
  }

  let versions: [Version]
  /// `stages[i]` takes the store from `versions[i]` to `versions[i + 1]`.
  let stages: [Stage]

  /// The identifier of the last version, which a store made with the plan records.
  package var lastVersionIdentifier: String? { versions.last?.identifier }

  /// The index of the version the store is at: the one it records, or, when it records none
  /// (made or last migrated without a plan), the earliest with its hash; nil when the plan has
  /// no such version (a version it records that this plan does not know is another build's,
  /// maybe a later one: its stages are never run again from an earlier version).
  ///
  /// A version matches by hash, or, failing that, by storing alike: a version read from a
  /// model file lists its properties in the file's order, the store those of the classes it
  /// was made with (`ModelSchema.storesAlike`).
  func startIndex(_ metadata: [String: String]) -> Int? {
    let hash = metadata["model_hash"] ?? ""
    let recorded = metadata["model_version"]
    let candidates = versions.indices.filter { recorded == nil || versions[$0].identifier == recorded }
    if let exact = candidates.first(where: { versions[$0].model.versionHash == hash }) { return exact }
    guard let json = metadata["model_json"],
      let stored = try? JSONDecoder().decode(ModelSchema.self, from: Data(json.utf8))
    else { return nil }
    return candidates.first { versions[$0].model.schema.storesAlike(stored) }
  }

  /// Whether a store whose hash is the last version's still has stages to run (data-only
  /// stages between versions that store alike).
  package func hasStagesToRun(_ metadata: [String: String]) -> Bool {
    guard let start = startIndex(metadata) else { return false }
    return start < versions.count - 1
  }

  /// Before the lock: throws unless the store is at a version of the plan, or when the first
  /// step, if no code runs before it, would be refused. (Later steps are planned on what the
  /// earlier ones leave, under the lock; a refusal there rolls everything back.)
  func check(_ metadata: [String: String], connection: some DatabaseConnection, path: String) throws {
    let start = try start(metadata, connection: connection)
    guard start < stages.count, stages[start].willMigrate == nil else { return }
    let step = try MigrationPlanner.infer(
      connection: connection, old: PersistentStore.storedModel(metadata, path: path), new: versions[start + 1].model)
    if let refusal = step.refusals.first { throw refusal }
  }

  /// The version the store is at.
  ///
  /// - Throws: `MigrationError.olderModel` when the store was migrated past the plan's last
  ///   version, `MigrationError.storeVersionNotInPlan` when it is at no version of the plan.
  func start(_ metadata: [String: String], connection: some DatabaseConnection) throws -> Int {
    if let index = startIndex(metadata) { return index }
    let storeHash = metadata["model_hash"] ?? ""
    let last = versions[versions.count - 1]
    if try PersistentStore.isEarlierVersion(last.model.versionHash, connection: connection)
      || PersistentStore.hasPassedVersion(identifier: last.identifier, connection: connection)
    {
      throw MigrationError.olderModel(storeHash: storeHash, modelHash: last.model.versionHash)
    }
    throw MigrationError.storeVersionNotInPlan(storeHash: storeHash, versions: versions.map(\.identifier))
  }
}

extension PersistentStore {
  /// Takes the store through the plan's stages from its version to the last, under the write
  /// lock the caller holds (see the top of this file).
  static func migrateInStages(
    _ plan: StagedMigration, connection: some DatabaseConnection, metadata: [String: String], path: String,
    options: StoreOptions
  ) throws {
    let start = try plan.start(metadata, connection: connection)
    guard let identifier = metadata["store_uuid"].flatMap(UUID.init(uuidString:)) else {
      throw StoreError.corrupt(path: path, message: "the store has no valid UUID")
    }
    let url = connection.dialect == .sqlite ? URL(fileURLWithPath: path) : URL(fileURLWithPath: "/" + path)
    func store(_ version: StagedMigration.Version) -> PersistentStore {
      PersistentStore(
        migrationStageOf: url, identifier: identifier, model: version.model, options: options,
        dialect: connection.dialect)
    }
    var stored = try storedModel(metadata, path: path)
    for index in start..<plan.stages.count {
      let (from, to, stage) = (plan.versions[index], plan.versions[index + 1], plan.stages[index])
      try stage.willMigrate?(store(from), connection)
      let step = try MigrationPlanner.infer(connection: connection, old: stored, new: to.model)
      if let refusal = step.refusals.first { throw refusal }
      try run(step.commands, connection: connection)
      try stage.didMigrate?(store(to), connection)
      stored = try storedForm(of: to.model, path: path)
    }
    // At the last version already (it stores alike, under another hash: a model file lists
    // properties in its own order), the store is stamped with the last version's hash.
    let reached = start < plan.versions.count - 1 ? plan.versions[(start + 1)...] : plan.versions.suffix(1)
    try recordMigration(to: reached.map { ($0.model, $0.identifier) }, connection: connection, previous: metadata)
  }
}
