import Foundation

/// An error converting a stored value back into its Swift type.
public struct AttributeDecodingError: Error, Sendable, CustomStringConvertible {
  /// The Swift type that was expected.
  public let expectedType: String
  /// The value found in the store.
  public let found: PrimitiveValue

  /// An error for a stored `found` value that cannot be read as `expected`.
  public init(expected: Any.Type, found: PrimitiveValue) {
    self.expectedType = String(describing: expected)
    self.found = found
  }

  /// The value found, and the type it could not be read as.
  public var description: String { "cannot read \(found) as \(expectedType)" }
}
