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

  /// The PostgreSQL type that stores this attribute type's values exactly: a `Date` keeps
  /// SQLite's seconds since 2001 in `double precision` (a `timestamptz` keeps microseconds,
  /// and Swift's `Date` compares finer), and a `Codable` value its JSON text (`jsonb` would
  /// reorder its keys).
  package var postgreSQLType: String {
    switch self {
    case .boolean: "boolean"
    case .integer16: "smallint"
    case .integer32: "integer"
    case .integer64: "bigint"
    case .double, .date: "double precision"
    case .float: "real"
    case .decimal: "numeric"
    case .string, .uri, .codable: "text"
    case .binaryData: "bytea"
    case .uuid: "uuid"
    }
  }
}
