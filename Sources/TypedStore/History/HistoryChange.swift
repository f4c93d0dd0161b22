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
  /// The change's place in its transaction, from 0, as history stores it: the same in every
  /// read, and kept when a filter leaves only some of a transaction's changes
  /// (`HistoryMerger.Options.entities`). With the transaction, it makes the change's
  /// ``HistoryChangeKey`` (`HistoryTransaction.key(for:)`).
  public let index: Int

  /// The row's typed ID, or nil when the row is not `Entity` nor one of its subentities.
  public func objectID<Entity: ManagedObject>(as type: Entity.Type) -> ManagedID<Entity>? {
    objectID.typed(as: type)
  }
}

/// A key for one change of one transaction of one store, the same in every read of it: the
/// key that makes an effect outside the store idempotent, when one transaction changes several
/// rows (an order service that ships three orders in one save sends three messages, each
/// with its own key).
///
/// ```swift
/// for change in transaction.changes where change.changeType == .update {
///   try outbox.send(message(for: change), idempotencyKey: transaction.key(for: change).description)
/// }
/// ```
public struct HistoryChangeKey: Hashable, Sendable, Codable, CustomStringConvertible {
  /// The store that recorded the transaction.
  public let storeIdentifier: UUID
  /// The transaction's number.
  public let transactionNumber: Int64
  /// The change's place in the transaction (`HistoryChange.index`).
  public let changeIndex: Int

  /// `<store UUID>/<transaction number>/<change index>`.
  public var description: String { "\(storeIdentifier.uuidString)/\(transactionNumber)/\(changeIndex)" }
}
