@_spi(Reflection) import Swift

/// A struct whose stored properties an `@Attribute` stores as columns of its owner's table:
/// Core Data's composite attribute (`NSCompositeAttributeDescription`).
///
/// ```swift
/// struct Address: CompositeAttributeValue {
///   var street = ""
///   var city = ""
///   var postcode: String? = nil
/// }
///
/// final class Customer: ManagedObject {
///   @Attribute var name = ""
///   @Attribute var address = Address()
/// }
///
/// let inParis = try context.fetch(
///   FetchRequest<Customer>(predicate: #Predicate { $0.address.city == "Paris" }, sortBy: [SortDescriptor(\.address.street)]))
/// ```
///
/// Each stored property of the struct is an element of the composite. Elements are of the
/// types an `@Attribute` stores directly (`AttributeValue` types, `RawRepresentable` enums,
/// optionals of both) or composites themselves, nested to any depth. The model lists each
/// element as an attribute named by its path (`address.city`, stored in the column
/// `address_city`), so fetches, predicates, sort descriptors, aggregates, batch requests,
/// history, tombstones and migrations see every element by name and by key path
/// (`\Customer.address.city`). Setting the composite records as changed only the elements
/// whose values differ.
public protocol CompositeAttributeValue {}

extension Attribute where Value: CompositeAttributeValue {
  /// Declares a composite attribute: the struct's stored properties are stored as columns.
  ///
  /// - Parameters:
  ///   - wrappedValue: the default for new objects (each element's default).
  ///   - persistentName: the prefix of the elements' column names, when it differs from the
  ///     property name (`addr` stores `address.city` in `addr_city`).
  ///   - originalName: the composite's name in the model version before this one, when it
  ///     was renamed: a migration renames every element's column and keeps its values.
  ///   - preservedOnDeletion: keep every element in the history tombstone of a deleted object.
  ///
  /// ```swift
  /// @Attribute(persistentName: "home", preservedOnDeletion: true) var address = Address()
  /// ```
  @inlinable
  public init(
    wrappedValue: Value, persistentName: String? = nil, originalName: String? = nil, preservedOnDeletion: Bool = false
  ) {
    self.init(
      value: wrappedValue, storage: .standard,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: false, unique: false, isComposite: true))
  }
}

/// One element of a composite attribute, as the model lays it out: its path below the
/// composite (`["geo", "latitude"]`) and the accessor of its place in objects.
struct CompositeElement {
  var path: [String]
  var accessor: any AttributeAccessor
  var storage: AttributeStorage
}

/// Why a composite attribute's struct cannot be stored.
struct CompositeLayoutError: Error {
  var path: [String]
  var type: String
}

extension Attribute {
  /// The elements of a composite `Value`, in the declaration order of its stored properties
  /// (nested composites in place), for a wrapper field at `offset` in objects: each addresses
  /// its place inside the wrapper's value directly, and the first also numbers the wrapper's
  /// slot (the composite's slot is its first element's).
  static func compositeElements(offset: Int) throws(CompositeLayoutError) -> [CompositeElement] {
    let valueOffset = offset + (MemoryLayout<Attribute<Value>>.offset(of: \Attribute<Value>.value) ?? 0)
    let slotOffset = offset + (MemoryLayout<Attribute<Value>>.offset(of: \Attribute<Value>.slot) ?? 0)
    var elements: [CompositeElement] = []
    try appendElements(of: Value.self, at: valueOffset, path: [], to: &elements)
    if !elements.isEmpty {
      elements[0].accessor = elements[0].accessor.numbering(slotOffset: slotOffset)
    }
    return elements
  }
}

/// Appends the elements of composite `type`, stored at `offset` in objects.
private func appendElements(
  of type: Any.Type, at offset: Int, path: [String], to elements: inout [CompositeElement]
) throws(CompositeLayoutError) {
  var fields: [ClassField] = []
  let complete =
    !(type is AnyClass)
    && _forEachField(of: type, options: []) { name, fieldOffset, fieldType, _ in
      fields.append(ClassField(name: String(cString: name), offset: fieldOffset, type: fieldType))
      return true
    }
  guard complete, !fields.isEmpty else {
    throw CompositeLayoutError(path: path, type: String(describing: type))
  }
  for field in fields {
    let fieldPath = path + [field.name]
    if let (codec, storage) = elementCodec(for: field.type) {
      elements.append(
        CompositeElement(
          path: fieldPath, accessor: makeElementAccessor(valueOffset: offset + field.offset, codec: codec),
          storage: storage))
    } else if field.type is any CompositeAttributeValue.Type {
      try appendElements(of: field.type, at: offset + field.offset, path: fieldPath, to: &elements)
    } else {
      throw CompositeLayoutError(path: fieldPath, type: String(describing: field.type))
    }
  }
}

/// The codec of an element of `type`, as `@Attribute` would store a property of that type:
/// directly, or raw for a `RawRepresentable` (optional or not); nil for any other type.
private func elementCodec(for type: Any.Type) -> (any ValueCodec, AttributeStorage)? {
  func codec<T>(_: T.Type) -> (any ValueCodec, AttributeStorage)? {
    if let standard = (Attribute<T>.self as? any StandardAttributeField.Type)?.makeStandardCodec() {
      return (standard, .standard)
    }
    if let raw = (Attribute<T>.self as? any RawAttributeField.Type)?.makeRawCodec()
      ?? (Attribute<T>.self as? any OptionalRawAttributeField.Type)?.makeOptionalRawCodec()
    {
      return (raw, .raw)
    }
    return nil
  }
  return _openExistential(type, do: codec)
}

/// Opens the codec existential so the accessor holds the concrete codec type.
private func makeElementAccessor<Codec: ValueCodec>(valueOffset: Int, codec: Codec) -> any AttributeAccessor {
  FieldAccessor<Codec.Value, Codec>(valueOffset: valueOffset, slotOffset: 0, codec: codec)
}
