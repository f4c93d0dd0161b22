/// A problem with a model's declarations, found when the model is built.
///
/// ```swift
/// do { _ = try ManagedObjectModel(Note.self) }
/// catch let error as ModelError { print(error.entity, error.property ?? "-", error.reason) }
/// ```
public struct ModelError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is wrong.
  public enum Reason: Sendable, Equatable {
    /// The model lists no entity.
    case noEntities
    /// Two entities have the same name.
    case duplicateEntity
    /// The entity's superclass is an entity that the model does not list.
    case missingSuperentity(String)
    /// A name is not usable as an SQL identifier, or is reserved (starts with `_`, or is `pk`).
    case invalidName(String)
    /// Two attributes of one table use the same column name.
    case duplicateColumn(String)
    /// The attribute's type cannot be stored the way its `@Attribute` asks.
    case unsupportedType(String)
    /// The Swift runtime did not describe the class's fields, or its `@Attribute` initializers
    /// did not run once each when an object was created (an `init` that assigns an attribute
    /// field itself).
    case unreadableLayout
    /// A relationship's destination class is not an entity of the model.
    case destinationNotInModel(String)
    /// A relationship's inverse is not a relationship of the destination, or does not point
    /// back at it.
    case invalidInverse(String)
    /// A uniqueness constraint names something other than an attribute or a to-one
    /// relationship whose key the entity's row holds.
    case invalidUniquenessConstraint(String)
    /// The entity was read from a store's schema without its class: its objects cannot be
    /// made (open the store with the application's model to work with objects).
    case noClass
  }

  /// The entity at fault.
  public let entity: String
  /// The property at fault, when the problem is one property's.
  public let property: String?
  /// What is wrong.
  public let reason: Reason

  /// An error about `entity` (and `property`, when it is one property's).
  public init(entity: String, property: String? = nil, reason: Reason) {
    self.entity = entity
    self.property = property
    self.reason = reason
  }

  /// The problem in one sentence, with the entity and property.
  public var description: String {
    let place = property.map { "\(entity).\($0)" } ?? entity
    switch reason {
    case .noEntities: return "the model has no entity"
    case .duplicateEntity: return "\(place): the model lists this entity twice"
    case .missingSuperentity(let name):
      return "\(place): its superclass \(name) is not an entity of the model"
    case .invalidName(let name):
      return
        "\(place): '\(name)' is not a valid name (letters, digits and _, not starting with _ or a digit, not 'pk')"
    case .duplicateColumn(let column): return "\(place): column '\(column)' is used twice in one table"
    case .unsupportedType(let type):
      return
        "\(place): \(type) is not a storable attribute type; "
        + "use an AttributeValue type, a RawRepresentable of one, or @Attribute(.codable)"
    case .destinationNotInModel(let type):
      return "\(place): the relationship's destination \(type) is not an entity of the model"
    case .invalidInverse(let why): return "\(place): \(why)"
    case .invalidUniquenessConstraint(let why): return "\(place): \(why)"
    case .noClass:
      return "\(place): this model was read from the store without the entity's class, so it has no objects"
    case .unreadableLayout:
      return
        "\(place): could not read this class's attribute fields "
        + "(declare options on @Attribute, do not assign attribute fields in init)"
    }
  }
}
