/// The relationships of a model's entities, their inverses resolved and checked, and where
/// each pair's links are stored. Built once, while the model is built.
///
/// An inverse is declared as a key path (`inverse: \Note.folder`), which Swift cannot turn
/// into a property name. So the resolver applies it to a prototype object of the destination
/// whose relationship fields know their index and record it when read: the one index recorded
/// is the inverse. Then each pair is checked to point both ways, and given its storage:
///
/// - to-one ↔ to-many: a key column on the to-one side's table (with an order column there
///   when the to-many side is ordered);
/// - to-one ↔ to-one: a key column on one side, the one whose (entity, name) sorts first;
/// - to-many ↔ to-many: a join table `_join_<Entity>_<relationship>`, named after the side
///   that sorts first, which owns it.
struct RelationshipLinks {
  struct Entity {
    var name: String
    var superName: String?
    var type: ManagedObject.Type
    var relationships: [(name: String, declaration: RelationshipDeclaration, accessor: any RelationshipAccessor)]
  }

  struct Resolved {
    var name: String
    var declaration: RelationshipDeclaration
    var accessor: any RelationshipAccessor
    var destination: String
    var inverseName: String
    var inverseIndex: Int32
    var storage: RelationshipStorage
  }

  private var resolvedByEntity: [String: [Resolved]] = [:]

  /// The entity's own relationships (not inherited ones), in declaration order.
  func relationships(of entity: String) -> [Resolved] { resolvedByEntity[entity] ?? [] }

  /// Resolves every relationship of `entities` (superentities first).
  init(_ entities: [Entity]) throws {
    let graph = Graph(entities)
    // 1. Each relationship's destination, and its inverse where it names one; a side that
    // names no inverse is named by exactly one relationship of its destination.
    var pending = try graph.namedInverses()
    try graph.findUnnamedInverses(&pending)
    // 2. Check that each pair points both ways, and choose its storage.
    for entity in entities {
      resolvedByEntity[entity.name] = try graph.resolve(entity, pending)
    }
  }
}

/// A relationship by the entity that declares it and its index among that entity's own.
private typealias Reference = (entity: String, index: Int)

/// A relationship's destination, and its inverse once known.
private struct Pending {
  var destination: String
  var inverse: Reference?
}

/// The entities whose relationships `RelationshipLinks.init(_:)` resolves, indexed for its steps.
private struct Graph {
  typealias Entity = RelationshipLinks.Entity
  typealias Own = (name: String, declaration: RelationshipDeclaration, accessor: any RelationshipAccessor)

  let entities: [Entity]
  let byName: [String: Entity]
  let nameByType: [ObjectIdentifier: String]
  /// Each entity's full list (inherited first): (declaring entity, own index).
  let full: [String: [Reference]]

