// Saving: the context's pending changes become one `RowWrites`, written by the store's one
// write path in one transaction; then the context takes in what the store reports back
// (permanent keys, row versions, conflict resolutions, delete propagation) and tells its
// observers. Each step is one function below, in the order `save()` runs them.
extension ContextState {
  /// Writes every pending change to the store in one transaction (see
  /// `ManagedObjectContext.save()`). On failure nothing is written and every change stays
  /// pending.
  func save() throws {
    do {
      try saveChanges()
    } catch {
      // A save ends the event, as Core Data's: one that fails too (a successful one clears
      // it). When someone listens it was processed at the start already.
      if !reportsObjectChanges { processPendingChanges() }
      throw error
    }
  }

  private func saveChanges() throws {
    // Core Data's order: the pending changes are processed, observers hear that the save
    // begins, then the delete rules and `willSave()` run, and what they changed is processed
    // too. Nobody listening, there is nothing to process: the event ends with the save.
    if reportsObjectChanges { processPendingChanges() }
    let hadChanges = hasChanges
    if hadChanges && !messageObservers.isEmpty { deliver(ManagedObjectContext.WillSaveMessage()) }
    try applyDeleteRulesInMemory()
    try callWillSave()
    if reportsObjectChanges { processPendingChanges() }
    let updatedObjects = updated.filter { !$0.isDeleted && $0.lifecycle == .persisted }
    let deletedObjects = deleted.filter { $0.lifecycle == .persisted }
    try validate(inserted: inserted, updated: updatedObjects, deleted: deletedObjects)
    try obtainKeysForReferencedInserts(among: inserted + updatedObjects)
    var saved = ContextChanges(origin: .save)
    let reportsIDs = !changeObservers.isEmpty || (!messageObservers.isEmpty && observes(.didSaveObjectIDs))
    if reportsIDs {
      saved.updated = Set(updatedObjects.compactMap(anyID))
      saved.deleted = Set(deletedObjects.compactMap(anyID))
    }
    let plan = try changeSet(updated: updatedObjects, deleted: deletedObjects)
    var outcome = SaveOutcome()
    if !plan.changes.isEmpty {
      let applied = try commit(plan.changes)
      outcome.mergedInto = assignPermanentKeys(applied)
      for (object, rewritten) in zip(plan.savedUpdates, plan.rewritesRow) where rewritten { object.rowVersion += 1 }
      outcome.propagation = applied.propagation
      outcome.resolved = settleDeletes(deletedObjects, applied) + resolutions(of: plan.savedUpdates, applied)
    }
    // The inserted objects' IDs are permanent now. (Taken here, before the objects nobody
    // holds are let go below.)
    if reportsIDs { saved.inserted = Set(inserted.compactMap(anyID)) }
    var insertedObjects = inserted
    clearPendingChanges()
    apply(outcome)
    Self.forEachHeld(insertedObjects) { $0.didSave() }
    Self.forEachHeld(updatedObjects) { $0.didSave() }
    // As in Core Data, a deleted object says so in its didSave().
    Self.forEachHeld(deletedObjects) { object in
      let wasDeleted = object.isDeleted
      object.isDeleted = true
      object.didSave()
      object.isDeleted = wasDeleted
    }
    if hadChanges && !messageObservers.isEmpty && observes(.didSave) {
      var message = ManagedObjectContext.DidSaveMessage()
      (message.inserted, message.updated, message.deleted) = (
        Set(insertedObjects), Set(updatedObjects), Set(deletedObjects)
      )
      deliver(message)
    }
    insertedObjects = []  // not held while the unreferenced objects go, below
    if reportsIDs { saved.add(outcome.propagation, storeIdentifier: store.identifier) }
    // Saved objects nobody else holds go, as Core Data releases them: an import loop that
    // saves every 10,000 objects keeps one batch in memory, not all of them.
    registered.dropUnreferenced { $0.lifecycle == .persisted && !$0.hasChanges }
    if hadChanges && !messageObservers.isEmpty && observes(.didSaveObjectIDs) {
      var message = ManagedObjectContext.DidSaveObjectIDsMessage()
      (message.insertedIDs, message.updatedIDs, message.deletedIDs) = (saved.inserted, saved.updated, saved.deleted)
      deliver(message)
    }
    if !changeObservers.isEmpty { notifyChanges(saved) }
  }

