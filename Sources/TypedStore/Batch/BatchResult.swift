import Foundation

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
