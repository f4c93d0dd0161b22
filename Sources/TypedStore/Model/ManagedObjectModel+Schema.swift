import Foundation

// A model built from a store's schema alone, for tools that read a store without the
// application's classes (`PersistentStore(url:)`): it names the entities and attributes, so
// history, consumers, pruning and inspection work; no object of its entities is ever made.

extension ManagedObjectModel {
  /// A model with the entities and attributes `schema` describes and no classes: what a tool
  /// opens a store with when it does not have the application's code. Its `jsonRepresentation`
  /// is `json` as given (the bytes a store keeps), so its `versionHash` is the store's.
  ///
  /// ```swift
  /// let metadata = try PersistentStore.metadataForPersistentStore(at: url)
  /// let model = try ManagedObjectModel(schema: metadata.schema, json: metadata.modelJSON)
  /// ```
  ///
  /// - Throws: `ModelError` for a schema whose names are not valid identifiers, whose
  ///   superentities are missing or come after their subentities, or whose tables are not
  ///   their root entities.
  public convenience init(schema: ModelSchema, json: Data) throws {
    try self.init(schema: schema, json: json, details: SchemaDetails())
  }

  /// A model of `schema` with what a schema does not record (defaults, renames) from `details`:
  /// a model file's.
  convenience init(schema: ModelSchema, json: Data, details: SchemaDetails) throws {
    guard !schema.entities.isEmpty else { throw ModelError(entity: "", reason: .noEntities) }
    var byName: [String: ModelSchema.Entity] = [:]
    var attributesByName: [String: [AttributeDescription]] = [:]
    for entity in schema.entities {
      try Self.checkSchemaEntity(entity, byName: byName)
      let root = entity.table
      var columns = Set(
        schema.entities.filter { $0.table == root && byName[$0.name] != nil }.flatMap(\.attributes).map {
          $0.column.lowercased()
        })
      var own: [AttributeDescription] = []
      for attribute in entity.attributes {
        for (name, valid) in [(attribute.name, Self.isValidAttributeName), (attribute.column, Self.isValidIdentifier)]
        where !valid(name) {
          throw ModelError(entity: entity.name, property: attribute.name, reason: .invalidName(name))
        }
        guard columns.insert(attribute.column.lowercased()).inserted else {
          throw ModelError(entity: entity.name, property: attribute.name, reason: .duplicateColumn(attribute.column))
        }
        let accessor = SchemaAccessor(
          entity: entity.name, attribute: attribute.name,
          codec: SchemaCodec(attributeType: attribute.type, isOptional: attribute.optional))
        var description = AttributeDescription(
          name: attribute.name, columnName: attribute.column, attributeType: attribute.type,
          storage: attribute.storage, isOptional: attribute.optional,
          isPreservedOnDeletion: attribute.preservedOnDeletion, isIndexed: attribute.indexed,
          isUnique: attribute.unique, entityName: entity.name, accessor: accessor,
          compositeName: AttributeDescription.compositeName(of: attribute.name))
        description.originalName = details.originalNames[entity.name]?[attribute.name]
        description.constantDefault = details.defaults[entity.name]?[attribute.name]
        own.append(description)
      }
      attributesByName[entity.name] = own
      byName[entity.name] = entity
    }
    try Self.checkSchemaRelationships(schema)
    let names = schema.entities.map(\.name)
    let indexByName = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Int32($0)) })
    func children(of name: String) -> [String] { schema.entities.filter { $0.superentity == name }.map(\.name) }
    func selfAndDescendants(of name: String) -> [String] { [name] + children(of: name).flatMap(selfAndDescendants) }
    let links = SchemaLayout(schema, ownAttributes: attributesByName, details: details)
    let entities = schema.entities.map { entity in
      EntityDescription(
        name: entity.name, superentityName: entity.superentity, subentityNames: children(of: entity.name),
        rootName: entity.table, storedAttributes: links.storedAttributes[entity.name] ?? [],
        relationships: links.relationships[entity.name] ?? [],
        selfAndDescendantNames: selfAndDescendants(of: entity.name), index: indexByName[entity.name] ?? 0,
        rootIndex: indexByName[entity.table] ?? 0, objectType: nil, uniqueness: links.uniqueness[entity.name] ?? [],
        ownCompoundUniqueness: links.ownCompoundUniqueness[entity.name] ?? [],
        originalName: details.originalEntityNames[entity.name])
    }
    self.init(entities: entities, schema: schema, json: json)
  }
}

