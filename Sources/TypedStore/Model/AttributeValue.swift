import Foundation

/// A Swift type that an `@Attribute` can store directly.
///
/// The standard conformances cover `Bool`, the integer types, `Double`, `Float`, `String`,
/// `Date`, `Data`, `UUID`, `URL`, `Decimal` and optionals of these. A type of your own can
/// conform by naming the attribute type it is stored as:
///
/// ```swift
/// struct Email: AttributeValue {
///   var address: String
///   static var attributeType: AttributeType { .string }
///   var primitiveValue: PrimitiveValue { .text(address) }
///   init(primitiveValue: PrimitiveValue) throws { address = try String(primitiveValue: primitiveValue) }
/// }
/// ```
public protocol AttributeValue {
  /// The attribute type this Swift type is stored as.
  static var attributeType: AttributeType { get }
  /// Whether the attribute may be nil (true only for `Optional`).
  static var isOptionalAttribute: Bool { get }
  /// The value as SQLite stores it.
  var primitiveValue: PrimitiveValue { get }
  /// Reads the value back from its stored form.
  init(primitiveValue: PrimitiveValue) throws
}

extension AttributeValue {
  public static var isOptionalAttribute: Bool { false }
}

extension Bool: AttributeValue {
  public static var attributeType: AttributeType { .boolean }
  public var primitiveValue: PrimitiveValue { .integer(self ? 1 : 0) }
  public init(primitiveValue: PrimitiveValue) throws {
    guard case .integer(let value) = primitiveValue else {
      throw AttributeDecodingError(expected: Bool.self, found: primitiveValue)
    }
    self = value != 0
  }
}

/// Reads an integer of any width, accepting a whole REAL written by another tool.
private func integer<T: FixedWidthInteger>(_ type: T.Type, from value: PrimitiveValue) throws -> T {
  switch value {
  case .integer(let int):
    if let exact = T(exactly: int) { return exact }
  case .real(let real):
    if let exact = T(exactly: real) { return exact }
  default: break
  }
  throw AttributeDecodingError(expected: T.self, found: value)
}

extension Int: AttributeValue {
  public static var attributeType: AttributeType { .integer64 }
  public var primitiveValue: PrimitiveValue { .integer(Int64(self)) }
  public init(primitiveValue: PrimitiveValue) throws {
    if case .integer(let value) = primitiveValue, let exact = Int(exactly: value) {
      self = exact
    } else {
      self = try integer(Int.self, from: primitiveValue)
    }
  }
}

extension Int16: AttributeValue {
  public static var attributeType: AttributeType { .integer16 }
  public var primitiveValue: PrimitiveValue { .integer(Int64(self)) }
  public init(primitiveValue: PrimitiveValue) throws {
    if case .integer(let value) = primitiveValue, let exact = Int16(exactly: value) {
      self = exact
    } else {
      self = try integer(Int16.self, from: primitiveValue)
    }
  }
}

extension Int32: AttributeValue {
  public static var attributeType: AttributeType { .integer32 }
  public var primitiveValue: PrimitiveValue { .integer(Int64(self)) }
  public init(primitiveValue: PrimitiveValue) throws {
    if case .integer(let value) = primitiveValue, let exact = Int32(exactly: value) {
      self = exact
    } else {
      self = try integer(Int32.self, from: primitiveValue)
    }
  }
}

extension Int64: AttributeValue {
  public static var attributeType: AttributeType { .integer64 }
  public var primitiveValue: PrimitiveValue { .integer(self) }
  public init(primitiveValue: PrimitiveValue) throws {
    if case .integer(let value) = primitiveValue, let exact = Int64(exactly: value) {
      self = exact
    } else {
      self = try integer(Int64.self, from: primitiveValue)
    }
  }
}

extension Double: AttributeValue {
  public static var attributeType: AttributeType { .double }
  public var primitiveValue: PrimitiveValue { .real(self) }
  public init(primitiveValue: PrimitiveValue) throws {
    switch primitiveValue {
    case .real(let value): self = value
    case .integer(let value): self = Double(value)
    default: throw AttributeDecodingError(expected: Double.self, found: primitiveValue)
    }
  }
}

