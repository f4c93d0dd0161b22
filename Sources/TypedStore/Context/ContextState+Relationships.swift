import Foundation

// Relationships in a context: loading their faults, and what a save does for them before the
// store writes (delete rules on the loaded graph, validation, the links to write). The rules
// reach rows no context loaded in the store's write transaction
// (`PersistentStore.propagateDeletes`); here they act on the objects this context holds, so
// that its graph shows the deletions and cleared links at once after the save.

extension ContextState {
  // MARK: - Faults

  func fulfillRelationshipFault(of object: ManagedObject, index: Int32) {
    guard let entity = object.entity, let key = object.objectKey else { return }
    let relationship = entity.relationships[Int(index)]
    if key.isTemporary || object.lifecycle != .persisted {
      relationship.accessor.fulfill(object, with: [])
      return
    }
    relationshipLoads?.append((object, index, relationship.accessor.foreignKey(in: object)))
    do {
      relationship.accessor.fulfill(
        object, with: try relatedObjects(of: relationship, for: [key.value], in: object)[key.value] ?? [])
    } catch {
      fatalError(
        "TypedStore: cannot load \(entity.name).\(relationship.name) of "
          + "\(anyID(of: object)?.description ?? "?"): \(error)"
      )
    }
  }

  /// The objects `relationship` relates to each owner (registered ones, or new faults).
  func relatedObjects(of relationship: RelationshipDescription, for owners: [Int64], in sample: ManagedObject? = nil)
    throws -> [Int64: [ManagedObject]]
  {
    guard let destination = model.entity(named: relationship.destinationEntityName) else { return [:] }
    if relationship.holdsForeignKey {
      guard let sample else { return [:] }
      let key = relationship.accessor.foreignKey(in: sample)
      guard key != 0, let owner = owners.first else { return [:] }
      return [owner: [try faultForRow(key, of: destination)]]
    }
    var result: [Int64: [ManagedObject]] = [:]
    for row in try store.relatedRows(of: relationship, owners: owners, reader: reader()) {
      let key = ObjectKey(rootIndex: row.entity.rootIndex, isTemporary: false, value: row.key)
      result[row.owner, default: []].append(fault(for: key, entity: row.entity))
    }
    return result
  }

