import Foundation

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