extension ManagedObjectModel {
  /// A schema entity's name, uniqueness and superentity, and that its table is its root's.
  fileprivate static func checkSchemaEntity(_ entity: ModelSchema.Entity, byName: [String: ModelSchema.Entity]) throws {
    guard Self.isValidIdentifier(entity.name) else {
      throw ModelError(entity: entity.name, reason: .invalidName(entity.name))
    }
    guard byName[entity.name] == nil else { throw ModelError(entity: entity.name, reason: .duplicateEntity) }
    var root = entity.name
    if let parent = entity.superentity {
      guard let parentEntity = byName[parent] else {
        throw ModelError(entity: entity.name, reason: .missingSuperentity(parent))
      }
      root = parentEntity.table
    }
    guard entity.table == root else { throw ModelError(entity: entity.name, reason: .invalidName(entity.table)) }
  }
}

extension ManagedObjectModel {
  /// Relationship names are identifiers, and their key and order columns clash with no other
  /// column of their table: the checks a class model makes as it lays them out.
  fileprivate static func checkSchemaRelationships(_ schema: ModelSchema) throws {
    var columnsByTable: [String: Set<String>] = [:]
    for entity in schema.entities {
      for attribute in entity.attributes {
        columnsByTable[entity.table, default: []].insert(attribute.column.lowercased())
      }
    }
    for entity in schema.entities {
      for relationship in entity.relationships ?? [] {
        guard Self.isValidIdentifier(relationship.name) else {
          throw ModelError(entity: entity.name, property: relationship.name, reason: .invalidName(relationship.name))
        }
        for column in [relationship.column, relationship.column == nil ? nil : relationship.orderColumn]
        where column != nil {
          guard let column, columnsByTable[entity.table, default: []].insert(column.lowercased()).inserted else {
            throw ModelError(
              entity: entity.name, property: relationship.name, reason: .duplicateColumn(column ?? ""))
          }
        }
      }
    }
  }
}

/// What a model file says that a schema does not record: each attribute's default (in its
/// stored form) and the names entities and properties had in the version before.
struct SchemaDetails: Sendable {
  /// Entity → attribute → the value every new object gets.
  var defaults: [String: [String: PrimitiveValue]] = [:]
  /// Entity → property → its name in the version before.
  var originalNames: [String: [String: String]] = [:]
  /// Entity → its name in the version before.
  var originalEntityNames: [String: String] = [:]
}

/// The stored attributes, relationships (with the key columns their rows hold) and
/// uniqueness constraints a schema describes, laid out as the classes' model lays them out: a
/// model read from a schema stores and migrates links and constraints as that model does,
/// though it makes no objects.
private struct SchemaLayout {
  var storedAttributes: [String: [AttributeDescription]] = [:]
  var relationships: [String: [RelationshipDescription]] = [:]
  var uniqueness: [String: [[Int32]]] = [:]
  var ownCompoundUniqueness: [String: [[Int32]]] = [:]

  init(_ schema: ModelSchema, ownAttributes: [String: [AttributeDescription]], details: SchemaDetails) {
    // Each entity's full list of relationships (inherited first), as (declaring entity, relationship).
    var full: [String: [(entity: String, relationship: ModelSchema.Relationship)]] = [:]
    for entity in schema.entities {
      full[entity.name] =
        (entity.superentity.flatMap { full[$0] } ?? []) + (entity.relationships ?? []).map { (entity.name, $0) }
    }
    for entity in schema.entities {
      var stored = (entity.superentity.flatMap { storedAttributes[$0] } ?? [])
      let inheritedCount = stored.count
      stored += ownAttributes[entity.name] ?? []
      var own: [RelationshipDescription] = []
      for relationship in entity.relationships ?? [] {
        var foreignKeySlot: Int32?
        if let column = relationship.column {
          foreignKeySlot = Int32(stored.count)
          stored.append(
            AttributeDescription(
              name: relationship.name, columnName: column, attributeType: .integer64, storage: .standard,
              isOptional: true, isPreservedOnDeletion: false, isIndexed: true, isUnique: false,
              entityName: entity.name,
              accessor: SchemaAccessor(
                entity: entity.name, attribute: relationship.name,
                codec: SchemaCodec(attributeType: .integer64, isOptional: true)),
              foreignKeyOf: relationship.name))
        }
        let inverseList = full[relationship.destination] ?? []
        let inverseIndex = inverseList.firstIndex { $0.relationship.name == relationship.inverse } ?? 0
        let inverse = inverseIndex < inverseList.count ? inverseList[inverseIndex].relationship : nil
        own.append(
          RelationshipDescription(
            name: relationship.name, kind: relationship.kind, destinationEntityName: relationship.destination,
            inverseName: relationship.inverse, deleteRule: relationship.deleteRule, isRequired: relationship.required,
            minimumCount: relationship.minimumCount, maximumCount: relationship.maximumCount, entityName: entity.name,
            storage: Self.storage(of: relationship, inverse: inverse),
            accessor: SchemaRelationshipAccessor(kind: relationship.kind), inverseIndex: Int32(inverseIndex),
            foreignKeySlot: foreignKeySlot, originalName: details.originalNames[entity.name]?[relationship.name]))
      }
      storedAttributes[entity.name] = stored
      relationships[entity.name] = (entity.superentity.flatMap { relationships[$0] } ?? []) + own
      let single = stored.indices.dropFirst(inheritedCount).filter { stored[$0].isUnique }.map { [Int32($0)] }
      let compound = (entity.uniquenessConstraints ?? []).map { names in
        names.compactMap { name in stored.firstIndex { $0.name == name }.map(Int32.init) }
      }
      ownCompoundUniqueness[entity.name] = compound
      uniqueness[entity.name] = (entity.superentity.flatMap { uniqueness[$0] } ?? []) + single + compound
    }
  }

