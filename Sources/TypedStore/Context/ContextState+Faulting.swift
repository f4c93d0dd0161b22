// Faults: objects registered for a row whose values are read when first needed, and the
// loads that fulfil them.
extension ContextState {
  /// The registered object for `key`, or a new fault of `entity` registered for it.
  func fault(for key: ObjectKey, entity: EntityDescription) -> ManagedObject {
    if let object = registered[key] { return object }
    let object = entity.objectType.init()
    adopt(object, entity: entity, key: key, status: .persisted)
    object.makeRelationshipsFaults()
    object.isFault = true
    return object
  }

  /// The registered object for a row of `entity` (`Object`'s entity) known to have existed —
  /// a fetch listed its key — or a new fault of `entity` for it, without reading it: if the
  /// row is gone, reading the fault behaves as `shouldDeleteInaccessibleFaults` says.
  func fault<Object: ManagedObject>(_ type: Object.Type, of entity: EntityDescription, primaryKey: Int64) -> Object {
    let key = ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: primaryKey)
    guard let object = fault(for: key, entity: entity) as? Object else {
      // The fetch read the row as an `Object`, so whatever holds its key is one.
      preconditionFailure("TypedStore: row \(primaryKey) of \(entity.name) is registered as another class")
    }
    return object
  }

  func adopt(_ object: ManagedObject, entity: EntityDescription, key: ObjectKey, status: ObjectStatus) {
    object.entityStorage = entity
    object.trackerLink = link
    object.lifecycle = status
    object.objectKey = key
    object.assignSlots()
    if entity.observationKeyPaths != nil { object.observeAccess() }
    registered[key] = object
  }

  /// The object for a row that must exist, loaded: the registered one (a fault is loaded now)
  /// or a new one of the row's entity. Errors are thrown here, where the caller can handle
  /// them, rather than when an attribute of a fault is read; a new object that cannot be
  /// loaded is not registered.
  ///
  /// - Throws: `ManagedIDError.noSuchRow` when there is no such row of `entity` (or one of
  ///   its subentities), or the error reading it.
  func existingObject(for key: ObjectKey, entity: EntityDescription) throws -> ManagedObject {
    if let object = registered[key], object.lifecycle != .invalidated {
      if object.isFault { try load(object) }
      return object
    }
    let id = AnyManagedID(storeIdentifier: store.identifier, entityName: entity.name, key: .permanent(key.value))
    guard !key.isTemporary,
      let concrete = try store.entityOfRow(primaryKey: key.value, in: entity, connection: reader())
    else {
      throw ManagedIDError.noSuchRow(id.description)
    }
    let object = fault(for: key, entity: concrete)
    try loadOrForget(object, key: key)
    return object
  }

  /// Loads the row of a fault just made for it, or forgets the fault again when the row
  /// cannot be read, so that nothing stays registered for it.
  func loadOrForget(_ object: ManagedObject, key: ObjectKey) throws {
    do {
      try load(object)
    } catch {
      registered[key] = nil
      object.trackerLink = nil
      object.lifecycle = .invalidated
      throw error
    }
  }

  /// Loads a fault's row.
  ///
  /// - Throws: `ManagedIDError.noSuchRow` when the row is gone, or the error reading it.
  func load(_ object: ManagedObject) throws {
    guard let entity = object.entity, let key = object.objectKey, !key.isTemporary else {
      object.isFault = false
      return
    }
    guard try store.loadRow(primaryKey: key.value, into: object, entity: entity, connection: reader()) else {
      throw ManagedIDError.noSuchRow(anyID(of: object)?.description ?? entity.name)
    }
    object.awakeFetched()
  }

  func fulfillFault(of object: ManagedObject) {
    do {
      try load(object)
    } catch ManagedIDError.noSuchRow where shouldDeleteInaccessibleFaults {
      // As Core Data does by default: the row was deleted (by another context or process)
      // after the fault was made, so the object is marked deleted; its fields keep the
      // values they last had (the attributes' defaults for a fault never loaded).
      forgetDeleted(object)
      object.isFault = false
    } catch {
      // A row that exists but cannot be read (another tool wrote values the attributes cannot
      // hold), or a missing row with shouldDeleteInaccessibleFaults off: inventing values would
      // be silent data loss. `existingObject(with:)` throws instead.
      fatalError(
        "TypedStore: cannot fulfil a fault for "
          + "\(anyID(of: object)?.description ?? object.entity?.name ?? "?"): \(error)"
      )
    }
  }
}