  /// Tells the context's observers which rows a save or a merge touched.
  func notifyChanges(_ changes: ContextChanges) {
    guard !changes.isEmpty else { return }
    for observer in changeObservers.values { observer(changes) }
  }

  // MARK: - Before the write

  /// Step 0: Core Data's `willSave()`, once per object the save writes. What the calls change
  /// is saved too; an object that became changed only through them gets its own call (and a
  /// delete among them runs the delete rules again), until a round changes no new object.
  private func callWillSave() throws {
    // The first round walks the lists themselves (copies share their storage). Objects only
    // join a list at its end, so lists whose counts and last objects did not move hold no
    // object without its call: the usual case, with no set and no array made.
    let (firstInserted, firstUpdated, firstDeleted) = (inserted, updated, deleted)
    Self.forEachHeld(firstInserted) { $0.willSave() }
    Self.forEachHeld(firstUpdated.objects) { if !$0.isDeleted { $0.willSave() } }
    Self.forEachHeld(firstDeleted.objects) { $0.willSave() }
    if deleted.count != firstDeleted.count { try applyDeleteRulesInMemory() }
    guard
      inserted.count != firstInserted.count || inserted.last !== firstInserted.last
        || updated.count != firstUpdated.count || updated.last !== firstUpdated.last
        || deleted.count != firstDeleted.count || deleted.last !== firstDeleted.last
    else { return }
    // Every object of the first lists had its call (an updated one deleted since, through
    // the deleted list or the updated one).
    var called = Set(firstInserted.map(ObjectIdentifier.init))
    for object in firstUpdated { called.insert(ObjectIdentifier(object)) }
    for object in firstDeleted { called.insert(ObjectIdentifier(object)) }
    var round = pendingObjects().filter { !called.contains(ObjectIdentifier($0)) }
    while !round.isEmpty {
      let deletedBefore = deleted.count
      for object in round { object.willSave() }
      if deleted.count != deletedBefore { try applyDeleteRulesInMemory() }
      called.formUnion(round.map(ObjectIdentifier.init))
      round = pendingObjects().filter { !called.contains(ObjectIdentifier($0)) }
    }
  }

  /// Calls `body` with each object of `objects`, which holds them all meanwhile: without a
  /// retain and a release per object, which were most of what calling an empty hook cost.
  @inline(__always)
  static func forEachHeld(_ objects: [ManagedObject], _ body: (ManagedObject) -> Void) {
    objects.withUnsafeBufferPointer { buffer in
      for index in buffer.indices {
        Unmanaged.passUnretained(buffer[index])._withUnsafeGuaranteedRef(body)
      }
    }
  }

  /// The objects a save would write now: inserted, updated, deleted.
  private func pendingObjects() -> [ManagedObject] {
    var objects: [ManagedObject] = []
    objects.reserveCapacity(inserted.count + updated.count + deleted.count)
    objects += inserted
    for object in updated where !object.isDeleted { objects.append(object) }
    for object in deleted { objects.append(object) }
    return objects
  }

