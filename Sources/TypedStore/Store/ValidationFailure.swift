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
    /// The object's own validation threw (`validateForInsert()`, `validateForUpdate()` or
    /// `validateForDelete()`; `property` is empty): the error's description. The error
    /// itself is `ValidationFailure.error`.
    case rejected(String)
  }

  /// The object at fault (a temporary ID for an object not saved yet).
  public var objectID: AnyManagedID
  /// The property at fault.
  public var property: String
  /// What is wrong.
  public var reason: Reason
  /// The error the object's validation threw, for a `.rejected` failure (not compared by `==`).
  public var error: (any Error)?

  /// A failure of a model rule, or (with `error`) of the object's own validation.
  init(objectID: AnyManagedID, property: String, reason: Reason, error: (any Error)? = nil) {
    self.objectID = objectID
    self.property = property
    self.reason = reason
    self.error = error
  }

  /// Failures are equal when they name the same object, property and reason.
  public static func == (lhs: ValidationFailure, rhs: ValidationFailure) -> Bool {
    lhs.objectID == rhs.objectID && lhs.property == rhs.property && lhs.reason == rhs.reason
  }

  /// A sentence for logs and error messages.
  public var description: String {
    switch reason {
    case .missingRequiredRelationship: "\(objectID).\(property) is required but nil"
    case .tooFewObjects(let count, let minimum): "\(objectID).\(property) has \(count) objects, fewer than \(minimum)"
    case .tooManyObjects(let count, let maximum): "\(objectID).\(property) has \(count) objects, more than \(maximum)"
    case .outOfBounds(let value, let bounds): "\(objectID).\(property) is \(value), outside \(bounds)"
    case .rejected(let message): property.isEmpty ? "\(objectID): \(message)" : "\(objectID).\(property): \(message)"
    }
  }
}
