import Foundation

/// Converts one attribute's Swift values to and from SQLite values.
///
/// A codec is chosen once per attribute when the model is built, from the storage kind the
/// `@Attribute` initializer recorded; the conditional conformances below prove at run time
/// what the initializer's constraints proved at compile time.
protocol ValueCodec<Value>: Sendable {
  associatedtype Value
  var attributeType: AttributeType { get }
  var isOptional: Bool { get }
  func encode(_ value: Value) throws -> PrimitiveValue
  func decode(_ primitive: PrimitiveValue) throws -> Value
  /// True for `StandardCodec`: the value is stored as its `AttributeValue` conformance says.
  var isStandard: Bool { get }
  /// For an enum that is `CaseIterable` and `Comparable`: each case's stored value, in the
  /// order of Swift's `<` on the cases (how a sort orders them), with its rank (cases that
  /// neither is `<` the other share one); nil for any other type.
  var caseOrder: [RankedCase]? { get }
}

extension ValueCodec {
  var isStandard: Bool { false }
  var caseOrder: [RankedCase]? { nil }

  /// Decodes without the caller knowing `Value`; the result is a `Value`.
  func decodeAny(_ primitive: PrimitiveValue) throws -> Any { try decode(primitive) }

  /// The value encoded by this codec (an optional's wrapped value too), or nil when it is
  /// not of the codec's type.
  func encodeAny(_ value: Any) throws -> PrimitiveValue? {
    guard let typed = value as? Value else { return nil }
    return try encode(typed)
  }
}

/// An enum case's stored value and its place in Swift's order of the cases.
struct RankedCase: Sendable, Equatable {
  var value: PrimitiveValue
  var rank: Int
}

struct StandardCodec<Value: AttributeValue>: ValueCodec {
  var isStandard: Bool { true }
  var attributeType: AttributeType { Value.attributeType }
  var isOptional: Bool { Value.isOptionalAttribute }
  func encode(_ value: Value) -> PrimitiveValue { value.primitiveValue }
  func decode(_ primitive: PrimitiveValue) throws -> Value { try Value(primitiveValue: primitive) }
}

struct RawCodec<Value: RawRepresentable>: ValueCodec where Value.RawValue: AttributeValue {
  var attributeType: AttributeType { Value.RawValue.attributeType }
  var isOptional: Bool { Value.RawValue.isOptionalAttribute }
  func encode(_ value: Value) -> PrimitiveValue { value.rawValue.primitiveValue }
  func decode(_ primitive: PrimitiveValue) throws -> Value {
    guard let value = Value(rawValue: try Value.RawValue(primitiveValue: primitive)) else {
      throw AttributeDecodingError(expected: Value.self, found: primitive)
    }
    return value
  }
}

extension RawCodec {
  var caseOrder: [RankedCase]? {
    func ordered<Case: CaseIterable & Comparable>(_ type: Case.Type) -> [RankedCase] {
      let sorted = type.allCases.sorted()
      var ranked: [RankedCase] = []
      var rank = 0
      for (index, element) in sorted.enumerated() {
        if index > 0 && sorted[index - 1] < element { rank += 1 }
        if let value = element as? Value { ranked.append(RankedCase(value: encode(value), rank: rank)) }
      }
      return ranked
    }
    guard let type = Value.self as? any (CaseIterable & Comparable).Type else { return nil }
    return ordered(type)
  }
}

struct OptionalRawCodec<Value: OptionalRawRepresentable>: ValueCodec {
  var attributeType: AttributeType { Value.WrappedRaw.RawValue.attributeType }
  var isOptional: Bool { true }
  func encode(_ value: Value) -> PrimitiveValue {
    value.wrappedRaw.map { $0.rawValue.primitiveValue } ?? .null
  }
  func decode(_ primitive: PrimitiveValue) throws -> Value {
    if case .null = primitive { return Value(wrappedRaw: nil) }
    return Value(wrappedRaw: try RawCodec<Value.WrappedRaw>().decode(primitive))
  }
  var caseOrder: [RankedCase]? { RawCodec<Value.WrappedRaw>().caseOrder }
}

struct JSONCodec<Value: Codable>: ValueCodec {
  var attributeType: AttributeType { .codable }
  var isOptional: Bool { Value.self is any ExpressibleByNilLiteral.Type }

  func encode(_ value: Value) throws -> PrimitiveValue {
    if let optional = value as? any AnyOptional, optional.isNone { return .null }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return .text(String(decoding: try encoder.encode(value), as: UTF8.self))
  }

  func decode(_ primitive: PrimitiveValue) throws -> Value {
    let data: Data
    switch primitive {
    case .null: data = Data("null".utf8)
    case .text(let text): data = Data(text.utf8)
    case .blob(let blob): data = blob
    default: throw AttributeDecodingError(expected: Value.self, found: primitive)
    }
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return try decoder.decode(Value.self, from: data)
  }
}

/// Lets generic code ask whether a value is `Optional.none`.
protocol AnyOptional {
  var isNone: Bool { get }
}

extension Optional: AnyOptional {
  var isNone: Bool { self == nil }
}

// MARK: - Run-time proofs of the initializers' constraints

protocol StandardAttributeField { static func makeStandardCodec() -> any ValueCodec }
protocol RawAttributeField { static func makeRawCodec() -> any ValueCodec }
protocol OptionalRawAttributeField { static func makeOptionalRawCodec() -> any ValueCodec }
protocol CodableAttributeField { static func makeCodableCodec() -> any ValueCodec }

extension Attribute: StandardAttributeField where Value: AttributeValue {
  static func makeStandardCodec() -> any ValueCodec { StandardCodec<Value>() }
}
extension Attribute: RawAttributeField where Value: RawRepresentable, Value.RawValue: AttributeValue {
  static func makeRawCodec() -> any ValueCodec { RawCodec<Value>() }
}
extension Attribute: OptionalRawAttributeField where Value: OptionalRawRepresentable {
  static func makeOptionalRawCodec() -> any ValueCodec { OptionalRawCodec<Value>() }
}
extension Attribute: CodableAttributeField where Value: Codable {
  static func makeCodableCodec() -> any ValueCodec { JSONCodec<Value>() }
}
