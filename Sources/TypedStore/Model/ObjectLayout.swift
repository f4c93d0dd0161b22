import Foundation
@_spi(Reflection) import Swift

// How TypedStore reads and writes the `@Attribute` fields of user classes.
//
// Users declare attributes as ordinary stored properties (`@Attribute var title = ""`), and
// the compiler stores each as an `Attribute<Value>` field inline in the object. User code
// reaches its fields through the property wrapper's `_enclosingInstance` subscript, which the
// optimizer folds into a direct field access. The store, however, must write every attribute
// of an object when it loads a row, without any key path: Swift cannot enumerate the key
// paths of a class's stored properties.
//
// The standard library's reflection SPI `_forEachField(of:options:)` reports the name, type
// and byte offset of each stored field of a class, including inherited ones; Mirror reports
// names and values only. So the model reads the field offsets once per entity, and each
// attribute gets a `FieldAccessor` that reads and writes its `Attribute<Value>` at that offset
// in an object of the entity's class. This file is the only place that does so; everything
// above it sees typed accessors.

/// One stored field of an entity class, as the runtime describes it.
struct ClassField {
  let name: String
  let offset: Int
  let type: Any.Type
}

/// `_EachFieldOptions.classType`, spelled by value: the SPI declares it as a mutable static.
private let classTypeOption = _EachFieldOptions(rawValue: 1 << 0)

/// The stored fields of `type`, superclass fields first, in declaration order.
func storedFields(of type: AnyClass) -> [ClassField]? {
  var fields: [ClassField] = []
  let complete = _forEachField(of: type, options: classTypeOption) {
    name, offset, fieldType, _ in
    fields.append(ClassField(name: String(cString: name), offset: offset, type: fieldType))
    return true
  }
  return complete ? fields : nil
}

/// Reads and writes one attribute of objects of one class. A class, so that the hot loops
/// copy a reference, not an existential value, per attribute.
protocol AttributeAccessor: AnyObject, Sendable {
  var codec: any ValueCodec { get }
  /// The attribute's current value in `object`, as SQLite stores it.
  func encode(_ object: ManagedObject) throws -> PrimitiveValue
  /// Sets the attribute in `object` from its stored form.
  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws
  /// Sets the attribute and its slot in a new object.
  func decode(_ value: PrimitiveValue, slot: Int32, into object: ManagedObject) throws
  /// Records the attribute's index in the object's field, for change tracking.
  func setSlot(_ slot: Int32, in object: ManagedObject)
  /// Where the field is, for readers that write plain values without a `PrimitiveValue`.
  var directField: DirectField { get }
  /// The attribute's current Swift value in `object` (for validation).
  func currentValue(of object: ManagedObject) -> Any
  /// The same accessor, numbering the slot field at `slotOffset` (a composite's first element).
  func numbering(slotOffset: Int) -> any AttributeAccessor
}

extension AttributeAccessor {
  func numbering(slotOffset: Int) -> any AttributeAccessor { self }
}

/// The place of one attribute's field in objects of one class, and the plain type it holds,
/// so that the row reader can store a column's value with no generic code or enum in between
/// (the largest costs of loading a row after SQLite itself).
///
/// `kind` is `.none` for attributes that need their codec; the `store` functions are only
/// called with the kind they handle, and the caller has checked the column's storage class.
struct DirectField: Sendable {
  let kind: FastKind
  let valueOffset: Int
  let slotOffset: Int

  @inline(__always)
  private func field<T>(in object: ManagedObject, at offset: Int, as type: T.Type) -> UnsafeMutablePointer<T> {
    (Unmanaged.passUnretained(object).toOpaque() + offset).assumingMemoryBound(to: T.self)
  }

  /// Stores an INTEGER column's value in an `.int`, `.int64` or `.bool` field.
  @inline(__always)
  func store(integer: Int64, in object: ManagedObject) {
    withExtendedLifetime(object) {
      switch kind {
      case .int: field(in: object, at: valueOffset, as: Int.self).pointee = Int(truncatingIfNeeded: integer)
      case .int64: field(in: object, at: valueOffset, as: Int64.self).pointee = integer
      case .bool: field(in: object, at: valueOffset, as: Bool.self).pointee = integer != 0
      default: preconditionFailure("TypedStore: an integer stored into a \(kind) field")
      }
    }
  }

