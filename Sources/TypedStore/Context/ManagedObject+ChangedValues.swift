// Committed and changed values, as Core Data's `committedValues(forKeys:)`, `changedValues()`
// and `hasPersistentChangedValues`: the object keeps the saved value of each attribute it
// changed since the last save (`ManagedObject.committedValues`), and these read it. A changed
// relationship side keeps a marker there instead (the saved key of a to-one that holds it,
// the keys a many-to-many side held when it was loaded); what a marker does not hold is read
// from the store.
extension ManagedObject {
  /// The saved values of the properties named `keys` (every attribute and relationship when
  /// nil), by name: for a property changed since the last save, the value the store has; for
  /// the others, the current value. A nil value is an `Optional.none`; a relationship's value
  /// has its Swift shape (`Folder?`, `Set<Note>`, `[Note]`) and holds the saved objects
  /// (faults for those not loaded), and reading one the context has not loaded loads it. An
  /// object not saved yet has no saved values: the answer is empty. Unknown names are left
  /// out.
  ///
  /// ```swift
  /// note.title = "Renamed"
  /// note.committedValues(forKeys: ["title"])["title"] as? String   // the saved title
  /// ```
  public func committedValues(forKeys keys: [String]? = nil) -> [String: Any] {
    guard lifecycle == .persisted, let entity else { return [:] }
    var values: [String: Any] = [:]
    for (slot, attribute) in entity.storedAttributes.enumerated() where attribute.foreignKeyOf == nil {
      guard keys?.contains(attribute.name) ?? true else { continue }
      let stored = committedValues[Int32(slot)] ?? (try? entity.accessors[slot].encode(self))
      if let stored, let value = try? attribute.accessor.codec.decodeAny(stored) { values[attribute.name] = value }
    }
    guard let state = tracker as? ContextState else { return values }
    for (index, relationship) in entity.relationships.enumerated() where keys?.contains(relationship.name) ?? true {
      values[relationship.name] = relationship.accessor.boxedValue(holding: state.committedObjects(of: self, index))
    }
    return values
  }

  /// The saved value of the attribute or relationship at `keyPath`, typed; nil for an object
  /// not saved yet or a key path that names no property of the object itself. A
  /// relationship's saved value holds the saved objects (faults for those not loaded).
  ///
  /// ```swift
  /// if let saved = note.committedValue(for: \Note.title), saved != note.title { print("was", saved) }
  /// let savedFolder = note.committedValue(for: \Note.folder)   // Folder??: the saved folder
  /// ```
  public func committedValue<Object: ManagedObject, Value>(for keyPath: KeyPath<Object, Value>) -> Value? {
    guard lifecycle == .persisted, let entity, let state = tracker as? ContextState else { return nil }
    if let slot = state.model.attributeSlot(for: keyPath, on: entity) {
      let stored = committedValues[Int32(slot)] ?? (try? entity.accessors[slot].encode(self))
      return stored.flatMap { try? entity.storedAttributes[slot].accessor.codec.decodeAny($0) } as? Value
    }
    guard let index = state.model.relationshipIndex(for: keyPath, on: entity) else { return nil }
    return entity.relationships[index].accessor.boxedValue(holding: state.committedObjects(of: self, index)) as? Value
  }

  /// The current values of the properties changed since the last save, by name (every
  /// attribute and relationship of an object not saved yet). A relationship's value has its
  /// Swift shape (`Folder?`, `Set<Note>`, `[Note]`).
  ///
  /// ```swift
  /// for (name, value) in note.changedValues() { print(name, value) }
  /// ```
  public func changedValues() -> [String: Any] {
    guard let entity else { return [:] }
    var values: [String: Any] = [:]
    for (slot, attribute) in entity.storedAttributes.enumerated() where attribute.foreignKeyOf == nil {
      guard isInserted || committedValues[Int32(slot)] != nil else { continue }
      if let stored = try? entity.accessors[slot].encode(self),
        let value = try? attribute.accessor.codec.decodeAny(stored)
      {
        values[attribute.name] = value
      }
    }
    for (index, relationship) in entity.relationships.enumerated() where relationshipChanged(index) {
      loadRelationship(index)
      values[relationship.name] = relationship.accessor.boxedValue(holding: relationship.accessor.objects(in: self))
    }
    return values
  }

