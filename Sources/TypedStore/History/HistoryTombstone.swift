import Foundation

/// The values a deleted row kept: its attributes marked `preservedOnDeletion`.
///
/// ```swift
/// let uuid: UUID? = tombstone[\Note.uuid]          // typed, by key path
/// let json = try JSONEncoder().encode(tombstone.jsonObject)   // for tools
/// ```
///
/// A tombstone holds the JSON text the store keeps (see `docs/history.md`) and decodes it when
/// its values are read, so that reading a large delete's history costs no more per change
/// than reading any other history.
public struct HistoryTombstone: Sendable, Hashable {
  /// The concrete entity of the deleted row.
  public let entityName: String
  /// The tombstone as stored: a JSON object of tagged values by attribute name.
  let json: String
  let storeIdentifier: UUID

  init(entityName: String, json: String, storeIdentifier: UUID) {
    self.entityName = entityName
    self.json = json
    self.storeIdentifier = storeIdentifier
  }

  /// The stored values by attribute name (empty when another tool left text in the store
  /// that is not a tombstone).
  public var values: [String: PrimitiveValue] {
    guard let tagged = Self.decode(json) ?? Self.decode(Self.quotingInfinities(json)) else { return [:] }
    return tagged.mapValues { $0?.primitiveValue ?? .null }
  }

  /// The tagged values of `json`; an infinity is the string `"Infinity"` or `"-Infinity"`.
  private static func decode(_ json: String) -> [String: TaggedValue?]? {
    let decoder = JSONDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(
      positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
    return try? decoder.decode([String: TaggedValue?].self, from: Data(json.utf8))
  }

  /// `json` with what SQLite's `json_object` wrote for infinite reals up to TypedStore 0.8
  /// written as strings: a bare `Inf` (not JSON; SQLite before 3.43) or `9.0e+999` (a number
  /// no `Double` holds; SQLite 3.43 and later).
  private static func quotingInfinities(_ json: String) -> String {
    var json = json
    for (written, infinity) in [
      ("-Inf", "-Infinity"), ("Inf", "Infinity"), ("-9.0e+999", "-Infinity"), ("9.0e+999", "Infinity"),
    ] {
      json = json.replacingOccurrences(of: "\"real\":\(written)}", with: "\"real\":\"\(infinity)\"}")
    }
    return json
  }

  /// The preserved value of the attribute `keyPath` reads, or nil when the attribute was not
  /// preserved (or the key path names no attribute of the row's entity).
  public subscript<Entity: ManagedObject, Value>(keyPath: KeyPath<Entity, Value>) -> Value? {
    guard let model = ModelRegistry.model(for: storeIdentifier),
      let entity = model.entity(named: entityName),
      let slot = model.attributeSlot(for: keyPath as PartialKeyPath<Entity>), Int(slot) < entity.storedAttributes.count
    else { return nil }
    let attribute = entity.storedAttributes[Int(slot)]
    guard let value = values[attribute.name] else { return nil }
    return (try? attribute.accessor.codec.decodeAny(value)) as? Value
  }

  /// The values as plain JSON for tools: numbers, booleans and strings (dates ISO 8601, UUIDs
  /// as strings, binary data as base64), by attribute name.
  public var jsonObject: [String: Value] {
    let entity = ModelRegistry.model(for: storeIdentifier)?.entity(named: entityName)
    var object: [String: Value] = [:]
    for (name, value) in values {
      object[name] = Value(value, type: entity?.attribute(named: name)?.attributeType)
    }
    return object
  }

  /// A preserved value as plain JSON, as tools print it (see ``jsonObject``).
  public enum Value: Sendable, Hashable, Codable {
    /// JSON `null`.
    case null
    /// A boolean attribute's value.
    case bool(Bool)
    /// An integer.
    case integer(Int64)
    /// A finite floating point number.
    case double(Double)
    /// Text: strings, dates (ISO 8601), UUIDs, binary data (base64), non-finite numbers.
    case string(String)

    /// The natural JSON form of a stored value of an attribute type.
    public init(_ value: PrimitiveValue, type: AttributeType?) {
      switch (value, type) {
      case (.null, _): self = .null
      case (.integer(let int), .boolean): self = .bool(int != 0)
      case (.integer(let int), _): self = .integer(int)
      case (.real(let real), .date) where real.isFinite:
        self = .string(
          Date(timeIntervalSinceReferenceDate: real).formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)))
      case (.real(let real), _): self = real.isFinite ? .double(real) : .string(String(real))
      case (.text(let text), _): self = .string(text)
      case (.blob(let data), .uuid) where data.count == 16:
        self = (try? UUID(primitiveValue: value)).map { .string($0.uuidString) } ?? .string(data.base64EncodedString())
      case (.blob(let data), _): self = .string(data.base64EncodedString())
      }
    }

    /// Encodes the bare JSON value.
    public func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      switch self {
      case .null: try container.encodeNil()
      case .bool(let value): try container.encode(value)
      case .integer(let value): try container.encode(value)
      case .double(let value): try container.encode(value)
      case .string(let value): try container.encode(value)
      }
    }

    /// Decodes a bare JSON value (a number reads as an integer when it is one).
    public init(from decoder: any Decoder) throws {
      let container = try decoder.singleValueContainer()
      if container.decodeNil() {
        self = .null
      } else if let value = try? container.decode(Bool.self) {
        self = .bool(value)
      } else if let value = try? container.decode(Int64.self) {
        self = .integer(value)
      } else if let value = try? container.decode(Double.self) {
        self = .double(value)
      } else {
        self = .string(try container.decode(String.self))
      }
    }
  }
}

/// A tombstone value as stored: `{"integer": 1}`, `{"real": 1.5}` (`{"real": "Infinity"}`),
/// `{"text": "a"}`, `{"blob": "<hex>"}`.
private struct TaggedValue: Decodable {
  var integer: Int64?
  var real: Double?
  var text: String?
  var blob: String?

  var primitiveValue: PrimitiveValue {
    if let integer { return .integer(integer) }
    if let real { return .real(real) }
    if let text { return .text(text) }
    if let blob { return .blob(Data(hexDigits: blob, skippingOthers: true) ?? Data()) }  // as SQLite's `hex()` writes
    return .null
  }
}
