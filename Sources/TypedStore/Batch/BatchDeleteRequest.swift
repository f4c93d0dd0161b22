import Foundation

/// Deletes many rows with one DELETE statement, without loading them.
///
/// ```swift
/// let result = try context.execute(BatchDeleteRequest(objectIDs: ids))
/// let all = try context.execute(BatchDeleteRequest<Note>())
/// let empty = try context.execute(BatchDeleteRequest<Note>(predicate: #Predicate { $0.title == "" }))
/// ```
///
/// Tombstones of attributes marked `preservedOnDeletion` are recorded in history. Registered
/// objects are not changed by the request; merge the commit's `StoreChanges` to drop them.
public struct BatchDeleteRequest<Entity: ManagedObject>: Sendable {
  /// The author recorded in history (the context's `transactionAuthor` when nil).
  public var author: String?
  /// Whether the result lists the deleted objects' IDs.
  public var returnsObjectIDs = false
  /// Whether rows of subentities are deleted too (true by default).
  public var includesSubentities = true
  /// Only the rows it selects, among the request's rows (nil: all of them).
  public var predicate: Predicate<Entity>?
  /// The rows the IDs name (nil: every row of `Entity`), kept whole: checked against the
  /// store when the request runs.
  let objectIDs: [AnyManagedID]?

  /// Deletes every row of `Entity`, or those the predicate selects.
  public init(predicate: Predicate<Entity>? = nil) {
    self.predicate = predicate
    self.objectIDs = nil
  }

  /// Deletes the rows these IDs name.
  ///
  /// ```swift
  /// let result = try context.execute(BatchDeleteRequest(objectIDs: [note.managedID]))
  /// ```
  ///
  /// Each ID must name a row of the context's store, of its own entity: the request throws a
  /// `ManagedIDError` before deleting anything for an ID of another store (`.foreignStore`), a
  /// temporary ID (`.temporaryID`: an unsaved object has no row), an ID of another entity
  /// than `Entity` or one of its subentities (`.entityMismatch`), or an ID whose row is
  /// already gone (`.noSuchRow`).
  public init(objectIDs: [ManagedID<Entity>]) {
    self.objectIDs = objectIDs.map(\.untyped)
  }
}