  init(_ entities: [Entity]) {
    self.entities = entities
    byName = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0) })
    nameByType = Dictionary(uniqueKeysWithValues: entities.map { (ObjectIdentifier($0.type), $0.name) })
    var full: [String: [Reference]] = [:]
    for entity in entities {
      full[entity.name] =
        (entity.superName.flatMap { full[$0] } ?? []) + entity.relationships.indices.map { (entity.name, $0) }
    }
    self.full = full
  }

  func relationship(_ ref: Reference) -> Own {
    (byName[ref.entity]?.relationships ?? [])[ref.index]
  }

  /// Each relationship's destination, and the inverse its declaration names, if any.
  func namedInverses() throws -> [String: [Pending]] {
    var pending: [String: [Pending]] = [:]
    for entity in entities {
      pending[entity.name] = try entity.relationships.enumerated().map { index, own in
        own.declaration.isOwnInverse
          ? try ownInverse(of: own, at: index, in: entity) : try namedInverse(of: own, in: entity)
      }
    }
    return pending
  }

  /// Finds the inverse a relationship's key path names by reading it on a prototype of the
  /// destination whose relationship fields record their index.
  private func namedInverse(of own: Own, in entity: Entity) throws -> Pending {
    let destinationType = own.accessor.destinationType
    guard let destination = nameByType[ObjectIdentifier(destinationType)],
      let destinationEntity = byName[destination]
    else {
      throw ModelError(
        entity: entity.name, property: own.name,
        reason: .destinationNotInModel(String(describing: destinationType)))
    }
    guard let inverseKeyPath: AnyKeyPath = own.declaration.inverse else {
      return Pending(destination: destination, inverse: nil)
    }
    let refs = full[destination] ?? []
    let probe = destinationEntity.type.init()
    for (index, ref) in refs.enumerated() { relationship(ref).accessor.setSlot(Int32(index), in: probe) }
    probe.keyPathRecorder = []
    probe._needsAccessHook = true
    _ = probe[keyPath: inverseKeyPath]
    let read = probe.keyPathRecorder ?? []
    guard read.count == 1, let slot = read.first, slot < 0, Int(-slot - 1) < refs.count,
      ManagedObjectModel.components(of: inverseKeyPath) == 1
    else {
      throw ModelError(
        entity: entity.name, property: own.name,
        reason: .invalidInverse("its inverse is not a relationship of \(destination)"))
    }
    return Pending(destination: destination, inverse: refs[Int(-slot - 1)])
  }

  /// A relationship declared with `inverse: .itself`: its destination is its own entity.
  private func ownInverse(of own: Own, at index: Int, in entity: Entity) throws -> Pending {
    guard ObjectIdentifier(own.accessor.destinationType) == ObjectIdentifier(entity.type) else {
      throw ModelError(
        entity: entity.name, property: own.name,
        reason: .invalidInverse(
          "it is its own inverse, so its destination must be \(entity.name), not "
            + String(describing: own.accessor.destinationType)))
    }
    return Pending(destination: entity.name, inverse: (entity.name, index))
  }

  /// A side that names no inverse takes the one relationship of its destination that names it.
  func findUnnamedInverses(_ pending: inout [String: [Pending]]) throws {
    for entity in entities {
      for index in entity.relationships.indices where pending[entity.name]?[index].inverse == nil {
        guard let destination = pending[entity.name]?[index].destination else { continue }
        let naming = (full[destination] ?? []).filter { ref in
          guard let other = pending[ref.entity]?[ref.index], let named = other.inverse else { return false }
          return named == (entity.name, index)
        }
        guard naming.count == 1, let found = naming.first else {
          throw ModelError(
            entity: entity.name, property: entity.relationships[index].name,
            reason: .invalidInverse(
              naming.isEmpty
                ? "it has no inverse: name it with inverse: on this side or on the destination's"
                : "several relationships of \(destination) name it as their inverse"))
        }
        pending[entity.name]?[index].inverse = found
      }
    }
  }

  /// The entity's own relationships, each pair checked to point both ways, with its storage.
  func resolve(_ entity: Entity, _ pending: [String: [Pending]]) throws -> [RelationshipLinks.Resolved] {
    var resolved: [RelationshipLinks.Resolved] = []
    for (index, own) in entity.relationships.enumerated() {
      guard let this = pending[entity.name]?[index], let thisInverse = this.inverse,
        let that = pending[thisInverse.entity]?[thisInverse.index]
      else { continue }
      let inverse = relationship(thisInverse)
      guard that.destination == entity.name, let thatInverse = that.inverse, thatInverse == (entity.name, index)
      else {
        throw ModelError(
          entity: entity.name, property: own.name,
          reason: .invalidInverse(
            "its inverse \(this.destination).\(inverse.name) does not point back at \(entity.name).\(own.name)"))
      }
      let isSelfInverse = thisInverse == (entity.name, index)
      let sortsFirst = RelationshipLinks.owns(own.name, of: entity.name, inverse: inverse.name, of: thisInverse.entity)
      let storage = Self.storage(
        of: own, in: entity.name, inverse: inverse, of: thisInverse.entity, owns: isSelfInverse || sortsFirst)
      let inverseIndex = (full[this.destination] ?? []).firstIndex { $0 == thisInverse } ?? 0
      resolved.append(
        RelationshipLinks.Resolved(
          name: own.name, declaration: own.declaration, accessor: own.accessor, destination: this.destination,
          inverseName: inverse.name, inverseIndex: Int32(inverseIndex), storage: storage))
    }
    return resolved
  }

  /// Where a pair's links are stored (`RelationshipLinks.storage`).
  static func storage(of own: Own, in entityName: String, inverse: Own, of inverseEntity: String, owns: Bool)
    -> RelationshipStorage
  {
    RelationshipLinks.storage(
      name: own.name, kind: own.accessor.kind, in: entityName, inverseName: inverse.name,
      inverseKind: inverse.accessor.kind, of: inverseEntity, owns: owns)
  }
}

