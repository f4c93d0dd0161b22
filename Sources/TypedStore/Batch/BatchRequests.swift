import Foundation

/// A typed assignment of one attribute, for batch requests.
///
/// ```swift
/// let change: BatchAssignment<Note> = .set(\.title, "Updated")
/// ```
public struct BatchAssignment<Entity: ManagedObject>: Sendable {
  let keyPath: PartialKeyPath<Entity> & Sendable
  let apply: @Sendable (Entity) -> Void

  /// Sets the attribute `keyPath` names to `value`.
  public static func set<Value: Sendable>(
    _ keyPath: ReferenceWritableKeyPath<Entity, Value> & Sendable, _ value: Value
  ) -> BatchAssignment {
    BatchAssignment(keyPath: keyPath, apply: { $0[keyPath: keyPath] = value })
  }
}

/// Inserts many rows in one transaction, without managed objects in any context.
///
/// ```swift
/// // key path and value pairs
/// let rows: [[BatchAssignment<Note>]] = titles.map { [.set(\.title, $0), .set(\.status, .draft)] }
/// let result = try context.execute(BatchInsertRequest<Note>(rows: rows))
///
/// // or a closure that fills a typed draft per row
/// let request = BatchInsertRequest<Note>(count: 1000) { index, note in note.title = "Note \(index)" }
/// ```
///
/// Attributes not assigned take their declared defaults, exactly as for an inserted object.
/// The rows are recorded in history as one transaction.
public struct BatchInsertRequest<Entity: ManagedObject>: Sendable {
  /// The author recorded in history (the context's `transactionAuthor` when nil).
  public var author: String?
  /// Whether the result lists the inserted objects' IDs.
  public var returnsObjectIDs = false
  let count: Int
  let fill: @Sendable (Int, Entity) -> Void

  /// Inserts one row per element of `rows`, each set from its assignments.
  public init(rows: [[BatchAssignment<Entity>]]) {
    self.count = rows.count
    self.fill = { index, draft in
      for assignment in rows[index] { assignment.apply(draft) }
    }
  }

  /// Inserts `count` rows, each filled by `fill` from a fresh draft object.
  public init(count: Int, fill: @escaping @Sendable (_ index: Int, _ draft: Entity) -> Void) {
    self.count = count
    self.fill = fill
  }
}

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

/// What a batch request did.
///
/// ```swift
/// let result = try context.execute(request)
/// print(result.count, result.objectIDs?.count ?? 0)
/// ```
public struct BatchResult<Entity: ManagedObject>: Sendable {
  /// The number of rows inserted, updated or deleted.
  public let count: Int
  /// The rows' IDs, when the request asked for them (`returnsObjectIDs`).
  public let objectIDs: [ManagedID<Entity>]?
}

/// Why a batch request cannot run; thrown before anything is written.
public enum BatchError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The entity class is not part of the context's model.
  case unknownEntity(String)
  /// An assignment's key path does not name one attribute.
  case unsupportedKeyPath(String)
  /// A negative row count.
  case invalidCount(Int)

  public var description: String {
    switch self {
    case .unknownEntity(let name): "\(name) is not an entity of the context's model"
    case .unsupportedKeyPath(let keyPath): "\(keyPath) does not name an attribute"
    case .invalidCount(let count): "cannot insert \(count) rows"
    }
  }
}
