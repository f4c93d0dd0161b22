import Foundation

/// Two objects that a uniqueness constraint allows only one of.
///
/// ```swift
/// catch StoreError.uniquenessConflict(let conflicts) {
///   for conflict in conflicts { print(conflict.constraint, conflict.objectID, conflict.conflictingID) }
/// }
/// ```
public struct UniquenessConflict: Sendable, Equatable, CustomStringConvertible {
  /// The entity whose constraint it is.
  public var entityName: String
  /// The constraint's properties.
  public var constraint: [String]
  /// The object of the save (a temporary ID for an object never saved).
  public var objectID: AnyManagedID
  /// The stored row, or the other object of the same save, with the same values.
  public var conflictingID: AnyManagedID

  /// A sentence for logs and error messages.
  public var description: String {
    "\(objectID) and \(conflictingID) share \(entityName)(\(constraint.joined(separator: ", ")))"
  }
}