  /// Where a relationship's links are, from its schema and its inverse's.
  static func storage(of relationship: ModelSchema.Relationship, inverse: ModelSchema.Relationship?)
    -> RelationshipStorage
  {
    if let column = relationship.column {
      return .foreignKey(column: column, orderColumn: relationship.orderColumn)
    }
    if let table = relationship.joinTable, let own = relationship.joinColumn {
      let isOwner = own == "source"
      return .joinTable(
        table: table, ownColumn: own, otherColumn: isOwner ? "target" : "source",
        orderColumn: relationship.orderColumn, isOwner: isOwner)
    }
    return .inverseForeignKey(column: inverse?.column ?? relationship.inverse, orderColumn: relationship.orderColumn)
  }
}

/// The accessor of a relationship known only from a schema: there is no class, so no object
/// of its entity exists (`ContextState.key(for:)` refuses such entities) and none of these
/// is called with one; they do nothing.
final class SchemaRelationshipAccessor: RelationshipAccessor {
  let kind: RelationshipKind
  var destinationType: ManagedObject.Type { ManagedObject.self }
  var slotFieldOffset: Int { 0 }

  init(kind: RelationshipKind) { self.kind = kind }

  func objects(in object: ManagedObject) -> [ManagedObject] { [] }
  func setObjects(_ objects: [ManagedObject], in object: ManagedObject) {}
  func insert(_ element: ManagedObject, at index: Int?, in object: ManagedObject) {}
  func remove(_ element: ManagedObject, in object: ManagedObject) {}
  func contains(_ element: ManagedObject, in object: ManagedObject) -> Bool { false }
  func isFault(_ object: ManagedObject) -> Bool { false }
  func makeFault(_ object: ManagedObject, foreignKey: Int64) {}
  func makeNewObjectFault(_ object: ManagedObject, foreignKey: Int64) {}
  func fulfill(_ object: ManagedObject, with objects: [ManagedObject]) {}
  func fulfill(_ object: ManagedObject, withUnretained objects: UnsafeBufferPointer<Unmanaged<ManagedObject>>) {}
  func foreignKey(in object: ManagedObject) -> Int64 { 0 }
  func setSlot(_ slot: Int32, in object: ManagedObject) {}
  func boxedValue(holding objects: [ManagedObject]) -> Any { objects }
}

/// The codec of an attribute known only from a schema: its values stay as SQLite stores them.
struct SchemaCodec: ValueCodec {
  let attributeType: AttributeType
  let isOptional: Bool
  func encode(_ value: PrimitiveValue) -> PrimitiveValue { value }
  func decode(_ primitive: PrimitiveValue) -> PrimitiveValue { primitive }
}

/// The accessor of an attribute known only from a schema. There is no class, so no object of
/// the entity exists to read or write: the contexts never make one (`ContextState.key(for:)`
/// refuses such entities), and these methods only report that.
final class SchemaAccessor: AttributeAccessor {
  let codec: any ValueCodec
  let directField = DirectField(kind: .none, valueOffset: 0, slotOffset: 0)
  private let entity: String
  private let attribute: String

  init(entity: String, attribute: String, codec: SchemaCodec) {
    self.entity = entity
    self.attribute = attribute
    self.codec = codec
  }

  private var noClass: ModelError {
    ModelError(entity: entity, property: attribute, reason: .noClass)
  }

  func encode(_ object: ManagedObject) throws -> PrimitiveValue { throw noClass }
  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws { throw noClass }
  func decode(_ value: PrimitiveValue, slot: Int32, into object: ManagedObject) throws { throw noClass }
  func setSlot(_ slot: Int32, in object: ManagedObject) {}
  func currentValue(of object: ManagedObject) -> Any { Optional<Any>.none as Any }
}
