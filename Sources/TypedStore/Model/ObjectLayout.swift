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

/// Reads and writes one attribute of objects of one class.
protocol AttributeAccessor: Sendable {
  var codec: any ValueCodec { get }
  /// The attribute's current value in `object`, as SQLite stores it.
  func encode(_ object: ManagedObject) throws -> PrimitiveValue
  /// Sets the attribute in `object` from its stored form.
  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws
  /// Records the attribute's index in the object's field, for change tracking.
  func setSlot(_ slot: Int32, in object: ManagedObject)
  /// The declaration recorded by the `@Attribute` initializer that built `object`'s field.
  func declaration(in object: ManagedObject) -> AttributeDeclaration
}

/// The `Attribute<Value>` field at `offset` in objects of one class.
struct FieldAccessor<Value>: AttributeAccessor {
  let offset: Int
  let typedCodec: any ValueCodec<Value>

  var codec: any ValueCodec { typedCodec }

  @inline(__always)
  private func withField<Result>(
    _ object: ManagedObject, _ body: (UnsafeMutablePointer<Attribute<Value>>) throws -> Result
  ) rethrows -> Result {
    try withExtendedLifetime(object) {
      let base = Unmanaged.passUnretained(object).toOpaque()
      return try body((base + offset).assumingMemoryBound(to: Attribute<Value>.self))
    }
  }

  func encode(_ object: ManagedObject) throws -> PrimitiveValue {
    try withField(object) { try typedCodec.encode($0.pointee.value) }
  }

  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws {
    let decoded = try typedCodec.decode(value)
    withField(object) { $0.pointee.value = decoded }
  }

  func setSlot(_ slot: Int32, in object: ManagedObject) {
    withField(object) { $0.pointee.slot = slot }
  }

  func declaration(in object: ManagedObject) -> AttributeDeclaration {
    withField(object) { $0.pointee.declaration }
  }

  /// The typed value, for readers that know `Value` (tombstones, tests).
  func value(in object: ManagedObject) -> Value {
    withField(object) { $0.pointee.value }
  }
}

/// Implemented by `Attribute` so the model can recognise its fields among a class's fields.
protocol AttributeField {
  /// Builds the accessor for a field of this type at `offset`, or nil when the storage the
  /// initializer recorded has no codec for `Value`.
  static func makeAccessor(offset: Int, prototype: ManagedObject) -> (
    AttributeDeclaration, (any AttributeAccessor)?
  )
}

extension Attribute: AttributeField {
  static func makeAccessor(offset: Int, prototype: ManagedObject) -> (
    AttributeDeclaration, (any AttributeAccessor)?
  ) {
    let probe = FieldAccessor<Value>(offset: offset, typedCodec: PlaceholderCodec<Value>())
    let declaration = probe.declaration(in: prototype)
    let codec: (any ValueCodec)?
    switch declaration.storage {
    case .standard: codec = (Self.self as? any StandardAttributeField.Type)?.makeStandardCodec()
    case .raw:
      codec =
        (Self.self as? any RawAttributeField.Type)?.makeRawCodec()
        ?? (Self.self as? any OptionalRawAttributeField.Type)?.makeOptionalRawCodec()
    case .codable: codec = (Self.self as? any CodableAttributeField.Type)?.makeCodableCodec()
    }
    guard let typed = codec as? any ValueCodec<Value> else { return (declaration, nil) }
    return (declaration, FieldAccessor<Value>(offset: offset, typedCodec: typed))
  }
}

/// Used only to read a field's declaration before its real codec is known.
private struct PlaceholderCodec<Value>: ValueCodec {
  var attributeType: AttributeType { .codable }
  var isOptional: Bool { true }
  func encode(_ value: Value) throws -> PrimitiveValue { .null }
  func decode(_ primitive: PrimitiveValue) throws -> Value {
    throw AttributeDecodingError(expected: Value.self, found: primitive)
  }
}
