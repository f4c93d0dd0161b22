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
    guard !schema.entities.isEmpty else { throw ModelError(entity: "", reason: .noEntities) }
    var byName: [String: ModelSchema.Entity] = [:]
    var attributesByName: [String: [AttributeDescription]] = [:]
    for entity in schema.entities {
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
      var columns = Set(
        schema.entities.filter { $0.table == root && byName[$0.name] != nil }.flatMap(\.attributes).map {
          $0.column.lowercased()
        })
      var own: [AttributeDescription] = []
      for attribute in entity.attributes {
        for name in [attribute.name, attribute.column] where !Self.isValidIdentifier(name) {
          throw ModelError(entity: entity.name, property: attribute.name, reason: .invalidName(name))
        }
        guard columns.insert(attribute.column.lowercased()).inserted else {
          throw ModelError(entity: entity.name, property: attribute.name, reason: .duplicateColumn(attribute.column))
        }
        let accessor = SchemaAccessor(
          entity: entity.name, attribute: attribute.name,
          codec: SchemaCodec(attributeType: attribute.type, isOptional: attribute.optional))
        own.append(
          AttributeDescription(
            name: attribute.name, columnName: attribute.column, attributeType: attribute.type,
            storage: attribute.storage, isOptional: attribute.optional,
            isPreservedOnDeletion: attribute.preservedOnDeletion, isIndexed: attribute.indexed,
            isUnique: attribute.unique, entityName: entity.name, accessor: accessor))
      }
      attributesByName[entity.name] = (entity.superentity.flatMap { attributesByName[$0] } ?? []) + own
      byName[entity.name] = entity
    }
    let names = schema.entities.map(\.name)
    let indexByName = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Int32($0)) })
    func children(of name: String) -> [String] { schema.entities.filter { $0.superentity == name }.map(\.name) }
    func selfAndDescendants(of name: String) -> [String] { [name] + children(of: name).flatMap(selfAndDescendants) }
    let entities = schema.entities.map { entity in
      EntityDescription(
        name: entity.name, superentityName: entity.superentity, subentityNames: children(of: entity.name),
        rootName: entity.table, storedAttributes: attributesByName[entity.name] ?? [],
        selfAndDescendantNames: selfAndDescendants(of: entity.name), index: indexByName[entity.name] ?? 0,
        rootIndex: indexByName[entity.table] ?? 0, objectType: nil)
    }
    self.init(entities: entities, schema: schema, json: json)
  }
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
