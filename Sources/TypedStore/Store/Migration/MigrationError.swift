/// Why a store could not be migrated to the model it was opened with. Nothing was changed:
/// the store is still at its old version, and opens with the model it was made with.
///
/// ```swift
/// do { _ = try PersistentContainer(name: "Orders", model: version2, storeURL: url) }
/// catch let error as MigrationError { print(error) }   // says what to do
/// ```
public enum MigrationError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
  /// A change an inferred (lightweight) migration cannot make without losing or inventing
  /// data: `entity` and `attribute` (or relationship) name where, `change` what, and
  /// `neededStage` the kind of migration stage that can make it (``MigrationError/StageKind``).
  case notInferable(entity: String, attribute: String?, change: String, neededStage: MigrationError.StageKind)
  /// A uniqueness constraint the new model adds would be broken by rows already in the store:
  /// the properties of the constraint and the groups of rows that share values.
  case uniquenessViolation(entity: String, properties: [String], collisions: [MigrationError.Collision])
  /// The model is one the store has already been migrated past (it is in the store's
  /// `_model_versions`, before the current one): an older build of the application. Opening
  /// would migrate the store back and drop what the newer version stores, so it is refused.
  case olderModel(storeHash: String, modelHash: String)
  /// The models differ and `StoreOptions.shouldInferMappingModelAutomatically` is off: every
  /// migration must be explicit.
  case migrationPlanRequired(storeHash: String, modelHash: String)
  /// The store is at no version of the ``MigrationPlan`` it was opened with (no version has
  /// its model hash): `versions` are the plan's identifiers. Add the store's version to the
  /// front of the plan, with a stage to the next.
  case storeVersionNotInPlan(storeHash: String, versions: [String])
  /// The ``MigrationPlan`` itself cannot be run: `reason` says why (no versions, a stage
  /// count that is not one less than the versions', two versions with one identifier).
  case invalidPlan(reason: String)

  /// A sentence that says what failed and what to do.
  public var description: String {
    switch self {
    case .notInferable(let entity, let attribute, let change, let stage):
      "the store cannot be migrated by inference: \(entity)\(attribute.map { ".\($0)" } ?? "") \(change). "
        + "Nothing was changed; the store still opens with the model it was made with. This change needs a "
        + "\(stage.rawValue) stage: change the model so that it can be inferred (a constant default, a new attribute "
        + "beside the old one, a rename declared with originalName:), or open the store with a MigrationPlan whose "
        + "custom stage makes it through a middle version (docs/migration.md, the inference table and 'Staged "
        + "migration')"
    case .uniquenessViolation(let entity, let properties, let collisions):
      "the store cannot be migrated: the new uniqueness constraint on \(entity) (\(properties.joined(separator: ", "))) "
        + "is broken by rows already stored: "
        + collisions.map(\.description).joined(separator: "; ")
        + ". Nothing was changed. Open the store with the model it was made with and make those values distinct, "
        + "or migrate with a MigrationPlan whose custom stage does so in willMigrate"
    case .olderModel(let stored, let given):
      "the store was migrated from this model (hash \(given.prefix(12))…) to a newer one (hash \(stored.prefix(12))…); "
        + "nothing was changed. This is an older version of the application: open the store with the newer model"
    case .migrationPlanRequired(let stored, let given):
      "the store's model (hash \(stored.prefix(12))…) differs from the given model (hash \(given.prefix(12))…) and "
        + "StoreOptions.shouldInferMappingModelAutomatically is off. Nothing was changed. Turn it on for this open to "
        + "migrate by inference; PersistentStore.migrationReport(forStoreAt:to:) shows what that would do"
    case .storeVersionNotInPlan(let stored, let versions):
      "the store's model (hash \(stored.prefix(12))…) is none of the migration plan's versions "
        + "(\(versions.joined(separator: ", "))). Nothing was changed. Add the version the store was made with to the "
        + "front of the plan, with a stage to the next version"
    case .invalidPlan(let reason):
      "the migration plan cannot be run: \(reason). Nothing was changed"
    }
  }
}

extension MigrationError {
  /// The kind of stage a migration step needs: one TypedStore infers, or one with code of yours.
  public enum StageKind: String, Sendable, Equatable, Codable {
    /// Inferred from the two models (SwiftData's `MigrationStage.lightweight`).
    case lightweight
    /// Code of yours before and after the schema change (SwiftData's `MigrationStage.custom`).
    case custom
  }

  /// Rows that share the values of a uniqueness constraint a migration would add.
  public struct Collision: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The shared values, as SQL literals (`'alice'`, `3`).
    public var values: [String]
    /// The primary keys of the rows that share them (the first 100).
    public var primaryKeys: [Int64]

    /// `('alice') in rows 3, 7`.
    public var description: String {
      "(\(values.joined(separator: ", "))) in rows \(primaryKeys.map(String.init).joined(separator: ", "))"
    }
  }
}
