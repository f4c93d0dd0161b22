import Foundation

/// Sets attributes of many rows with one UPDATE statement, without loading them.
///
/// ```swift
/// var request = BatchUpdateRequest<Note>(objectIDs: ids)
/// request.propertiesToUpdate = [.set(\.title, "Updated")]
/// let result = try context.execute(request)
/// ```
///
/// Registered objects are not changed by the request; merge the commit's `StoreChanges`
/// (`context.mergeChanges(_:)`) to refresh them. A `predicate` selects rows in SQL with the
/// same semantics as a fetch's (`docs/queries.md`):
///
/// ```swift
/// let old = Date(timeIntervalSinceNow: -86_400 * 30)
/// var archive = BatchUpdateRequest<Note>(predicate: #Predicate { ($0.createdAt ?? old) < old })
/// archive.propertiesToUpdate = [.set(\.status, .archived)]
/// ```
public struct BatchUpdateRequest<Entity: ManagedObject>: Sendable {
  /// The attributes to set.
  public var propertiesToUpdate: [BatchAssignment<Entity>]
  /// The author recorded in history (the context's `transactionAuthor` when nil).
  public var author: String?
  /// Whether the result lists the updated objects' IDs.
  public var returnsObjectIDs = false
  /// Whether rows of subentities are updated too (true by default).
  public var includesSubentities = true
  /// Only the rows it selects, among the request's rows (nil: all of them).
  public var predicate: Predicate<Entity>?
  /// The rows the IDs name (nil: every row of `Entity`), kept whole: checked against the
  /// store when the request runs.
  let objectIDs: [AnyManagedID]?

  /// Updates every row of `Entity`, or those the predicate selects.
  public init(predicate: Predicate<Entity>? = nil, propertiesToUpdate: [BatchAssignment<Entity>] = []) {
    self.predicate = predicate
    self.propertiesToUpdate = propertiesToUpdate
    self.objectIDs = nil
  }

  /// Updates the rows these IDs name.
  ///
  /// ```swift
  /// let ids = try context.fetchObjectIDs(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "" }))
  /// _ = try context.execute(BatchUpdateRequest(objectIDs: ids, propertiesToUpdate: [.set(\.title, "Untitled")]))
  /// ```
  ///
  /// Each ID must name a row of the context's store, of its own entity: the request throws a
  /// `ManagedIDError` before writing anything for an ID of another store (`.foreignStore`), a
  /// temporary ID (`.temporaryID`: an unsaved object has no row), an ID of another entity
  /// than `Entity` or one of its subentities (`.entityMismatch`), or an ID whose row is gone
  /// (`.noSuchRow`).
  public init(objectIDs: [ManagedID<Entity>], propertiesToUpdate: [BatchAssignment<Entity>] = []) {
    self.propertiesToUpdate = propertiesToUpdate
    self.objectIDs = objectIDs.map(\.untyped)
  }
}
