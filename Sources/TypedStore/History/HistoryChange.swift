import Foundation

/// One row inserted, updated or deleted by a transaction.
///
/// ```swift
/// if let id = change.objectID(as: Note.self), change.changeType == .delete {
///   let uuid: UUID? = change.tombstone?[\Note.uuid]
/// }
/// ```
public struct HistoryChange: Sendable, Hashable {
  /// What a change did to its row (Core Data's `NSPersistentHistoryChangeType`); the raw
  /// value is the one stored in `_history_change.kind`.
  public enum Kind: Int, Sendable, Codable, CaseIterable {
    /// The row was inserted.
    case insert = 0
    /// The row was updated.
    case update = 1
    /// The row was deleted.
    case delete = 2
  }

  /// Whether the row was inserted, updated or deleted.
  public let changeType: Kind
  /// The row, untyped (its `entityName` is the row's concrete entity).
  public let objectID: AnyManagedID
  /// For an update, the attributes whose values changed; empty otherwise.
  public let updatedProperties: [String]
  /// For a delete, the values of the attributes marked `preservedOnDeletion`.
  public let tombstone: HistoryTombstone?

  /// The row's typed ID, or nil when the row is not `Entity` nor one of its subentities.
  public func objectID<Entity: ManagedObject>(as type: Entity.Type) -> ManagedID<Entity>? {
    objectID.typed(as: type)
  }
}