extension Float: AttributeValue {
  public static var attributeType: AttributeType { .float }
  public var primitiveValue: PrimitiveValue { .real(Double(self)) }
  public init(primitiveValue: PrimitiveValue) throws {
    self = Float(try Double(primitiveValue: primitiveValue))
  }
}

extension String: AttributeValue {
  public static var attributeType: AttributeType { .string }
  public var primitiveValue: PrimitiveValue { .text(self) }
  public init(primitiveValue: PrimitiveValue) throws {
    guard case .text(let value) = primitiveValue else {
      throw AttributeDecodingError(expected: String.self, found: primitiveValue)
    }
    self = value
  }
}

/// Dates are stored as REAL seconds since 2001-01-01T00:00:00Z (Core Data's reference date),
/// which round-trips every `Date` exactly.
extension Date: AttributeValue {
  public static var attributeType: AttributeType { .date }
  public var primitiveValue: PrimitiveValue { .real(timeIntervalSinceReferenceDate) }
  public init(primitiveValue: PrimitiveValue) throws {
    self = Date(timeIntervalSinceReferenceDate: try Double(primitiveValue: primitiveValue))
  }
}

extension Data: AttributeValue {
  public static var attributeType: AttributeType { .binaryData }
  public var primitiveValue: PrimitiveValue { .blob(self) }
  public init(primitiveValue: PrimitiveValue) throws {
    switch primitiveValue {
    case .blob(let value): self = value
    case .text(let value): self = Data(value.utf8)
    default: throw AttributeDecodingError(expected: Data.self, found: primitiveValue)
    }
  }
}

/// UUIDs are stored as a 16-byte BLOB.
extension UUID: AttributeValue {
  public static var attributeType: AttributeType { .uuid }
  public var primitiveValue: PrimitiveValue {
    withUnsafeBytes(of: uuid) { .blob(Data($0)) }
  }
  public init(primitiveValue: PrimitiveValue) throws {
    switch primitiveValue {
    case .blob(let data) where data.count == 16:
      var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
      withUnsafeMutableBytes(of: &bytes) { $0.copyBytes(from: data) }
      self = UUID(uuid: bytes)
    case .text(let text):
      guard let uuid = UUID(uuidString: text) else { fallthrough }
      self = uuid
    default:
      throw AttributeDecodingError(expected: UUID.self, found: primitiveValue)
    }
  }
}

/// URLs are stored as their absolute string.
extension URL: AttributeValue {
  public static var attributeType: AttributeType { .uri }
  public var primitiveValue: PrimitiveValue { .text(absoluteString) }
  public init(primitiveValue: PrimitiveValue) throws {
    guard case .text(let text) = primitiveValue, let url = URL(string: text) else {
      throw AttributeDecodingError(expected: URL.self, found: primitiveValue)
    }
    self = url
  }
}

/// Decimals are stored as text, so no digit is lost to binary floating point: the value's
/// `description`, which writes every digit in plain notation with a "." whatever the locale
/// (`-12.5`, `0.000001`, 1e100 as "1" and 100 zeros), and `NaN` for `Decimal.nan`. Reading it
/// back gives an equal `Decimal` for every value (`AttributeRoundTripTests`).
extension Decimal: AttributeValue {
  public static var attributeType: AttributeType { .decimal }
  public var primitiveValue: PrimitiveValue { .text(description) }
  public init(primitiveValue: PrimitiveValue) throws {
    switch primitiveValue {
    case .text(let text):
      guard let value = Decimal(storedText: text) else {
        throw AttributeDecodingError(expected: Decimal.self, found: primitiveValue)
      }
      self = value
    case .integer(let value): self = Decimal(value)
    case .real(let value): self = Decimal(value)
    default: throw AttributeDecodingError(expected: Decimal.self, found: primitiveValue)
    }
  }
}

extension Optional: AttributeValue where Wrapped: AttributeValue {
  public static var attributeType: AttributeType { Wrapped.attributeType }
  public static var isOptionalAttribute: Bool { true }
  public var primitiveValue: PrimitiveValue {
    switch self {
    case .none: .null
    case .some(let value): value.primitiveValue
    }
  }
  public init(primitiveValue: PrimitiveValue) throws {
    if case .null = primitiveValue {
      self = .none
    } else {
      self = .some(try Wrapped(primitiveValue: primitiveValue))
    }
  }
}
