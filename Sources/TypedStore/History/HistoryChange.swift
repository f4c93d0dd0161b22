import Foundation

/// What a change did to its row.
public enum ChangeKind: Int, Sendable, Codable, CaseIterable {
  case insert = 0
  case update = 1
  case delete = 2
}

/// One row inserted, updated or deleted by a transaction.
///
/// ```swift
/// if let id = change.objectID(as: Note.self), change.kind == .delete {
///   let uuid: UUID? = change.tombstone?[\Note.uuid]
/// }
/// ```
public struct HistoryChange: Sendable, Hashable {
  /// Whether the row was inserted, updated or deleted.
  public let kind: ChangeKind
  /// The row, untyped (its `entityName` is the row's concrete entity).
  public let objectID: AnyManagedID
  /// For an update, the attributes whose values changed; empty otherwise.
  public let changedAttributes: [String]
  /// For a delete, the values of the attributes marked `preservedOnDeletion`.
  public let tombstone: HistoryTombstone?

  /// The row's typed ID, or nil when the row is not `Entity` nor one of its subentities.
  public func objectID<Entity: ManagedObject>(as type: Entity.Type) -> ManagedID<Entity>? {
    objectID.typed(as: type)
  }
}