  /// The registered object for a row of `entity`'s table, or a new fault of its concrete
  /// entity (read from the row only when the table holds several entities).
  func faultForRow(_ primaryKey: Int64, of entity: EntityDescription) throws -> ManagedObject {
    let key = ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: primaryKey)
    if let object = registered[key] { return object }
    var concrete = entity
    if store.layout(of: entity).selectsEntity,
      let found = try store.entityOfRow(primaryKey: primaryKey, in: entity, connection: reader())
    {
      concrete = found
    }
    return fault(for: key, entity: concrete)
  }

  func insertRelated(_ object: ManagedObject) {
    insert(object)
  }

  /// Links the relationships a detached object was given before it was inserted.
  func linkRelationshipsOfInserted(_ object: ManagedObject) {
    guard let entity = object.entity else { return }
    for (index, relationship) in entity.relationships.enumerated() {
      let objects = relationship.accessor.objects(in: object)
      guard !objects.isEmpty else { continue }
      relationship.accessor.setObjects([], in: object)
      object._relationshipWillChange(slot: Int32(index))
      relationship.accessor.setObjects(objects, in: object)
      object._relationshipDidChange(slot: Int32(index), from: [ManagedObject]())
    }
  }

  // MARK: - Saving

  /// Applies the delete rules to the loaded graph of the objects marked deleted: cascades
  /// mark related objects deleted, nullify clears the related objects' sides. A `.deny`
  /// relationship that still holds objects throws first, before anything changes.
  func applyDeleteRulesInMemory() throws {
    guard model.hasRelationships, !deleted.isEmpty else { return }
    // 1. Everything the cascades reach, through loaded relationships (and to-ones that hold
    //    their key, resolved without a query).
    var doomed = Set(deleted.map(ObjectIdentifier.init))
    var queue = Array(deleted)
    var visited: [ManagedObject] = []
    while let object = queue.popLast() {
      visited.append(object)
      guard let entity = object.entity else { continue }
      for (index, relationship) in entity.relationships.enumerated() where relationship.deleteRule == .cascade {
        if relationship.accessor.isFault(object) && loadsForCascadeDelete(relationship) {
          object.loadRelationship(index)  // its objects' hooks run, as Core Data's
        }
        for related in loadedObjects(of: object, index, relationship)
        where doomed.insert(ObjectIdentifier(related)).inserted {
          queue.append(related)
        }
      }
    }
    // 2. Denials, against objects that stay.
    var denials: [DeleteDenial] = []
    for object in visited {
      guard let entity = object.entity else { continue }
      for (index, relationship) in entity.relationships.enumerated() where relationship.deleteRule == .deny {
        let blocking = loadedObjects(of: object, index, relationship).filter {
          !doomed.contains(ObjectIdentifier($0)) && !$0.isDeleted
        }
        guard !blocking.isEmpty, let id = anyID(of: object) else { continue }
        denials.append(
          DeleteDenial(objectID: id, relationship: relationship.name, relatedIDs: blocking.compactMap(anyID)))
      }
    }
    if !denials.isEmpty { throw StoreError.deleteDenied(denials) }
    // 3. Cascade, then clear the sides of the objects that stay.
    for object in visited where !object.isDeleted { delete(object) }
    for object in visited {
      guard let entity = object.entity else { continue }
      for (index, relationship) in entity.relationships.enumerated() {
        for related in loadedObjects(of: object, index, relationship) where !doomed.contains(ObjectIdentifier(related))
        {
          object.unlinkInverse(of: related, through: relationship)
        }
      }
    }
  }

  /// Whether a cascade over `relationship` loads its objects: an entity it may reach asks
  /// for it (`ManagedObject.loadsForCascadeDelete`).
  private func loadsForCascadeDelete(_ relationship: RelationshipDescription) -> Bool {
    guard let destination = model.entity(named: relationship.destinationEntityName) else { return false }
    return destination.selfAndDescendantNames.contains { name in
      model.entity(named: name).map { $0.hasClass && $0.objectType.loadsForCascadeDelete } ?? false
    }
  }

  /// The objects relationship `index` of `object` holds, if it is loaded (a to-one that holds
  /// its key is resolved, which needs no query).
  private func loadedObjects(of object: ManagedObject, _ index: Int, _ relationship: RelationshipDescription)
    -> [ManagedObject]
  {
    if relationship.holdsForeignKey && relationship.accessor.isFault(object) && !object.isFault {
      object.loadRelationship(index)
    }
    guard !relationship.accessor.isFault(object) else { return [] }
    return relationship.accessor.objects(in: object)
  }

  /// Every rule of the model that the inserted and updated objects break.
  func validationFailures(_ objects: [ManagedObject]) -> [ValidationFailure] {
    var failures: [ValidationFailure] = []
    for object in objects where !object.isDeleted {
      guard let entity = object.entity, entity.hasValidationRules, let id = anyID(of: object) else { continue }
      for slot in entity.boundedSlots where object.isInserted || object.committedValues[slot] != nil {
        failures += attributeFailures(
          entity.storedAttributes[Int(slot)], entity.accessors[Int(slot)].currentValue(of: object), id: id)
      }
      for (index, relationship) in entity.relationships.enumerated() {
        let checksCount = relationship.minimumCount != nil || relationship.maximumCount != nil
        guard relationship.isRequired || checksCount else { continue }
        object.loadRelationship(index)
        let count = relationship.accessor.objects(in: object).filter { !$0.isDeleted }.count
        if relationship.isRequired && count == 0 {
          failures.append(
            ValidationFailure(objectID: id, property: relationship.name, reason: .missingRequiredRelationship))
        }
        if let minimum = relationship.minimumCount, count < minimum {
          failures.append(
            ValidationFailure(
              objectID: id, property: relationship.name, reason: .tooFewObjects(count: count, minimum: minimum)))
        }
        if let maximum = relationship.maximumCount, count > maximum {
          failures.append(
            ValidationFailure(
              objectID: id, property: relationship.name, reason: .tooManyObjects(count: count, maximum: maximum)))
        }
      }
    }
    return failures
  }

  /// What the bounds and the own validation of `attribute` say of `value`.
  func attributeFailures(_ attribute: AttributeDescription, _ value: Any, id: AnyManagedID) -> [ValidationFailure] {
    var failures: [ValidationFailure] = []
    if let bounds = attribute.boundsCheck, !bounds.contains(value) {
      failures.append(
        ValidationFailure(
          objectID: id, property: attribute.name,
          reason: .outOfBounds(value: String(describing: value), bounds: bounds.description)))
    }
    do {
      try attribute.validator?.check(value)
    } catch {
      failures.append(
        ValidationFailure(
          objectID: id, property: attribute.name, reason: .rejected(String(describing: error)), error: error))
    }
    return failures
  }

  /// Whether saving `objects` needs their permanent keys before the change set is built: a
  /// key column or a join row will name one of them.
  func insertedObjectsAreReferenced(_ objects: [ManagedObject]) -> Bool {
    guard model.hasRelationships else { return false }
    return objects.contains { object in
      object.entity?.relationships.contains { !$0.accessor.isFault(object) && !$0.accessor.objects(in: object).isEmpty }
        ?? false
    }
  }

  /// The join-table and position writes of `object`'s changed relationship sides (all its
  /// non-empty ones for an inserted object).
  func linkWrites(for object: ManagedObject, changed: (Int32) -> Bool) throws -> [RowWrites.LinkWrite] {
    guard let entity = object.entity, let key = object.objectKey, !key.isTemporary else { return [] }
    var writes: [RowWrites.LinkWrite] = []
    for (index, relationship) in entity.relationships.enumerated() where changed(Int32(index)) {
      switch relationship.storage {
      case .foreignKey, .inverseForeignKey(_, nil):
        continue
      case .inverseForeignKey, .joinTable:
        if case .joinTable(_, _, _, nil, false) = relationship.storage { continue }  // the owner writes the links
        guard !relationship.accessor.isFault(object) else { continue }
        let targets = try relationship.accessor.objects(in: object).filter { !$0.isDeleted }.map { target in
          guard let targetKey = target.objectKey, !targetKey.isTemporary else {
            throw StoreError.invalidValue(
              entity: entity.name, attribute: relationship.name, reason: "a related object has no permanent ID yet")
          }
          return targetKey.value
        }
        // The links the context read: none for an object it inserts; for a saved one, what
        // its change marker recorded (nil if it recorded none: the links become `targets`).
        let original =
          object.lifecycle == .inserted
          ? [] : object.committedValues[ManagedObject.relationshipMarker(Int32(index))].flatMap(ManagedObject.linkKeys)
        writes.append(
          RowWrites.LinkWrite(
            entityIndex: entity.index, relationshipIndex: Int32(index), owner: key.value, targets: targets,
            original: original))
      }
    }
    return writes
  }

  /// After the commit: objects the store's delete rules deleted leave the context (the save
  /// deleted them, so, like the objects it was asked to delete, they are not `isDeleted`
  /// afterwards); objects whose relationship they cleared reload.
  func applyPropagation(_ propagation: DeletePropagation) {
    for (entityName, keys) in propagation.deleted {
      guard let entity = model.entity(named: entityName) else { continue }
      for key in keys {
        if let object = registered[ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: key)],
          object.lifecycle != .invalidated
        {
          forgetDeleted(object)
          object.isDeleted = false
        }
      }
    }
    for (entityName, keys) in propagation.updated {
      guard let entity = model.entity(named: entityName) else { continue }
      for key in keys {
        if let object = registered[ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: key)],
          object.lifecycle == .persisted, !object.isFault
        {
          refresh(object, mergeChanges: true)
        }
      }
    }
  }

  /// Removes a deleted object from the loaded sides of the objects it was related to, as the
  /// store now has it.
  func unlinkFromGraph(_ object: ManagedObject) {
    guard let entity = object.entity, !entity.relationships.isEmpty else { return }
    for relationship in entity.relationships {
      var related: [ManagedObject] = []
      if !relationship.accessor.isFault(object) {
        related = relationship.accessor.objects(in: object)
      } else if relationship.holdsForeignKey, relationship.accessor.foreignKey(in: object) != 0,
        let destination = model.entity(named: relationship.destinationEntityName),
        let target = registered[
          ObjectKey(
            rootIndex: destination.rootIndex, isTemporary: false, value: relationship.accessor.foreignKey(in: object))]
      {
        related = [target]
      }
      for other in related {
        guard let otherEntity = other.entity, Int(relationship.inverseIndex) < otherEntity.relationships.count else {
          continue
        }
        let inverse = otherEntity.relationships[Int(relationship.inverseIndex)]
        guard !inverse.accessor.isFault(other), inverse.accessor.contains(object, in: other) else { continue }
        inverse.accessor.remove(object, in: other)
        other.observationChanged(slots: [ManagedObject.relationshipMarker(relationship.inverseIndex)])
      }
    }
  }
}
