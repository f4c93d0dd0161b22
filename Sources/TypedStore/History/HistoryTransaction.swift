import Foundation

/// What a change did to its row.
public enum ChangeKind: Int, Sendable, Codable, CaseIterable {
  case insert = 0
  case update = 1
  case delete = 2
}

/// One committed transaction of a store's history: one save or one batch request.
///
/// ```swift
/// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
///   print(transaction.number, transaction.author ?? "-", transaction.changes.count)
/// }
/// ```
public struct HistoryTransaction: Sendable, Identifiable {
  /// The transaction's number: increasing, never reused, also after history is deleted.
  public let number: Int64
  /// The token just after this transaction: fetch after it for what came next.
  public let token: HistoryToken
  /// When the transaction committed (the writer's clock).
  public let timestamp: Date
  /// The context's `transactionAuthor`, or the batch request's author.
  public let author: String?
  /// The name of the context that saved, if it had one.
  public let contextName: String?
  /// The process that wrote the transaction.
  public let processID: Int32
  /// The rows it inserted, updated and deleted.
  public let changes: [HistoryChange]

  /// The transaction number, as `Identifiable` wants it.
  public var id: Int64 { number }
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
