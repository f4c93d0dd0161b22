import Foundation

/// The kinds of attribute a model can declare, as Core Data names them.
public enum AttributeType: String, Sendable, Codable, CaseIterable {
  case boolean
  case integer16
  case integer32
  case integer64
  case double
  case float
  case string
  case date
  case binaryData
  case uuid
  case uri
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
