/// How an attribute's Swift value becomes an SQLite value.
public enum AttributeStorage: String, Sendable, Codable {
  /// A type conforming to `AttributeValue`, stored as its primitive value.
  case standard
  /// A `RawRepresentable` type whose raw value is an `AttributeValue`, stored raw.
  case raw
  /// A `Codable` type stored as JSON text.
  case codable
}
