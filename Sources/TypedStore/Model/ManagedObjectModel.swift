import Foundation
import Synchronization

/// The entities of an application, built from its `ManagedObject` subclasses.
///
/// ```swift
/// let model = try ManagedObjectModel(Folder.self, Note.self)
/// print(model.versionHash)   // changes whenever the stored shape changes
/// ```
///
/// Building a model validates every declaration and throws a `ModelError` naming the entity
/// and property at fault. A subclass of an entity class is a subentity: it shares its root
/// entity's table. The model's JSON form (`jsonRepresentation`) is what a store keeps; its
/// `versionHash` is the SHA-256 of that JSON, so two models hash alike exactly when they store
/// alike.
public final class ManagedObjectModel: Sendable {
  /// The entities, superentities before subentities.
  public let entities: [EntityDescription]
  /// The model's self-describing form.
  public let schema: ModelSchema
  /// The schema as canonical JSON (sorted keys), as stored in a store's metadata.
  public let jsonRepresentation: Data
  /// SHA-256 of `jsonRepresentation`, as 64 hex digits.
  public let versionHash: String
  /// Whether any entity has a relationship.
  let hasRelationships: Bool
  /// Whether `save()` has rules to check (bounds, required or counted relationships).
  let hasValidationRules: Bool
  /// Whether any entity has a uniqueness constraint.
  let hasUniqueness: Bool

  private let entitiesByName: [String: EntityDescription]
  private let entitiesByType: [ObjectIdentifier: EntityDescription]
  /// What each key path resolved to (`KeyPathResolution.swift`): requests resolve the same
  /// key paths again and again, and resolving one takes several probes.
  let resolvedKeyPaths = Mutex<ResolvedKeyPathCache>(ResolvedKeyPathCache())

  /// Builds a model from entity classes, in any order.
  public convenience init(_ types: ManagedObject.Type...) throws {
    try self.init(types)
  }

  /// Builds a model from entity classes, in any order.
  public convenience init(_ types: [ManagedObject.Type]) throws {
    guard !types.isEmpty else { throw ModelError(entity: "", reason: .noEntities) }
    let declared = try Self.readDeclarations(types)
    let entities = try Self.describe(declared)
    let schema = ModelSchema(entities: entities.map(Self.schemaEntity))
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    self.init(entities: entities, schema: schema, json: try encoder.encode(schema))
    try checkUniquenessKeyPaths()
  }

  /// Each uniqueness constraint's key paths, resolved now that probes can hold values: a
  /// computed property with a setter reads one attribute as a stored one does, and only the
  /// values it returns tell them apart.
  private func checkUniquenessKeyPaths() throws {
    for entity in entities where entity.hasClass {
      for constraint in entity.objectType.uniquenessConstraints {
        for keyPath in constraint.keyPaths where resolve(keyPath, on: entity, maximumDepth: 0) == nil {
          throw ModelError(
            entity: entity.name,
            reason: .invalidUniquenessConstraint(
              "\(describe(keyPath, on: entity)) does not name one stored property (a computed property is none)"))
        }
      }
    }
  }

