/// One attribute of an entity, as the model describes it.
///
/// ```swift
/// let title = model.entity(for: Note.self)?.attribute(named: "title")
/// print(title?.attributeType, title?.columnName)   // .string, "title"
/// ```
public struct AttributeDescription: Sendable {
  /// The Swift property name.
  public let name: String
  /// The SQLite column name (`persistentName:`, or the property name).
  public let columnName: String
  /// How the value is stored.
  public let attributeType: AttributeType
  /// Whether values are stored directly, as a raw value, or as JSON.
  public let storage: AttributeStorage
  /// Whether the property's type is an `Optional`.
  public let isOptional: Bool
  /// Whether the value is kept in the history tombstone when the object is deleted.
  public let isPreservedOnDeletion: Bool
  /// Whether the column has an index.
  public let isIndexed: Bool
  /// Whether the column has a unique index.
  public let isUnique: Bool
  /// The attribute's name in the model version before this one (`@Attribute(originalName:)`),
  /// when it was renamed: a migration renames its column and keeps its values.
  public internal(set) var originalName: String? = nil
  /// The entity that declares the attribute (a superentity, for an inherited attribute).
  public let entityName: String
  let accessor: any AttributeAccessor
  /// For an element of a composite attribute (`address.city`), the composite's name
  /// (`address`); nil for any other attribute.
  public internal(set) var compositeName: String? = nil
  /// For the key column of a to-one relationship, the relationship's name: such a column has
  /// a slot like an attribute (so changes, updates, conflicts and history treat it as one) but
  /// is not listed in `EntityDescription.attributes`.
  package var foreignKeyOf: String? = nil
  /// For a model without classes read from a model file: the default the file gives, in its
  /// stored form (a class's default is read from a new object instead).
  var constantDefault: PrimitiveValue? = nil
  /// The values the attribute accepts, checked by `save()`.
  var boundsCheck: AttributeBounds? = nil
  /// The attribute's own validation (`@Attribute(validate:)`), checked by `save()`.
  var validator: AttributeValidator? = nil

  /// Whether the attribute declares its own validation with `@Attribute(validate:)`.
  public var hasValidation: Bool { validator != nil }

  /// The bounds declared with `@Attribute(bounds:)`, as written (`0...150`), or nil.
  public var bounds: String? { boundsCheck?.description }

  /// The composite an attribute named `name` is an element of: the path's first component
  /// (`address` for `address.city`), nil for a name with no dot.
  static func compositeName(of name: String) -> String? {
    name.contains(".") ? String(name.prefix { $0 != "." }) : nil
  }
}
