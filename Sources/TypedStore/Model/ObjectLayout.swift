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
  let offset: Int
  let valueOffset: Int
  let slotOffset: Int
  let typedCodec: Codec

  init(offset: Int, codec: Codec) {
    self.offset = offset
    self.typedCodec = codec
    self.valueOffset = offset + (MemoryLayout<Attribute<Value>>.offset(of: \Attribute<Value>.value) ?? 0)
    self.slotOffset = offset + (MemoryLayout<Attribute<Value>>.offset(of: \Attribute<Value>.slot) ?? 0)
  }

  var codec: any ValueCodec { typedCodec }

  @inline(__always)
  private func address(in object: ManagedObject, at offset: Int) -> UnsafeMutableRawPointer {
    Unmanaged.passUnretained(object).toOpaque() + offset
  }

  func encode(_ object: ManagedObject) throws -> PrimitiveValue {
    try withExtendedLifetime(object) {
      try typedCodec.encode(address(in: object, at: valueOffset).assumingMemoryBound(to: Value.self).pointee)
    }
  }

  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws {
    let decoded = try typedCodec.decode(value)
    withExtendedLifetime(object) {
      address(in: object, at: valueOffset).assumingMemoryBound(to: Value.self).pointee = decoded
    }
  }

  func decode(_ value: PrimitiveValue, slot: Int32, into object: ManagedObject) throws {
    let decoded = try typedCodec.decode(value)
    withExtendedLifetime(object) {
      address(in: object, at: valueOffset).assumingMemoryBound(to: Value.self).pointee = decoded
      address(in: object, at: slotOffset).assumingMemoryBound(to: Int32.self).pointee = slot
    }
  }

  func setSlot(_ slot: Int32, in object: ManagedObject) {
    withExtendedLifetime(object) {
      address(in: object, at: slotOffset).assumingMemoryBound(to: Int32.self).pointee = slot
    }
  }

}

/// Implemented by `Attribute` so the model can recognise its fields among a class's fields.
protocol AttributeField {
  /// Builds the accessor for a field of this type at `offset`, or nil when `storage` has no
  /// codec for the field's `Value`.
  static func makeAccessor(offset: Int, storage: AttributeStorage) -> (any AttributeAccessor)?
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