  init(entities: [EntityDescription], schema: ModelSchema, json: Data) {
    self.entities = entities
    self.schema = schema
    self.jsonRepresentation = json
    self.versionHash = SHA256.hex(of: json)
    self.hasRelationships = entities.contains { !$0.relationships.isEmpty }
    self.hasValidationRules = entities.contains(where: \.hasValidationRules)
    self.hasUniqueness = entities.contains { !$0.uniqueness.isEmpty }
    self.entitiesByName = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0) })
    self.entitiesByType = Dictionary(
      uniqueKeysWithValues: entities.filter(\.hasClass).map { (ObjectIdentifier($0.objectType), $0) })
  }

  // MARK: - Lookup

  /// The entity with this name.
  public func entity(named name: String) -> EntityDescription? { entitiesByName[name] }

  /// The entity of this class.
  public func entity(for type: ManagedObject.Type) -> EntityDescription? {
    entitiesByType[ObjectIdentifier(type)]
  }

  /// Whether `name` is `ancestor` or one of its subentities.
  public func isEntity(_ name: String, kindOf ancestor: String) -> Bool {
    var current: String? = name
    while let entity = current.flatMap({ entitiesByName[$0] }) {
      if entity.name == ancestor { return true }
      current = entity.superentityName
    }
    return false
  }

  /// The slot of the attribute a key path names on `Root`'s entity, or nil when it names
  /// none: a relationship, a computed property (even one that reads an attribute), a plain
  /// `var` (see `resolve(_:on:)`).
  func attributeSlot<Root: ManagedObject>(for keyPath: PartialKeyPath<Root>) -> Int32? {
    guard let entity = entity(for: Root.self), let slot = attributeSlot(for: keyPath, on: entity) else { return nil }
    return Int32(slot)
  }

  /// A detached object of `entity` that records the slot of each attribute (and the marker
  /// of each relationship) read of it in `keyPathRecorder`; nil for an entity without a class.
  func probe(of entity: EntityDescription) -> ManagedObject? {
    guard entity.hasClass else { return nil }
    let probe = entity.objectType.init()
    probe.entityStorage = entity
    probe.assignSlots()
    probe.keyPathRecorder = []
    probe._needsAccessHook = true
    return probe
  }

  /// The index of the relationship a key path names (`\Folder.notes`), or nil when it names
  /// anything else.
  func relationshipIndex<Root: ManagedObject>(for keyPath: PartialKeyPath<Root>) -> Int? {
    guard let entity = entity(for: Root.self) else { return nil }
    return relationshipIndex(for: keyPath, on: entity)
  }

  // MARK: - Building

  private struct Declared {
    let name: String
    let type: ManagedObject.Type
    let superName: String?
    let fields: [(name: String, offset: Int, declaration: AttributeDeclaration, accessor: any AttributeAccessor)]
    let relationships: [DeclaredRelationship]
  }

  private struct DeclaredRelationship {
    let name: String
    let offset: Int
    let declaration: RelationshipDeclaration
    let accessor: any RelationshipAccessor
  }

  private static let reservedColumns: Set<String> = ["pk"]

  /// Whether `name` can name an attribute: an identifier, or the path of a composite's
  /// element (`address.city`), identifiers joined by dots.
  static func isValidAttributeName(_ name: String) -> Bool {
    name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { isValidIdentifier(String($0)) }
  }

  static func isValidIdentifier(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, first != "_", !("0"..."9").contains(first) else {
      return false
    }
    return name.unicodeScalars.allSatisfy {
      ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
    } && !reservedColumns.contains(name.lowercased())
  }

  private static func readDeclarations(_ types: [ManagedObject.Type]) throws -> [Declared] {
    var names = Set<String>()
    var typeNames: [ObjectIdentifier: String] = [:]
    for type in types {
      let name = entityName(of: type)
      guard isValidIdentifier(name) else {
        throw ModelError(entity: name, reason: .invalidName(name))
      }
      guard names.insert(name).inserted else { throw ModelError(entity: name, reason: .duplicateEntity) }
      typeNames[ObjectIdentifier(type)] = name
    }
    return try types.map { type in
      let name = entityName(of: type)
      var superName: String?
      if let superclass = _getSuperclass(type), superclass != ManagedObject.self {
        guard let entityName = typeNames[ObjectIdentifier(superclass)] else {
          throw ModelError(entity: name, reason: .missingSuperentity(String(describing: superclass)))
        }
        superName = entityName
      }
      guard let fields = storedFields(of: type) else {
        throw ModelError(entity: name, reason: .unreadableLayout)
      }
      let recorded = DeclarationRecorder.declarations { _ = type.init() }
      let attributeFields = fields.filter { $0.type is any AttributeField.Type }
      let declarations = try inFieldOrder(
        recorded.attributes, of: type, name: name, isField: { $0 is any AttributeField.Type })
      var attributes: [(String, Int, AttributeDeclaration, any AttributeAccessor)] = []
      for (field, declaration) in zip(attributeFields, declarations) {
        guard let attributeType = field.type as? any AttributeField.Type else { continue }
        let property = field.name.hasPrefix("_") ? String(field.name.dropFirst()) : field.name
        if declaration.options.isComposite {
          attributes += try compositeFields(
            property, of: attributeType, at: field.offset, declaration: declaration, entity: name)
          continue
        }
        guard let accessor = attributeType.makeAccessor(offset: field.offset, storage: declaration.storage) else {
          throw ModelError(
            entity: name, property: property,
            reason: .unsupportedType(String(describing: field.type)))
        }
        attributes.append((property, field.offset, declaration, accessor))
      }
      let relationshipFields = fields.filter { $0.type is any RelationshipField.Type }
      let relationshipDeclarations = try inFieldOrder(
        recorded.relationships, of: type, name: name, isField: { $0 is any RelationshipField.Type })
      var relationships: [DeclaredRelationship] = []
      for (field, declaration) in zip(relationshipFields, relationshipDeclarations) {
        let property = field.name.hasPrefix("_") ? String(field.name.dropFirst()) : field.name
        guard let fieldType = field.type as? any RelationshipField.Type,
          let accessor = fieldType.makeAccessor(offset: field.offset, makeValue: declaration.makeValue)
        else {
          throw ModelError(entity: name, property: property, reason: .unsupportedType(String(describing: field.type)))
        }
        relationships.append(
          DeclaredRelationship(name: property, offset: field.offset, declaration: declaration, accessor: accessor))
      }
      return Declared(
        name: name, type: type, superName: superName, fields: attributes, relationships: relationships)
    }
  }

  /// The fields of a composite attribute's elements: each an attribute named by its path
  /// (`address.city`) and stored in its own column (`address_city`, after the composite's
  /// `persistentName:` when it has one), sharing the composite's options and field offset.
  private static func compositeFields(
    _ property: String, of attributeType: any AttributeField.Type, at offset: Int, declaration: AttributeDeclaration,
    entity: String
  ) throws -> [(String, Int, AttributeDeclaration, any AttributeAccessor)] {
    let elements: [CompositeElement]
    do {
      elements = try attributeType.compositeElements(offset: offset)
    } catch {
      let element = ([property] + error.path).joined(separator: ".")
      throw ModelError(
        entity: entity, property: property,
        reason: .unsupportedType(
          error.path.isEmpty
            ? "\(error.type) (a composite must be a struct with stored properties)"
            : "\(error.type) (\(element): a composite's elements are attribute values or composites)"))
    }
    let options = declaration.options
    return elements.map { element in
      let tail = element.path.joined(separator: ".")
      let elementOptions = AttributeOptions(
        persistentName: ([options.persistentName ?? property] + element.path).joined(separator: "_"),
        originalName: options.originalName.map { "\($0).\(tail)" }, preservedOnDeletion: options.preservedOnDeletion,
        indexed: false, unique: false)
      return (
        "\(property).\(tail)", offset, AttributeDeclaration(storage: element.storage, options: elementOptions),
        element.accessor
      )
    }
  }

  /// `type.entityName`, or the class name when the class only inherits its superclass's
  /// override (two entities cannot share a name).
  private static func entityName(of type: ManagedObject.Type) -> String {
    let name = type.entityName
    if let superclass = _getSuperclass(type) as? ManagedObject.Type, superclass != ManagedObject.self,
      superclass.entityName == name
    {
      return String(describing: type)
    }
    return name
  }

  /// The recorded declarations of `type`'s fields of one kind, in field order (superclass
  /// fields first).
  ///
  /// Creating a prototype runs every `@Attribute` and `@Relationship` initializer once: a
  /// subclass's own before its superclass's, each class's in declaration order
  /// (`DeclarationRecorder`). Field order puts superclass fields first, so the recorded runs
  /// are reversed class by class.
  private static func inFieldOrder<Declaration>(
    _ recorded: [Declaration], of type: ManagedObject.Type, name: String, isField: (Any.Type) -> Bool
  ) throws -> [Declaration] {
    // Own field counts, from `type` up to the first class below ManagedObject.
    var ownCounts: [Int] = []
    var current: AnyClass? = type
    while let cls = current, cls != ManagedObject.self {
      let all = storedFields(of: cls)?.filter { isField($0.type) }.count ?? 0
      let inherited = _getSuperclass(cls).flatMap { storedFields(of: $0) }?.filter { isField($0.type) }.count ?? 0
      ownCounts.append(all - inherited)
      current = _getSuperclass(cls)
    }
    let fieldCount = storedFields(of: type)?.filter { isField($0.type) }.count ?? 0
    guard recorded.count == fieldCount, ownCounts.reduce(0, +) == fieldCount else {
      // An initializer that assigns a wrapped field itself runs the wrapper twice.
      throw ModelError(entity: name, reason: .unreadableLayout)
    }
    var runs: [[Declaration]] = []
    var start = 0
    for count in ownCounts {
      runs.append(Array(recorded[start..<start + count]))
      start += count
    }
    return runs.reversed().flatMap { $0 }
  }

  /// The entities' descriptions, from their declarations: superentities first, each entity's
  /// own attributes and relationships after the inherited ones, the columns of each table
  /// checked for clashes.
  private static func describe(_ declared: [Declared]) throws -> [EntityDescription] {
    let ordered = superentitiesFirst(declared)
    let byName = Dictionary(uniqueKeysWithValues: ordered.map { ($0.name, $0) })
    func root(of name: String) -> String {
      var current = name
      while let parent = byName[current]?.superName { current = parent }
      return current
    }
    func children(of name: String) -> [String] {
      ordered.filter { $0.superName == name }.map(\.name)
    }
    func selfAndDescendants(of name: String) -> [String] {
      [name] + children(of: name).flatMap(selfAndDescendants)
    }
    let indexByName = Dictionary(uniqueKeysWithValues: ordered.enumerated().map { ($1.name, Int32($0)) })
    let links = try relationshipLinks(ordered, byName: byName)
    var columns = ColumnClaims()
    var result: [EntityDescription] = []
    var storedByName: [String: [AttributeDescription]] = [:]
    var uniquenessByName: [String: [[Int32]]] = [:]
    var relationshipsByName: [String: [RelationshipDescription]] = [:]
    for entity in ordered {
      let inherited = entity.superName.flatMap { storedByName[$0] } ?? []
      let inheritedOffsets = Set(
        entity.superName.flatMap { byName[$0] }?.fields.map(\.offset) ?? [])
      let table = root(of: entity.name)
      var own = try ownAttributes(of: entity, skipping: inheritedOffsets, table: table, columns: &columns)
      let inheritedRelationships = entity.superName.flatMap { relationshipsByName[$0] } ?? []
      let ownRelationships = try describe(
        links.relationships(of: entity.name), of: entity.name, table: table, keySlotsFrom: inherited.count,
        attributes: &own, columns: &columns)
      // Inherited attributes keep their descriptions but use this class's field offsets,
      // which are the same: a subclass lays out its superclass's fields first.
      let all = inherited + own
      storedByName[entity.name] = all
      relationshipsByName[entity.name] = inheritedRelationships + ownRelationships
      let inheritedUniqueness = entity.superName.flatMap { uniquenessByName[$0] } ?? []
      let single = own.indices.filter { own[$0].isUnique }.map { [Int32(inherited.count + $0)] }
      let compound = try resolveUniqueness(
        entity.type, name: entity.name, stored: all, relationships: inheritedRelationships + ownRelationships
      ).filter { !inheritedUniqueness.contains($0) }
      uniquenessByName[entity.name] = inheritedUniqueness + single + compound
      result.append(
        EntityDescription(
          name: entity.name, superentityName: entity.superName, subentityNames: children(of: entity.name),
          rootName: table, storedAttributes: all, relationships: inheritedRelationships + ownRelationships,
          selfAndDescendantNames: selfAndDescendants(of: entity.name),
          index: indexByName[entity.name] ?? 0, rootIndex: indexByName[table] ?? 0,
          objectType: entity.type, uniqueness: uniquenessByName[entity.name] ?? [], ownCompoundUniqueness: compound,
          originalName: entity.type.originalEntityName))
    }
    return result
  }

  /// Superentities before subentities, otherwise by name: the order (and so the JSON and the
  /// version hash) does not depend on the order the caller listed the classes in.
  private static func superentitiesFirst(_ declared: [Declared]) -> [Declared] {
    var ordered: [Declared] = []
    var placed = Set<String>()
    var pending = declared
    while !pending.isEmpty {
      let ready = pending.filter { $0.superName.map(placed.contains) ?? true }.sorted { $0.name < $1.name }
      ordered += ready
      placed.formUnion(ready.map(\.name))
      pending.removeAll { placed.contains($0.name) }
    }
    return ordered
  }

  /// Each entity's own relationships (a class's fields include its superclass's), linked to
  /// their destinations and inverses.
  private static func relationshipLinks(_ ordered: [Declared], byName: [String: Declared]) throws
    -> RelationshipLinks
  {
    try RelationshipLinks(
      ordered.map { entity in
        let inheritedOffsets = Set(entity.superName.flatMap { byName[$0] }?.relationships.map(\.offset) ?? [])
        return RelationshipLinks.Entity(
          name: entity.name, superName: entity.superName, type: entity.type,
          relationships: entity.relationships.filter { !inheritedOffsets.contains($0.offset) }.map {
            ($0.name, $0.declaration, $0.accessor)
          })
      })
  }

  /// The columns each table's entities have claimed, to refuse two properties of one table
  /// that store into the same column.
  private struct ColumnClaims {
    private var byTable: [String: [String: String]] = [:]  // table → column → entity.property

    mutating func claim(_ column: String, table: String, entity: String, property: String) throws {
      let key = column.lowercased()  // SQLite identifiers are case-insensitive
      if byTable[table, default: [:]][key] != nil {
        throw ModelError(entity: entity, property: property, reason: .duplicateColumn(column))
      }
      byTable[table, default: [:]][key] = "\(entity).\(property)"
    }
  }

  /// The attributes an entity declares itself (not those of its superentity's fields).
  private static func ownAttributes(
    of entity: Declared, skipping inheritedOffsets: Set<Int>, table: String, columns: inout ColumnClaims
  ) throws -> [AttributeDescription] {
    var own: [AttributeDescription] = []
    for field in entity.fields where !inheritedOffsets.contains(field.offset) {
      let options = field.declaration.options
      let column = options.persistentName ?? field.name
      guard isValidAttributeName(field.name) else {
        throw ModelError(entity: entity.name, property: field.name, reason: .invalidName(field.name))
      }
      guard isValidIdentifier(column) else {
        throw ModelError(entity: entity.name, property: field.name, reason: .invalidName(column))
      }
      try columns.claim(column, table: table, entity: entity.name, property: field.name)
      let codec = field.accessor.codec
      own.append(
        AttributeDescription(
          name: field.name, columnName: column, attributeType: codec.attributeType,
          storage: field.declaration.storage, isOptional: codec.isOptional,
          isPreservedOnDeletion: options.preservedOnDeletion, isIndexed: options.indexed,
          isUnique: options.unique, originalName: options.originalName, entityName: entity.name,
          accessor: field.accessor, compositeName: AttributeDescription.compositeName(of: field.name),
          boundsCheck: options.bounds, validator: options.validator))
    }
    return own
  }

  /// An entity's own relationships, after the inherited ones (same indexes in subentities); a
  /// to-one that holds the key adds a stored attribute to `attributes` (slots after the
  /// `keySlotsFrom` inherited ones).
  private static func describe(
    _ relationships: [RelationshipLinks.Resolved], of entityName: String, table: String, keySlotsFrom inherited: Int,
    attributes own: inout [AttributeDescription], columns: inout ColumnClaims
  ) throws -> [RelationshipDescription] {
    var described: [RelationshipDescription] = []
    for relationship in relationships {
      guard isValidIdentifier(relationship.name) else {
        throw ModelError(entity: entityName, property: relationship.name, reason: .invalidName(relationship.name))
      }
      var foreignKeySlot: Int32?
      if case .foreignKey(let column, let orderColumn) = relationship.storage {
        try columns.claim(column, table: table, entity: entityName, property: relationship.name)
        if let orderColumn {
          try columns.claim(orderColumn, table: table, entity: entityName, property: relationship.name)
        }
        foreignKeySlot = Int32(inherited + own.count)
        own.append(
          AttributeDescription(
            name: relationship.name, columnName: column, attributeType: .integer64, storage: .standard,
            isOptional: true, isPreservedOnDeletion: false, isIndexed: true, isUnique: false,
            entityName: entityName,
            accessor: ForeignKeyAccessor(
              relationship: relationship.accessor, entityName: entityName, relationshipName: relationship.name),
            foreignKeyOf: relationship.name))
      }
      described.append(
        RelationshipDescription(
          name: relationship.name, kind: relationship.accessor.kind,
          destinationEntityName: relationship.destination, inverseName: relationship.inverseName,
          deleteRule: relationship.declaration.deleteRule, isRequired: relationship.declaration.isRequired,
          minimumCount: relationship.declaration.minimumCount, maximumCount: relationship.declaration.maximumCount,
          entityName: entityName, storage: relationship.storage, accessor: relationship.accessor,
          inverseIndex: relationship.inverseIndex, foreignKeySlot: foreignKeySlot,
          originalName: relationship.declaration.originalName))
    }
    return described
  }

  /// The slots of each compound uniqueness constraint `type` declares, found by reading each
  /// key path on a prototype whose fields record their slots.
  private static func resolveUniqueness(
    _ type: ManagedObject.Type, name: String, stored: [AttributeDescription], relationships: [RelationshipDescription]
  ) throws -> [[Int32]] {
    let constraints = type.uniquenessConstraints
    guard !constraints.isEmpty else { return [] }
    let probe = type.init()
    for (slot, attribute) in stored.enumerated() { attribute.accessor.setSlot(Int32(slot), in: probe) }
    for (index, relationship) in relationships.enumerated() { relationship.accessor.setSlot(Int32(index), in: probe) }
    func names(_ slot: Int32) -> String {
      slot >= 0 ? stored[Int(slot)].name : relationships[Int(-slot - 1)].name
    }
    return try constraints.map { constraint in
      let slots = try constraint.keyPaths.map { keyPath -> Int32 in
        probe.keyPathRecorder = []
        probe._needsAccessHook = true
        let path: AnyKeyPath = keyPath
        _ = probe[keyPath: path]
        let read = probe.keyPathRecorder ?? []
        probe.keyPathRecorder = nil
        if read.count == 1, let slot = read.first, slot >= 0, let composite = stored[Int(slot)].compositeName {
          throw ModelError(
            entity: name, property: composite,
            reason: .invalidUniquenessConstraint("a composite attribute or its elements cannot be constrained"))
        }
        guard read.count == 1, let slot = read.first, Self.components(of: path) == 1 else {
          throw ModelError(
            entity: name,
            reason: .invalidUniquenessConstraint(
              "\(Self.readable(path.debugDescription, reading: read.map(names))) "
                + "does not name one stored property (a computed property is none)"))
        }
        if slot >= 0 { return slot }
        let relationship = relationships[Int(-slot - 1)]
        guard let foreignKey = relationship.foreignKeySlot else {
          throw ModelError(
            entity: name, property: relationship.name,
            reason: .invalidUniquenessConstraint("only a to-one whose key the row holds can be part of a constraint"))
        }
        return foreignKey
      }
      guard !slots.isEmpty, Set(slots).count == slots.count else {
        throw ModelError(entity: name, reason: .invalidUniquenessConstraint("a constraint needs distinct properties"))
      }
      return slots
    }
  }

  private static func schemaEntity(_ entity: EntityDescription) -> ModelSchema.Entity {
    ModelSchema.Entity(
      name: entity.name, superentity: entity.superentityName, table: entity.tableName,
      attributes: entity.attributes.filter { $0.entityName == entity.name }.map {
        ModelSchema.Attribute(
          name: $0.name, column: $0.columnName, type: $0.attributeType, storage: $0.storage,
          optional: $0.isOptional, preservedOnDeletion: $0.isPreservedOnDeletion,
          indexed: $0.isIndexed, unique: $0.isUnique, bounds: $0.bounds)
      },
      relationships: ModelSchema.Relationship.list(
        entity.relationships.filter { $0.entityName == entity.name }),
      uniquenessConstraints: entity.ownCompoundUniqueness.isEmpty
        ? nil : entity.ownCompoundUniqueness.map { $0.map { entity.storedAttributes[Int($0)].name } })
  }
}