  /// Stores a REAL column's value in a `.double` or `.date` field.
  @inline(__always)
  func store(real: Double, in object: ManagedObject) {
    withExtendedLifetime(object) {
      switch kind {
      case .double: field(in: object, at: valueOffset, as: Double.self).pointee = real
      case .date:
        field(in: object, at: valueOffset, as: Date.self).pointee = Date(timeIntervalSinceReferenceDate: real)
      default: preconditionFailure("TypedStore: a real stored into a \(kind) field")
      }
    }
  }

  /// Stores a TEXT column's value in a `.string` field.
  @inline(__always)
  func store(text: String, in object: ManagedObject) {
    precondition(kind == .string, "TypedStore: text stored into a \(kind) field")
    withExtendedLifetime(object) { field(in: object, at: valueOffset, as: String.self).pointee = text }
  }

  /// The field's value as SQLite stores it, for the plain kinds; nil for `.none`.
  @inline(__always)
  func load(from object: ManagedObject) -> PrimitiveValue? {
    withExtendedLifetime(object) {
      switch kind {
      case .int: .integer(Int64(field(in: object, at: valueOffset, as: Int.self).pointee))
      case .int64: .integer(field(in: object, at: valueOffset, as: Int64.self).pointee)
      case .double: .real(field(in: object, at: valueOffset, as: Double.self).pointee)
      case .string: .text(field(in: object, at: valueOffset, as: String.self).pointee)
      case .date: .real(field(in: object, at: valueOffset, as: Date.self).pointee.timeIntervalSinceReferenceDate)
      case .bool: .integer(field(in: object, at: valueOffset, as: Bool.self).pointee ? 1 : 0)
      case .none: nil
      }
    }
  }

  /// Records the attribute's slot in a new object's field.
  @inline(__always)
  func setSlot(_ slot: Int32, in object: ManagedObject) {
    withExtendedLifetime(object) { field(in: object, at: slotOffset, as: Int32.self).pointee = slot }
  }
}

/// The `Attribute<Value>` field at `offset` in objects of one class.
///
/// The offsets of the wrapper's `value` and `slot` are read once from `MemoryLayout`, so the
/// accessor addresses them directly: generic code reached through the `AttributeAccessor`
/// existential then needs no `Attribute<Value>` metadata lookup per call, which profiles
/// showed as the largest cost of loading rows.
final class FieldAccessor<Value, Codec: ValueCodec>: AttributeAccessor where Codec.Value == Value {
  // `Value` is a parameter of its own (not only `Codec.Value`) so that generic code finds its
  // metadata in the class's metadata, without an associated-type lookup per call.
  let typedCodec: Codec
  /// The field's place, and its plain type when it is one of the common ones, handled
  /// without going through the generic codec.
  let directField: DirectField

  convenience init(offset: Int, codec: Codec) {
    self.init(
      valueOffset: offset + (MemoryLayout<Attribute<Value>>.offset(of: \Attribute<Value>.value) ?? 0),
      slotOffset: offset + (MemoryLayout<Attribute<Value>>.offset(of: \Attribute<Value>.slot) ?? 0), codec: codec)
  }

  /// An accessor of a value of type `Value` at `valueOffset` in objects, numbering the slot
  /// field at `slotOffset` (0: none, for the elements of a composite but its first).
  init(valueOffset: Int, slotOffset: Int, codec: Codec) {
    self.typedCodec = codec
    directField = DirectField(
      kind: codec.isStandard ? FastKind(Value.self) : .none, valueOffset: valueOffset, slotOffset: slotOffset)
  }

  func numbering(slotOffset: Int) -> any AttributeAccessor {
    FieldAccessor(valueOffset: directField.valueOffset, slotOffset: slotOffset, codec: typedCodec)
  }

