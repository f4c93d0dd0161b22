import Foundation

/// The kinds of attribute a model can declare, as Core Data names them.
public enum AttributeType: String, Sendable, Codable, CaseIterable {
  /// `Bool`, stored as an integer 0 or 1.
  case boolean
  /// `Int16`.
  case integer16
  /// `Int32`.
  case integer32
  /// `Int64` and `Int`.
  case integer64
  /// `Double`.
  case double
  /// `Float`, stored as a double.
  case float
  /// `String`.
  case string
  /// `Date`, stored as seconds since 1970 (a double).
  case date
  /// `Data`.
  case binaryData
  /// `UUID`, stored as its 16 bytes.
  case uuid
  /// `URL`, stored as its absolute string.
  case uri
  /// `Decimal`, stored as its text, compared as Swift compares decimals.
  case decimal
  /// A `Codable` value stored as JSON text (`@Attribute(.codable)`).
  case codable

  /// The SQLite column type used for this attribute.
  public var columnType: String {
    switch self {
    case .boolean, .integer16, .integer32, .integer64: "INTEGER"
    case .double, .float, .date: "REAL"
    case .string, .uri, .decimal, .codable: "TEXT"
    case .binaryData, .uuid: "BLOB"
    }
  }
}