extension RelationshipLinks {
  /// Whether the side `name` of `entity` owns its pair's links (a to-one ↔ to-one key
  /// column, or a join table): the self-inverse side, or the one whose (entity, name) sorts
  /// first. Model files lay out their relationships with the same rule as classes.
  static func owns(_ name: String, of entity: String, inverse: String, of inverseEntity: String) -> Bool {
    (entity, name) <= (inverseEntity, inverse)
  }

  /// Where a pair's links are stored, from the names and kinds of its two sides; `owns` is
  /// true for the side that keeps a to-one ↔ to-one key column or names a join table.
  static func storage(
    name: String, kind: RelationshipKind, in entityName: String, inverseName: String, inverseKind: RelationshipKind,
    of inverseEntity: String, owns: Bool
  ) -> RelationshipStorage {
    switch (kind.isToMany, inverseKind.isToMany) {
    case (false, true):
      return .foreignKey(column: name, orderColumn: inverseKind == .ordered ? "_\(name)_order" : nil)
    case (true, false):
      return .inverseForeignKey(column: inverseName, orderColumn: kind == .ordered ? "_\(inverseName)_order" : nil)
    case (false, false):
      return owns
        ? .foreignKey(column: name, orderColumn: nil) : .inverseForeignKey(column: inverseName, orderColumn: nil)
    case (true, true):
      let table = owns ? "_join_\(entityName)_\(name)" : "_join_\(inverseEntity)_\(inverseName)"
      return .joinTable(
        table: table, ownColumn: owns ? "source" : "target", otherColumn: owns ? "target" : "source",
        orderColumn: kind == .ordered ? (owns ? "source_order" : "target_order") : nil, isOwner: owns)
    }
  }
}

extension ModelSchema.Relationship {
  /// The schema form of an entity's own relationships; nil for none, so that a model without
  /// relationships keeps the JSON (and version hash) it had before relationships existed.
  static func list(_ relationships: [RelationshipDescription]) -> [ModelSchema.Relationship]? {
    guard !relationships.isEmpty else { return nil }
    return relationships.map { relationship in
      var schema = ModelSchema.Relationship(
        name: relationship.name, destination: relationship.destinationEntityName, inverse: relationship.inverseName,
        kind: relationship.kind, deleteRule: relationship.deleteRule, required: relationship.isRequired,
        minimumCount: relationship.minimumCount, maximumCount: relationship.maximumCount)
      schema.store(relationship.storage)
      return schema
    }
  }

  /// Records where the links are stored: the key, order and join-table columns the schema says
  /// (the classes' model and a model file's layout both write them here).
  mutating func store(_ storage: RelationshipStorage) {
    switch storage {
    case .foreignKey(let column, let orderColumn):
      self.column = column
      self.orderColumn = orderColumn
    case .inverseForeignKey(_, let orderColumn):
      self.orderColumn = orderColumn
    case .joinTable(let table, let ownColumn, _, let orderColumn, _):
      joinTable = table
      joinColumn = ownColumn
      self.orderColumn = orderColumn
    }
  }
}
