/// A staged migration: the model versions a store may be at, oldest first, and a stage
/// between each pair, as SwiftData's `SchemaMigrationPlan` and Core Data's
/// `NSStagedMigrationManager`. A store at any version of the plan is taken through every
/// stage after it, in order, in one write transaction under the cross-process write lock:
/// all of it commits, or none of it (docs/migration.md, "Staged migration").
///
/// ```swift
/// let plan = MigrationPlan(
///   versions: [
///     .init("1", try ManagedObjectModel(CustomerV1.self)),   // name
///     .init("2", try ManagedObjectModel(CustomerV2.self)),   // name, firstName, lastName
///     .init("3", try ManagedObjectModel(CustomerV3.self)),   // firstName, lastName
///   ],
///   stages: [
///     .custom(didMigrate: { context in                     // version 2's classes
///       for customer in try context.fetch(FetchRequest<CustomerV2>()) {
///         let parts = customer.name.split(separator: " ", maxSplits: 1)
///         customer.firstName = parts.first.map(String.init) ?? ""
///         customer.lastName = parts.count > 1 ? String(parts[1]) : ""
///       }
///       try context.save()
///     }),
///     .lightweight,                                         // removes `name`
///   ])
/// let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url)
/// ```
public struct MigrationPlan: Sendable {
  /// One model version of a plan: an identifier the store records (Core Data's
  /// `versionIdentifiers`, SwiftData's `versionIdentifier`) and the model with its classes.
  public struct Version: Sendable {
    /// The name the store records for this version; unique within the plan.
    public let identifier: String
    /// The version's model, with the classes a stage's context uses.
    public let model: ManagedObjectModel

    /// A version named `identifier` whose model is `model`.
    ///
    /// ```swift
    /// let version2 = MigrationPlan.Version("2", try ManagedObjectModel(CustomerV2.self))
    /// ```
    public init(_ identifier: String, _ model: ManagedObjectModel) {
      self.identifier = identifier
      self.model = model
    }
  }

  /// The model versions, oldest first; the last is the model the store is opened with.
  public let versions: [Version]
  /// `stages[i]` takes a store from `versions[i]` to `versions[i + 1]`.
  public let stages: [MigrationStage]

  /// A plan through `versions`, oldest first, with one stage between each pair.
  ///
  /// ```swift
  /// let plan = MigrationPlan(versions: [version1, version2], stages: [.lightweight])
  /// ```
  public init(versions: [Version], stages: [MigrationStage]) {
    self.versions = versions
    self.stages = stages
  }

  /// The plan as the store runs it.
  ///
  /// - Throws: `MigrationError.invalidPlan` for a plan that cannot be run.
  func staged() throws(MigrationError) -> StagedMigration {
    guard !versions.isEmpty else { throw .invalidPlan(reason: "it has no versions") }
    guard stages.count == versions.count - 1 else {
      throw .invalidPlan(
        reason: "it has \(versions.count) versions and \(stages.count) stages; it needs one stage between each pair "
          + "of versions (\(versions.count - 1))")
    }
    var seen = Set<String>()
    for version in versions where !seen.insert(version.identifier).inserted {
      throw .invalidPlan(reason: "two versions are named \"\(version.identifier)\"")
    }
    return StagedMigration(
      versions: versions.map { StagedMigration.Version(identifier: $0.identifier, model: $0.model) },
      stages: stages.map(\.staged))
  }
}

/// What a ``MigrationPlan`` runs between two versions, as SwiftData's `MigrationStage`.
///
/// ```swift
/// let stages: [MigrationStage] = [
///   .lightweight,
///   .custom(
///     willMigrate: { context in   // the older version's classes, before the schema change
///       try context.execute(BatchDeleteRequest<OrderV2>(predicate: #Predicate { $0.total < 0 }))
///     },
///     didMigrate: { context in    // the newer version's classes, after it
///       for order in try context.fetch(FetchRequest<OrderV3>()) { order.currency = "EUR" }
///     }),
/// ]
/// ```
public enum MigrationStage: Sendable {
  /// The schema change inferred from the two versions, as an inferred migration makes it
  /// (docs/migration.md, "What is inferred"); a change that cannot be inferred refuses the
  /// whole migration.
  case lightweight
  /// Code of yours around the inferred schema change. `willMigrate` gets a context of the
  /// older version, `didMigrate` one of the newer version; each reads what the stages before
  /// it wrote, and what it leaves unsaved is saved when it returns. Both run inside the
  /// migration's one transaction: an error either throws ends the migration, and the store
  /// stays at the version it was at. A stage's saves are recorded in history as any save is
  /// (author ``PersistentStore/migrationTransactionAuthor``, unless the stage sets another),
  /// before the migration's marker transaction.
  case custom(
    willMigrate: (@Sendable (ModelContext) throws -> Void)? = nil,
    didMigrate: (@Sendable (ModelContext) throws -> Void)? = nil)

  var staged: StagedMigration.Stage {
    switch self {
    case .lightweight: StagedMigration.Stage()
    case .custom(let willMigrate, let didMigrate):
      StagedMigration.Stage(willMigrate: willMigrate.map(Self.hook), didMigrate: didMigrate.map(Self.hook))
    }
  }

  /// Runs `body` with a context on the migration's transaction, and saves what it left.
  private static func hook(_ body: @escaping @Sendable (ModelContext) throws -> Void) -> StagedMigration.Hook {
    { store, transaction in
      let context = ModelContext(migrationStageOf: store, transaction: transaction)
      try body(context)
      if context.hasChanges { try context.save() }
    }
  }
}
