import Foundation

/// What migrating a store to a model does, step by step, computed without changing anything:
/// TypedStore's dry run (``PersistentStore/migrationReport(forStoreAt:to:options:)``).
///
/// Core Data's nearest counterpart is the inferred mapping model
/// (`NSMappingModel.inferredMappingModel(forSourceModel:destinationModel:)`), which says what
/// would be mapped but not what it costs; a report names each operation with the rows it
/// touches, the tables rebuilt, and every refusal (a change that needs a custom stage, rows
/// that would break a new uniqueness constraint). It is `Codable`, for tools, and prints as
/// a list.
///
/// ```swift
/// let report = try PersistentStore.migrationReport(forStoreAt: url, to: version2)
/// print(report)                    // one line per operation
/// if !report.canMigrate { print(report.refusals) }
/// ```
public struct MigrationReport: Sendable, Equatable, Codable, CustomStringConvertible {
  /// The version hash of the model the store keeps now.
  public var storeModelHash: String
  /// The version hash of the model the store would be migrated to.
  public var modelHash: String
  /// The steps, in order; empty when the store already has this model.
  public var steps: [MigrationReport.Step]
  /// Why the migration would be refused; empty when it can run.
  public var refusals: [MigrationError]

  /// Whether the store needs a migration to open with the model.
  public var isMigrationNeeded: Bool { storeModelHash != modelHash }
  /// Whether opening the store with the model would migrate it (or needs nothing).
  public var canMigrate: Bool { refusals.isEmpty }

  /// One line per operation, then the refusals.
  public var description: String {
    guard isMigrationNeeded else { return "the store already has model \(modelHash.prefix(12))…; nothing to do" }
    var lines = ["migrate from model \(storeModelHash.prefix(12))… to \(modelHash.prefix(12))…"]
    for (index, step) in steps.enumerated() {
      lines.append("step \(index + 1) (\(step.kind.rawValue)):")
      lines += step.operations.map { "  \($0)" }
    }
    lines += refusals.map { "refused: \($0)" }
    return lines.joined(separator: "\n")
  }
}

extension MigrationReport {
  /// One step of a migration: from one model version to the next.
  public struct Step: Sendable, Equatable, Codable {
    /// Inferred, or with custom code.
    public var kind: MigrationError.StageKind
    /// The version hash before the step.
    public var sourceModelHash: String
    /// The version hash after it.
    public var destinationModelHash: String
    /// What the step does, in the order it does it.
    public var operations: [MigrationReport.Operation]
  }

  /// One thing a migration step does to the store.
  public struct Operation: Sendable, Equatable, Codable, CustomStringConvertible {
    /// What kind of change.
    public enum Kind: String, Sendable, Equatable, Codable {
      /// A new entity (a new table for a root entity).
      case addEntity
      /// An entity that is gone, with its rows.
      case removeEntity
      /// An entity renamed (`originalEntityName`): its table, code and history names.
      case renameEntity
      /// An entity given another superentity of the same root: its rows stay in the table,
      /// with the columns of the ancestors it left cleared and those it joined filled.
      case moveEntity
      /// A new attribute; `detail` says what existing rows get.
      case addAttribute
      /// An attribute that is gone, with its values.
      case removeAttribute
      /// An attribute renamed (`originalName:`).
      case renameAttribute
      /// A required attribute that became optional.
      case makeOptional
      /// An optional attribute that became required; rows with nil get the default.
      case makeRequired
      /// A new relationship.
      case addRelationship
      /// A relationship that is gone, with its links.
      case removeRelationship
      /// A relationship renamed (`@Relationship(originalName:)`): its key column or join table.
      case renameRelationship
      /// A to-many side made ordered: each list keeps the order it read in (by primary key).
      case makeOrdered
      /// A to-many side made unordered: the lists' order is dropped.
      case makeUnordered
      /// A to-one side made to-many (one-to-many → many-to-many): its links move from the key
      /// column into a join table.
      case moveLinksToJoinTable
      /// A to-many side made to-one (many-to-many → one-to-many): its links move from the join
      /// table into a key column; refused while a row has more than one.
      case moveLinksToKeyColumn
      /// A new index or unique index (unique ones are checked first).
      case addIndex
      /// An index that is gone.
      case removeIndex
      /// Rows get the entity codes of the new model (entities were added, removed or renamed).
      case remapEntityCodes
      /// The table is rebuilt (SQLite's 12-step procedure): a new table, the rows copied by one
      /// `INSERT … SELECT`, the old table dropped, the indexes made again.
      case rebuildTable
      /// History's entity names or attribute keys rewritten to the new names.
      case rewriteHistory
    }

    /// What kind of change.
    public var kind: Kind
    /// The entity (or table) it concerns.
    public var entity: String
    /// The attribute, relationship or index, when it concerns one.
    public var property: String?
    /// A readable detail: the default written, the old name, the columns.
    public var detail: String
    /// The rows it reads or writes, where it touches rows.
    public var rowsAffected: Int?

    /// `addAttribute Order.trackingNumber: nil in 3 rows`.
    public var description: String {
      let name = entity + (property.map { ".\($0)" } ?? "")
      let rows = rowsAffected.map { " (\($0) rows)" } ?? ""
      return "\(kind.rawValue) \(name)\(detail.isEmpty ? "" : ": \(detail)")\(rows)"
    }
  }
}
