import Foundation

/// One rule of the model an object breaks.
///
/// ```swift
/// catch StoreError.validationFailed(let failures) {
///   for failure in failures { print(failure.objectID, failure.property, failure.reason) }
/// }
/// ```
public struct ValidationFailure: Sendable, Equatable, CustomStringConvertible {
  /// What is wrong.
  public enum Reason: Sendable, Equatable {
    /// A required to-one relationship is nil.
    case missingRequiredRelationship
    /// A to-many relationship holds fewer objects than its `minimumCount`.
    case tooFewObjects(count: Int, minimum: Int)
    /// A to-many relationship holds more objects than its `maximumCount`.
    case tooManyObjects(count: Int, maximum: Int)
    /// An attribute's value lies outside the bounds declared with `@Attribute(bounds:)`.
    case outOfBounds(value: String, bounds: String)
  }

  /// The object at fault (a temporary ID for an object not saved yet).
  public var objectID: AnyManagedID
  /// The property at fault.
  public var property: String
  /// What is wrong.
  public var reason: Reason

  /// A sentence for logs and error messages.
  public var description: String {
    switch reason {
    case .missingRequiredRelationship: "\(objectID).\(property) is required but nil"
    case .tooFewObjects(let count, let minimum): "\(objectID).\(property) has \(count) objects, fewer than \(minimum)"
    case .tooManyObjects(let count, let maximum): "\(objectID).\(property) has \(count) objects, more than \(maximum)"
    case .outOfBounds(let value, let bounds): "\(objectID).\(property) is \(value), outside \(bounds)"
    }
  }
}