  /// Step 1: the model's validation rules, then each object's own validation
  /// (`validateForInsert()`, `validateForUpdate()` or `validateForDelete()`), over the
  /// objects the save writes.
  ///
  /// - Throws: `StoreError.validationFailed` with every failure.
  func validate(inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject]) throws {
    var failures = model.hasValidationRules ? validationFailures(inserted + updated) : []
    func check(_ object: ManagedObject, _ property: String, _ body: () throws -> Void) {
      do {
        try body()
      } catch {
        guard let id = anyID(of: object) else { return }
        failures.append(
          ValidationFailure(
            objectID: id, property: property, reason: .rejected(String(describing: error)), error: error))
      }
    }
    Self.forEachHeld(inserted) { object in check(object, "") { try object.validateForInsert() } }
    Self.forEachHeld(updated) { object in check(object, "") { try object.validateForUpdate() } }
    Self.forEachHeld(deleted) { object in check(object, "") { try object.validateForDelete() } }
    if !failures.isEmpty { throw StoreError.validationFailed(failures) }
  }

  /// Runs the validation a save would run over the pending changes, writing nothing
  /// (`ManagedObjectContext.validate()`).
  func validatePendingChanges() throws {
    try validate(
      inserted: inserted, updated: updated.filter { !$0.isDeleted && $0.lifecycle == .persisted },
      deleted: deleted.filter { $0.lifecycle == .persisted })
  }

  /// Step 2: inserted objects that others point at need their primary keys before the rows
  /// are written, so that the links to them can name them.
  private func obtainKeysForReferencedInserts(among objects: [ManagedObject]) throws {
    if model.hasRelationships && insertedObjectsAreReferenced(objects) {
      try obtainPermanentIDs(for: inserted)
    }
  }

  /// What a save asks the store to write, and what it needs to know of the updates after.
  private struct SavePlan {
    var changes = RowWrites()
    /// The updated objects the change set writes.
    var savedUpdates: [ManagedObject] = []
    /// By position in `savedUpdates`: whether the object's row is rewritten (its version moves).
    var rewritesRow: [Bool] = []
  }

  /// Step 3: the change set — every insert, update, link and delete, with the merge policy.
  private func changeSet(updated updatedObjects: [ManagedObject], deleted deletedObjects: [ManagedObject]) throws
    -> SavePlan
  {
    var plan = SavePlan()
    plan.changes.inserts.reserveCapacity(inserted.count)
    for object in inserted {
      guard let entity = object.entity, let key = object.objectKey else { continue }
      let values = try entity.accessors.map { try $0.storedValue(of: object) }
      plan.changes.inserts.append(
        RowWrites.Insert(entityIndex: entity.index, primaryKey: key.isTemporary ? nil : key.value, values: values))
      if !entity.relationships.isEmpty { plan.changes.links += try linkWrites(for: object, changed: { _ in true }) }
    }
    plan.changes.policy = mergePolicy
    try addUpdates(of: updatedObjects, to: &plan)
    for object in deletedObjects {
      guard let entity = object.entity, let key = object.objectKey else { continue }
      plan.changes.deletes.append(
        RowWrites.Delete(entityIndex: entity.index, primaryKey: key.value, version: object.rowVersion))
    }
    return plan
  }

  /// The updates of the change set: for each updated object, the attributes whose values
  /// differ from what it read, and the relationship sides it changed.
  private func addUpdates(of updatedObjects: [ManagedObject], to plan: inout SavePlan) throws {
    // Only the policies that may write the whole object need every value of each update,
    // and only store-trump needs the values read (to see which attributes the store changed).
    let needsAllValues = mergePolicy == .objectTrump || mergePolicy == .overwrite
    let needsOriginals = mergePolicy == .storeTrump
    plan.changes.updates.reserveCapacity(updatedObjects.count)
    plan.savedUpdates.reserveCapacity(updatedObjects.count)
    plan.rewritesRow.reserveCapacity(updatedObjects.count)
    // Updated objects usually changed the same attributes: they share one slots array (no
    // allocation per object, and the store groups them by comparing the same buffer).
    var slots: [Int32] = []
    var sharedSlots: [Int32] = []
    for object in updatedObjects {
      guard let entity = object.entity, let key = object.objectKey else { continue }
      let diff = try self.diff(object, of: entity, slots: &slots, keepingOriginals: needsOriginals)
      if !diff.changedRelationships.isEmpty {
        plan.changes.links += try linkWrites(for: object, changed: diff.changedRelationships.contains)
      }
      guard !slots.isEmpty || !diff.relationshipNames.isEmpty else { continue }
      if slots != sharedSlots { sharedSlots = slots }
      plan.savedUpdates.append(object)
      plan.rewritesRow.append(!slots.isEmpty)
      plan.changes.updates.append(
        RowWrites.Update(
          entityIndex: entity.index, primaryKey: key.value, version: object.rowVersion, slots: sharedSlots,
          values: diff.values,
          originalValues: diff.originals,
          allValues: needsAllValues && !slots.isEmpty
            ? try entity.accessors.map { try $0.storedValue(of: object) } : nil,
          relationshipNames: diff.relationshipNames))
    }
  }

  /// What changed in one updated object since it was read (its changed slots go in the
  /// caller's `slots`, reused from object to object).
  private struct ObjectDiff {
    var values: [PrimitiveValue] = []
    var originals: [PrimitiveValue] = []
    var relationshipNames: [String] = []
    var changedRelationships = Set<Int32>()
  }

  private func diff(
    _ object: ManagedObject, of entity: EntityDescription, slots: inout [Int32], keepingOriginals: Bool
  ) throws -> ObjectDiff {
    slots.removeAll(keepingCapacity: true)
    var diff = ObjectDiff()
    for (slot, committed) in object.committedValues {
      guard slot >= 0 else {
        let index = -slot - 1
        diff.relationshipNames.append(entity.relationships[Int(index)].name)
        diff.changedRelationships.insert(index)
        continue
      }
      if let relationship = entity.storedAttributes[Int(slot)].foreignKeyOf,
        let index = entity.relationships.firstIndex(where: { $0.name == relationship })
      {
        diff.changedRelationships.insert(Int32(index))  // its inverse's positions may need writing
      }
      let current = try entity.accessors[Int(slot)].storedValue(of: object)
      if current != committed {
        slots.append(slot)
        diff.values.append(current)
        if keepingOriginals { diff.originals.append(committed) }
      }
    }
    return diff
  }

  // MARK: - The write

  /// Step 4: the store's one write path, its errors completed with the context's objects.
  ///
  /// - Throws: `StoreError.mergeConflict` and `StoreError.uniquenessConflict` naming the
  ///   objects, or the store's error; nothing is written.
  private func commit(_ changes: RowWrites) throws -> AppliedChanges {
    do {
      let applied = try store.commit(
        changes,
        info: TransactionInfo(
          author: transactionAuthor, contextName: name, origin: ObjectIdentifier(self), checkpoint: consumerCheckpoint),
        in: migrationTransaction)
      consumerCheckpoint = nil  // written: the merger reads that it was
      return applied
    } catch StoreError.mergeConflict(let conflicts) {
      throw StoreError.mergeConflict(conflicts.map(describe))
    } catch let clashes as UniquenessClashes {
      throw StoreError.uniquenessConflict(clashes.clashes.map(describe))
    }
  }

  // MARK: - After the write

  /// What the store's answer leaves the context to do once its pending changes are cleared.
  private struct SaveOutcome {
    /// Objects whose conflicts the merge policy resolved, and how.
    var resolved: [(ManagedObject, Resolution)] = []
    /// What the store's delete rules changed beyond the saved objects.
    var propagation = DeletePropagation()
    /// Objects that constraint merging made stored rows.
    var mergedInto: [ManagedObject] = []
  }

  /// Step 5: every inserted object takes its row's permanent key; returns the objects that
  /// constraint merging made an existing row.
  private func assignPermanentKeys(_ applied: AppliedChanges) -> [ManagedObject] {
    var mergedInto: [ManagedObject] = []
    for (index, (object, primaryKey)) in zip(inserted, applied.insertedKeys).enumerated() {
      guard let entity = object.entity else { continue }
      let key = ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: primaryKey)
      if applied.mergedInserts.contains(index) {
        // Constraint merging: the object became a stored row.
        if let old = object.objectKey, !old.isTemporary { registered[old] = nil }
        if let existing = registered[key], existing !== object {
          // The context holds that row already: it stays the row's object, and this one goes.
          object.lifecycle = .invalidated
          mergedInto.append(existing)
          continue
        }
        object.objectKey = key
        registered[key] = object
        object.lifecycle = .persisted
        mergedInto.append(object)
        continue
      }
      object.objectKey = key
      registered[key] = object
      object.lifecycle = .persisted
      object.rowVersion = 1
    }
    // Every inserted object now has its permanent key; what had a temporary key was one of
    // them, so the temporary keys go at once.
    registered.removeAllTemporary()
    return mergedInto
  }

  /// Step 6: deleted objects leave the context, except those the merge policy kept; returns
  /// the kept ones.
  private func settleDeletes(_ deletedObjects: [ManagedObject], _ applied: AppliedChanges)
    -> [(ManagedObject, Resolution)]
  {
    var kept: [(ManagedObject, Resolution)] = []
    for object in deletedObjects {
      if let entity = object.entity, let key = object.objectKey,
        applied.resolved[ResolvedRow(entityIndex: entity.index, primaryKey: key.value)] == .kept
      {
        object.isDeleted = false
        kept.append((object, .kept))
        continue
      }
      // Its row is gone and it has left the context: as in Core Data, it is no longer
      // `isDeleted` (nothing is left to delete) and `managedObjectContext` is nil.
      unlinkFromGraph(object)
      if let key = object.objectKey { registered[key] = nil }
      object.isDeleted = false
      object.lifecycle = .invalidated
    }
    return kept
  }

  /// Step 7: how the merge policy resolved each saved update that conflicted.
  private func resolutions(of savedUpdates: [ManagedObject], _ applied: AppliedChanges)
    -> [(ManagedObject, Resolution)]
  {
    savedUpdates.compactMap { object in
      guard let entity = object.entity, let key = object.objectKey,
        let resolution = applied.resolved[ResolvedRow(entityIndex: entity.index, primaryKey: key.value)]
      else { return nil }
      return (object, resolution)
    }
  }

  /// Step 8: nothing is pending any more.
  private func clearPendingChanges() {
    for object in updated { object.committedValues.removeAll() }
    for object in deletedInserts { object.isDeleted = false }
    inserted.removeAll()
    // The event ends with the save (processed at its start when someone listens).
    event = PendingEvent()
    forgetEventBases()
    updated.removeAll(alsoClearing: ManagedObject.changedInEvent)
    deleted.removeAll()
    deletedInserts.removeAll()
  }

  /// Step 9: objects take in what the store committed: resolved conflicts, delete
  /// propagation, and rows constraint merging chose.
  private func apply(_ outcome: SaveOutcome) {
    // Objects whose conflicts were resolved hold the row as it was committed.
    for (object, resolution) in outcome.resolved {
      if resolution == .deleted {
        forgetDeleted(object)
      } else {
        refresh(object, mergeChanges: true)
        object.awakeFromSnapshot(.mergePolicy)
      }
    }
    applyPropagation(outcome.propagation)
    // Objects that constraint merging made stored rows hold those rows as committed.
    for object in outcome.mergedInto { refresh(object, mergeChanges: false) }
  }

  // MARK: - Errors, with the context's objects

  /// A uniqueness conflict the store found, with the objects' IDs.
  private func describe(_ clash: UniquenessClash) -> UniquenessConflict {
    let entity = model.entities[Int(clash.entityIndex)]
    func stored(_ key: Int64) -> AnyManagedID {
      let concrete =
        (try? store.entityOfRow(primaryKey: key, in: model.entities[Int(entity.rootIndex)], connection: reader()))
      return AnyManagedID(
        storeIdentifier: store.identifier, entityName: (concrete ?? nil)?.name ?? entity.name, key: .permanent(key))
    }
    func insertedID(_ index: Int) -> AnyManagedID? { index < inserted.count ? anyID(of: inserted[index]) : nil }
    let objectID =
      clash.insertIndex.flatMap(insertedID) ?? clash.updatedKey.map(stored)
      ?? AnyManagedID(storeIdentifier: store.identifier, entityName: entity.name, key: .permanent(0))
    let conflictingID =
      clash.storedKey.map(stored) ?? clash.otherInsertIndex.flatMap(insertedID)
      ?? AnyManagedID(storeIdentifier: store.identifier, entityName: entity.name, key: .permanent(0))
    return UniquenessConflict(
      entityName: entity.name, constraint: clash.constraint, objectID: objectID, conflictingID: conflictingID)
  }

  /// A conflict the store reported, completed with what the object read and holds.
  private func describe(_ conflict: MergeConflict) -> MergeConflict {
    var conflict = conflict
    guard let (key, entity) = try? self.key(for: conflict.objectID), let object = registered[key] else {
      return conflict
    }
    var objectValues: [String: PrimitiveValue] = [:]
    for (index, attribute) in entity.storedAttributes.enumerated() {
      objectValues[attribute.name] = (try? entity.accessors[index].encode(object)) ?? .null
    }
    var readValues = objectValues
    for (slot, value) in object.committedValues where slot >= 0 {
      readValues[entity.storedAttributes[Int(slot)].name] = value
    }
    var involved = Set(object.committedValues.keys.filter { $0 >= 0 }.map { entity.storedAttributes[Int($0)].name })
    if let storeValues = conflict.storeValues {
      for (name, value) in storeValues where readValues[name] != value { involved.insert(name) }
    }
    conflict.objectValues = objectValues
    conflict.readValues = readValues
    conflict.attributes = involved
    return conflict
  }
}