  /// The properties changed since the context last processed its pending changes (Core
  /// Data's `changedValuesForCurrentEvent()`), each with the value it had then: at the end of
  /// the last `perform` block, `processPendingChanges()`, merge or save. A relationship's value
  /// has its Swift shape. An object not saved yet has no values to report: the answer is
  /// empty, as it is for a property set back to the value it had.
  ///
  /// ```swift
  /// context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
  ///   for note in message.updated(Note.self) { print(note.changedValuesForCurrentEvent()) }   // old values
  /// }
  /// ```
  public func changedValuesForCurrentEvent() -> [String: Any] {
    guard lifecycle == .persisted, let entity, let state = tracker as? ContextState else { return [:] }
    let base = state.eventBases[ObjectIdentifier(self)]
    var values: [String: Any] = [:]
    for (slot, committed) in committedValues {
      if slot < 0 {
        let index = Int(-slot - 1)
        let relationship = entity.relationships[index]
        guard !relationship.accessor.isFault(self) else { continue }
        var old: [ManagedObject]
        if case .objects(let objects)? = base?.value(of: slot) {
          old = objects
        } else {
          old = state.committedObjects(of: self, index)
        }
        let current = relationship.accessor.objects(in: self)
        let same =
          relationship.kind == .ordered
          ? old.elementsEqual(current, by: ===)
          : Set(old.map(ObjectIdentifier.init)) == Set(current.map(ObjectIdentifier.init))
        if !same { values[relationship.name] = relationship.accessor.boxedValue(holding: old) }
        continue
      }
      if case .objects(let objects)? = base?.value(of: slot),
        let name = entity.storedAttributes[Int(slot)].foreignKeyOf, let relationship = entity.relationship(named: name)
      {
        // A to-one at the end of the last event, compared by identity (its object may have
        // no key yet).
        if !objects.elementsEqual(relationship.accessor.objects(in: self), by: ===) {
          values[name] = relationship.accessor.boxedValue(holding: objects)
        }
        continue
      }
      var old = committed
      if case .value(let value)? = base?.value(of: slot) { old = value }
      // A to-one whose object is not saved yet has no key to compare: it changed.
      if let current = try? entity.accessors[Int(slot)].encode(self), current == old { continue }
      let attribute = entity.storedAttributes[Int(slot)]
      if let name = attribute.foreignKeyOf, let relationship = entity.relationship(named: name) {
        var objects: [ManagedObject] = []
        if case .integer(let key) = old,
          let destination = state.model.entity(named: relationship.destinationEntityName),
          let fault = try? state.faultForRow(key, of: destination)
        {
          objects = [fault]
        }
        values[name] = relationship.accessor.boxedValue(holding: objects)
      } else if let value = try? attribute.accessor.codec.decodeAny(old) {
        values[attribute.name] = value
      }
    }
    return values
  }

  /// Whether relationship `index` changed since the last save (every one of an object not
  /// saved yet).
  final func relationshipChanged(_ index: Int) -> Bool {
    guard let entity else { return false }
    if isInserted { return true }
    if let slot = entity.relationships[index].foreignKeySlot { return committedValues[slot] != nil }
    return committedValues[Self.relationshipMarker(Int32(index))] != nil
  }

  /// Whether a property the store keeps changed since the last save (an object not saved yet
  /// counts as changed). TypedStore keeps every declared property, so this is `isInserted ||
  /// isUpdated`.
  ///
  /// ```swift
  /// if note.hasPersistentChangedValues { try context.save() }
  /// ```
  public var hasPersistentChangedValues: Bool { isInserted || isUpdated }
}

extension ContextState {
  /// The objects relationship `index` of `object` held at its last save: from the marker a
  /// change left (the saved key of a to-one that holds it, the keys a loaded many-to-many
  /// side held), from the store for a changed side whose marker holds none, and the current
  /// objects of an unchanged side (loading it).
  func committedObjects(of object: ManagedObject, _ index: Int) -> [ManagedObject] {
    guard let entity = object.entity, let key = object.objectKey, object.lifecycle == .persisted,
      let destination = model.entity(named: entity.relationships[index].destinationEntityName)
    else { return [] }
    let relationship = entity.relationships[index]
    if let slot = relationship.foreignKeySlot, let saved = object.committedValues[slot] {
      guard case .integer(let related) = saved, let fault = try? faultForRow(related, of: destination) else {
        return []
      }
      return [fault]
    }
    guard let marker = object.committedValues[ManagedObject.relationshipMarker(Int32(index))] else {
      object.loadRelationship(index)
      return relationship.accessor.objects(in: object)
    }
    if let keys = ManagedObject.linkKeys(in: marker) {
      return keys.compactMap { try? faultForRow($0, of: destination) }
    }
    return (try? relatedObjects(of: relationship, for: [key.value]))?[key.value] ?? []
  }
}