  var codec: any ValueCodec { typedCodec }

  @inline(__always)
  private func value(in object: ManagedObject) -> UnsafeMutablePointer<Value> {
    (Unmanaged.passUnretained(object).toOpaque() + directField.valueOffset).assumingMemoryBound(to: Value.self)
  }

  func encode(_ object: ManagedObject) throws -> PrimitiveValue {
    try withExtendedLifetime(object) {
      if let plain = directField.load(from: object) { return plain }
      return try typedCodec.encode(value(in: object).pointee)
    }
  }

  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws {
    try withExtendedLifetime(object) { try store(value, in: object) }
  }

  func decode(_ value: PrimitiveValue, slot: Int32, into object: ManagedObject) throws {
    try withExtendedLifetime(object) {
      try store(value, in: object)
      if directField.slotOffset > 0 { directField.setSlot(slot, in: object) }
    }
  }

  /// Writes a stored value into the field: directly for the common plain types (the field
  /// holds exactly that type, checked when the accessor was made), through the codec
  /// otherwise and for any value a fast path does not expect.
  @inline(__always)
  private func store(_ primitive: PrimitiveValue, in object: ManagedObject) throws {
    switch (directField.kind, primitive) {
    case (.int, .integer(let int)), (.int64, .integer(let int)), (.bool, .integer(let int)):
      directField.store(integer: int, in: object)
    case (.double, .real(let real)), (.date, .real(let real)):
      directField.store(real: real, in: object)
    case (.string, .text(let text)):
      directField.store(text: text, in: object)
    default:
      value(in: object).pointee = try typedCodec.decode(primitive)
    }
  }

  func setSlot(_ slot: Int32, in object: ManagedObject) {
    if directField.slotOffset > 0 { directField.setSlot(slot, in: object) }
  }

  func currentValue(of object: ManagedObject) -> Any {
    withExtendedLifetime(object) { value(in: object).pointee }
  }
}

/// Attribute types an accessor reads and writes without the generic codec.
enum FastKind: Sendable {
  case none, int, int64, double, string, date, bool

  init(_ type: Any.Type) {
    switch type {
    case is Int.Type: self = .int
    case is Int64.Type: self = .int64
    case is Double.Type: self = .double
    case is String.Type: self = .string
    case is Date.Type: self = .date
    case is Bool.Type: self = .bool
    default: self = .none
    }
  }
}

/// Implemented by `Attribute` so the model can recognise its fields among a class's fields.
protocol AttributeField {
  /// Builds the accessor for a field of this type at `offset`, or nil when `storage` has no
  /// codec for the field's `Value`.
  static func makeAccessor(offset: Int, storage: AttributeStorage) -> (any AttributeAccessor)?
  /// The elements of a composite attribute's field at `offset` (`CompositeAttribute.swift`).
  static func compositeElements(offset: Int) throws(CompositeLayoutError) -> [CompositeElement]
}

extension Attribute: AttributeField {
  static func makeAccessor(offset: Int, storage: AttributeStorage) -> (any AttributeAccessor)? {
    let codec: (any ValueCodec)?
    switch storage {
    case .standard: codec = (Self.self as? any StandardAttributeField.Type)?.makeStandardCodec()
    case .raw:
      codec =
        (Self.self as? any RawAttributeField.Type)?.makeRawCodec()
        ?? (Self.self as? any OptionalRawAttributeField.Type)?.makeOptionalRawCodec()
    case .codable: codec = (Self.self as? any CodableAttributeField.Type)?.makeCodableCodec()
    }
    guard let typed = codec as? any ValueCodec<Value> else { return nil }
    return makeFieldAccessor(offset: offset, codec: typed)
  }
}

/// Opens the codec existential so the accessor holds the concrete codec type.
private func makeFieldAccessor<Codec: ValueCodec>(offset: Int, codec: Codec) -> any AttributeAccessor {
  FieldAccessor<Codec.Value, Codec>(offset: offset, codec: codec)
}
