/// The self-describing form of a model, kept as JSON in every store's metadata so that tools
/// can read a store without the application's Swift classes.
///
/// ```swift
/// let json = String(decoding: model.jsonRepresentation, as: UTF8.self)
/// let schema = try ModelSchema(json: model.jsonRepresentation)
/// ```
public struct ModelSchema: Codable, Sendable, Equatable {
  /// One entity, with its own (not inherited) attributes.
  public struct Entity: Codable, Sendable, Equatable {
    public var name: String
    public var superentity: String?
    public var table: String
    public var attributes: [Attribute]
  }

  /// One attribute.
  public struct Attribute: Codable, Sendable, Equatable {
    public var name: String
    public var column: String
    public var type: AttributeType
    public var storage: AttributeStorage
    public var optional: Bool
    public var preservedOnDeletion: Bool
    public var indexed: Bool
    public var unique: Bool
  }

  /// Entities, superentities before their subentities.
  public var entities: [Entity]
}
