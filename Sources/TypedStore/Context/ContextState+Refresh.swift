// Refreshing: an object back to a fault, or reloaded with the store's values and its unsaved
// changes rebased on top.
extension ContextState {
  /// Refreshes every loaded object (see `ManagedObjectContext.refreshAllObjects()`).
  func refreshAllObjects() {
    for object in registered.values where !object.isFault {
      refresh(object, mergeChanges: true)
    }
  }

  /// Turns the object back into a fault (dropping its changes), or with `mergeChanges`
  /// reloads its saved values and re-applies its unsaved changes on top. An object whose row
  /// is gone is marked deleted (or, with `shouldDeleteInaccessibleFaults` off, stays a fault).
  func refresh(_ object: ManagedObject, mergeChanges: Bool) {
    guard object.trackerLink === link, object.lifecycle == .persisted, let entity = object.entity else { return }
    if reportsObjectChanges { noteRefresh(object) }
    forgetEventBases(of: object)
    let wasLoaded = !object.isFault
    if wasLoaded { object.willTurnIntoFault() }
    // Observers hear what changed once the new values are in (or, for an object left a
    // fault, that everything they saw may have).
    let snapshot = object.observationSnapshot()
    defer { if let snapshot { object.reportObservedChanges(since: snapshot, assumeChanged: !mergeChanges) } }
    var pending: [(Int32, PrimitiveValue)] = []
    // Changed relationship sides keep their objects (which may not be saved yet).
    // A marker keeps what it recorded (the links read before the change, which the save
    // compares with the side to write only this context's changes).
    var pendingLinks: [(slot: Int32, index: Int, objects: [ManagedObject], marker: PrimitiveValue)] = []
    if mergeChanges {
      for (slot, committed) in object.committedValues {
        if let index = relationshipIndex(ofSlot: slot, in: entity) {
          pendingLinks.append((slot, index, entity.relationships[index].accessor.objects(in: object), committed))
        } else if let value = try? entity.accessors[Int(slot)].encode(object) {
          pending.append((slot, value))
        }
      }
    }
    updated.remove(object)
    object.committedValues.removeAll()
    object.isFault = true
    object.makeRelationshipsFaults()
    if wasLoaded { object.didTurnIntoFault() }
    guard mergeChanges else { return }
    do {
      try load(object)
    } catch {
      if shouldDeleteInaccessibleFaults, case ManagedIDError.noSuchRow = error {
        forgetDeleted(object)
        object.isFault = false
      }
      return  // otherwise it stays a fault, and reading it reports the error
    }
    guard !pending.isEmpty || !pendingLinks.isEmpty else { return }
    for (slot, value) in pending {
      object.committedValues[slot] = (try? entity.accessors[Int(slot)].encode(object)) ?? .null
      try? entity.accessors[Int(slot)].decode(value, into: object)
    }
    for link in pendingLinks {
      object.committedValues[link.slot] =
        link.slot < 0 ? link.marker : ((try? entity.accessors[Int(link.slot)].encode(object)) ?? .null)
      let objects = rebased(link.objects, read: ManagedObject.linkKeys(in: link.marker), of: object, link.index)
      entity.relationships[link.index].accessor.fulfill(object, with: objects)
    }
    updated.insert(object)
  }

  /// A changed to-many side after a refresh: the store's objects now, with this context's
  /// unsaved additions and removals on top, in the order its save writes (the context's
  /// list, then the objects it never saw). What the context added and removed is what it
  /// read (a many-to-many's sides note it: `read`), or, for a one-to-many, the related
  /// objects whose key to the owner it changed. Any other side stays as the context holds it.
  private func rebased(_ objects: [ManagedObject], read: [Int64]?, of object: ManagedObject, _ index: Int)
    -> [ManagedObject]
  {
    guard let entity = object.entity, let owner = object.objectKey?.value else { return objects }
    let relationship = entity.relationships[index]
    func savedKey(_ object: ManagedObject) -> Int64? {
      object.objectKey.flatMap { $0.isTemporary ? nil : $0.value }
    }
    /// Whether the context put the object on this side (not saved yet).
    let added: (ManagedObject) -> Bool
    /// Whether the store's object is off this side in the context (or one it had read).
    let leftOut: (ManagedObject) -> Bool
    switch relationship.storage {
    case .joinTable:
      guard let read else { return objects }
      let readKeys = Set(read)
      added = { savedKey($0).map { !readKeys.contains($0) } ?? true }
      leftOut = { savedKey($0).map(readKeys.contains) ?? true }
    case .inverseForeignKey:
      guard let destination = model.entity(named: relationship.destinationEntityName),
        Int(relationship.inverseIndex) < destination.relationships.count,
        let keySlot = destination.relationships[Int(relationship.inverseIndex)].foreignKeySlot
      else { return objects }
      // The related object's key to its owner changed in the context: it moved in or out.
      added = { $0.lifecycle == .inserted || $0.committedValues[keySlot] != nil }
      leftOut = { $0.committedValues[keySlot] != nil || $0.isDeleted }
    default:
      return objects
    }
    guard let stored = try? relatedObjects(of: relationship, for: [owner])[owner, default: []] else {
      return objects
    }
    let storedKeys = Set(stored.compactMap(savedKey))
    // Kept: what the context added, and what it holds that the store still has on the side.
    let kept = objects.filter { object in
      added(object) || savedKey(object).map(storedKeys.contains) ?? false
    }
    let keptKeys = Set(kept.compactMap(savedKey))
    // Then what another writer put there, which the context never saw.
    let rebased = kept + stored.filter { !keptKeys.contains(savedKey($0) ?? 0) && !leftOut($0) }
    if case .joinTable = relationship.storage {
      // The objects another writer linked or unlinked: a loaded side of theirs that this
      // context did not change loads again when read, so that both sides agree.
      let before = Set(objects.map(ObjectIdentifier.init))
      let after = Set(rebased.map(ObjectIdentifier.init))
      for other in objects + rebased
      where before.contains(ObjectIdentifier(other)) != after.contains(ObjectIdentifier(other)) {
        guard let otherEntity = other.entity, Int(relationship.inverseIndex) < otherEntity.relationships.count else {
          continue
        }
        let inverse = otherEntity.relationships[Int(relationship.inverseIndex)].accessor
        let marker = ManagedObject.relationshipMarker(relationship.inverseIndex)
        if !inverse.isFault(other) && other.committedValues[marker] == nil { inverse.makeFault(other, foreignKey: 0) }
      }
    }
    return rebased
  }

  /// The relationship a changed slot stands for: a marker, or a to-one's key column.
  private func relationshipIndex(ofSlot slot: Int32, in entity: EntityDescription) -> Int? {
    if slot < 0 { return Int(-slot - 1) }
    guard let name = entity.storedAttributes[Int(slot)].foreignKeyOf else { return nil }
    return entity.relationships.firstIndex { $0.name == name }
  }
}
