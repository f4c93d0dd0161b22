import Foundation

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
    /// The entity name (its class name).
    public var name: String
    /// The superentity's name, for a subentity.
    public var superentity: String?
    /// The table that stores its rows: its root entity's name.
    public var table: String
    /// Its own attributes, in declaration order (inherited ones are the superentity's).
    public var attributes: [Attribute]
    /// Its own relationships, in declaration order; absent when it has none.
    public var relationships: [Relationship]?
    /// Its own compound uniqueness constraints, as property names; absent when it has none.
    public var uniquenessConstraints: [[String]]?
  }

  /// One relationship, and where its links are stored.
  public struct Relationship: Codable, Sendable, Equatable {
    /// The Swift property name.
    public var name: String
    /// The entity of the related objects.
    public var destination: String
    /// The destination's relationship that points back.
    public var inverse: String
    /// To-one, to-many or ordered to-many.
    public var kind: RelationshipKind
    /// What deleting an object does to the related objects.
    public var deleteRule: DeleteRule
    /// For a to-one: whether a save needs it set.
    public var required: Bool
    /// For a to-many: the fewest related objects allowed.
    public var minimumCount: Int?
    /// For a to-many: the most related objects allowed.
    public var maximumCount: Int?
    /// The key column in this entity's table, for a to-one whose row holds the key.
    public var column: String?
    /// The column that keeps the order: in the to-one side's table, or in the join table.
    public var orderColumn: String?
    /// The join table, for a many-to-many.
    public var joinTable: String?
    /// The join table's column that holds this side's keys.
    public var joinColumn: String?

    /// The join table this side writes (its keys are the `source` column), for the side of a
    /// many-to-many that owns it; nil for any other side.
    var ownedJoinTable: String? { joinColumn == "source" ? joinTable : nil }
  }

  /// One attribute.
  public struct Attribute: Codable, Sendable, Equatable {
    /// The Swift property name.
    public var name: String
    /// The column name.
    public var column: String
    /// How the value is stored.
    public var type: AttributeType
    /// Stored directly, as a raw value, or as JSON.
    public var storage: AttributeStorage
    /// Whether nil is allowed.
    public var optional: Bool
    /// Whether deletes keep the value in their tombstone.
    public var preservedOnDeletion: Bool
    /// Whether the column is indexed.
    public var indexed: Bool
    /// Whether the column has a unique index.
    public var unique: Bool
    /// The bounds `save()` checks (`0...150`); absent when none are declared.
    public var bounds: String?
  }

  /// Entities, superentities before their subentities.
  public var entities: [Entity]
}

extension ModelSchema {
  /// Whether the two schemas store alike: the same entities, properties and storage, in any
  /// order (a model file lists properties by name, classes in declaration order), with a
  /// uniqueness constraint of one attribute taken as that attribute's unique flag.
  ///
  /// ```swift
  /// let same = try XcodeModel(contentsOf: url).schema().storesAlike(classModel.schema)
  /// ```
  public func storesAlike(_ other: ModelSchema) -> Bool { sorted == other.sorted }

  /// Entities, attributes, relationships and constraints by name, bounds in one form.
  private var sorted: ModelSchema {
    ModelSchema(
      entities: entities.sorted { $0.name < $1.name }.map { entity in
        var entity = entity
        // A constraint of one attribute is the attribute's unique flag, however it was declared.
        let singles = Set(
          (entity.uniquenessConstraints ?? []).filter { $0.count == 1 }.joined().filter { name in
            entity.attributes.contains { $0.name == name }
          })
        entity.uniquenessConstraints = entity.uniquenessConstraints?.filter {
          $0.count != 1 || !singles.contains($0[0])
        }
        if entity.uniquenessConstraints?.isEmpty == true { entity.uniquenessConstraints = nil }
        entity.attributes = entity.attributes.sorted { $0.name < $1.name }.map { attribute in
          var attribute = attribute
          attribute.bounds = attribute.bounds.map(Attribute.canonicalBounds)
          if singles.contains(attribute.name) { attribute.unique = true }
          return attribute
        }
        entity.relationships = entity.relationships?.sorted { $0.name < $1.name }
        entity.uniquenessConstraints = entity.uniquenessConstraints?.map { $0.sorted() }.sorted {
          $0.lexicographicallyPrecedes($1)
        }
        return entity
      })
  }
}

extension ModelSchema {
  /// Reads a model's JSON form: a model's `jsonRepresentation`, or the `model_json` a store
  /// keeps in its metadata.
  ///
  /// ```swift
  /// let schema = try ModelSchema(json: model.jsonRepresentation)
  /// ```
  ///
  /// - Throws: `DecodingError` when `json` is not a model's JSON form.
  public init(json: Data) throws {
    self = try JSONDecoder().decode(ModelSchema.self, from: json)
  }
}

extension ModelSchema.Attribute {
  /// Bounds as written in Swift (`1...`, `...5`, `..<5`): a one-sided range prints as its
  /// type (`PartialRangeFrom<Int32>(lowerBound: 1)`), which names the Swift type; a model
  /// file knows the stored type only.
  static func canonicalBounds(_ bounds: String) -> String {
    for (prefix, label, form) in [
      ("PartialRangeFrom<", "lowerBound: ", "%@..."), ("PartialRangeThrough<", "upperBound: ", "...%@"),
      ("PartialRangeUpTo<", "upperBound: ", "..<%@"),
    ] where bounds.hasPrefix(prefix) {
      guard let start = bounds.range(of: label)?.upperBound, bounds.hasSuffix(")") else { return bounds }
      let value = String(bounds[start..<bounds.index(before: bounds.endIndex)])
      return form.replacingOccurrences(of: "%@", with: value)
    }
    return bounds
  }
}
