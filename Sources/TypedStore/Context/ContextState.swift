import Foundation
import Synchronization

/// Everything a context tracks: the identity map, the pending changes and its reader
/// connection. It lives on the context's executor only — the `ManagedObjectContext` actor
/// holds it, and its objects point back to it to fire faults and report changes — so none of
/// it needs a lock.
final class ContextState: ObjectTracking {
  let store: PersistentStore
  var model: ManagedObjectModel { store.model }
  weak var context: ManagedObjectContext?
  weak var modelContext: ModelContext?
  var name: String?
  var transactionAuthor: String?

  /// One object per row (or per temporary ID): the identity map.
  private(set) var registered = IdentityMap()
  /// Inserted objects in insertion order (saved in that order, so keys follow it).
  private(set) var inserted: [ManagedObject] = []
  private(set) var updated = ObjectList(.updated)
  private(set) var deleted = ObjectList(.deleted)
  /// Inserted objects deleted before a save: they left the context at once, and are
  /// `isDeleted` until the next save or rollback ends their deletion, as saved ones are.
  private var deletedInserts: [ManagedObject] = []
  private var readerConnection: SQLiteConnection?

  private static let temporaryNonce = UInt64.random(in: 1...UInt64.max)
  private static let temporaryCounter = Atomic<Int64>(0)

  /// Subscribes a context to every commit of its store: given where to deliver them and the
  /// identity of the context's own saves (left out), returns what keeps the subscription alive.
  typealias AutomaticMerging = @Sendable (any MergeTarget, ObjectIdentifier) -> AnyObject

  /// How the context subscribes to its store's commits, and the subscription while
  /// `automaticallyMergesChangesFromParent` is on.
  var automaticMerging: AutomaticMerging?
  var automaticMergeSubscription: AnyObject?
  /// The last transaction whose changes the context's objects show (see `mergeChanges`).
  var mergedThrough: Int64 = 0
  /// Called after each save and each merge with the rows it touched (live queries, such as a
  /// `FetchedResultsController`, follow the context through these).
  var changeObservers: [ObjectIdentifier: (ContextChanges) -> Void] = [:]

  /// What this context's objects hold to reach it.
  let link = TrackerLink()
  /// While `withoutRegisteringObjects` runs: each relationship fault fulfilled, with the key
  /// the fault held.
  var relationshipLoads: [(object: ManagedObject, index: Int32, foreignKey: Int64)]?

  init(store: PersistentStore, name: String?) {
    self.store = store
    self.name = name
    link.tracker = self
  }

  func reader() throws -> SQLiteConnection {
    if let readerConnection { return readerConnection }
    let connection = try store.makeReadConnection()
    readerConnection = connection
    return connection
  }

  var hasChanges: Bool { !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty }

  // MARK: - Identity

  func anyID(of object: ManagedObject) -> AnyManagedID? {
    guard let entity = object.entity, let key = object.objectKey else { return nil }
    return AnyManagedID(
      storeIdentifier: store.identifier, entityName: entity.name,
      key: key.isTemporary ? .temporary(nonce: Self.temporaryNonce, number: key.value) : .permanent(key.value))
  }

  /// The identity-map key of an ID this store made (a change of a merged transaction, a
  /// conflict), and its entity.
  func key(for id: AnyManagedID) throws -> (ObjectKey, EntityDescription) {
    guard id.storeIdentifier == store.identifier else {
      throw ManagedIDError.foreignStore(id: id.description, expected: store.identifier)
    }
    guard let entity = model.entity(named: id.entityName) else { throw ManagedIDError.unknownEntity(id.entityName) }
    guard entity.hasClass else { throw ModelError(entity: entity.name, reason: .noClass) }
    switch id.key {
    case .permanent(let pk):
      return (ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: pk), entity)
    case .temporary(let nonce, let number):
      guard nonce == Self.temporaryNonce else { throw ManagedIDError.temporaryID(id.description) }
      return (ObjectKey(rootIndex: entity.rootIndex, isTemporary: true, value: number), entity)
    }
  }

  /// Where an ID given to a public API leads in this context, checked without I/O: the
  /// identity-map key of the row or inserted object it names, and the entity it says.
  ///
  /// - Throws: `ManagedIDError.foreignStore` for an ID of another store; `.entityMismatch` when
  ///   its entity is not `Entity` nor one of its subentities; `.temporaryID` for a temporary ID
  ///   that no object of this context has (another context's or process's, or one whose object
  ///   was saved or dropped since).
  func resolve<Entity: ManagedObject>(_ id: ManagedID<Entity>) throws(ManagedIDError) -> (ObjectKey, EntityDescription)
  {
    let untyped = id.untyped
    guard untyped.storeIdentifier == store.identifier else {
      throw .foreignStore(id: untyped.description, expected: store.identifier)
    }
    guard let expected = model.entity(for: Entity.self) else { throw .unknownEntity(String(describing: Entity.self)) }
    guard let entity = model.entity(named: untyped.entityName), model.isEntity(entity.name, kindOf: expected.name)
    else {
      throw .entityMismatch(id: untyped.description, expected: expected.name, found: untyped.entityName)
    }
    switch untyped.key {
    case .permanent(let pk):
      return (ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: pk), entity)
    case .temporary(let nonce, let number):
      // Core Data's rule: a temporary ID means nothing outside the context that made it.
      let key = ObjectKey(rootIndex: entity.rootIndex, isTemporary: true, value: number)
      guard nonce == Self.temporaryNonce, registered[key]?.lifecycle == .inserted else {
        throw .temporaryID(untyped.description)
      }
      return (key, entity)
    }
  }

  /// Throws unless the registered `object` is of the entity `id` says (a URI may name a row
  /// under another entity than the row's).
  private func checkEntity(of object: ManagedObject, named id: AnyManagedID) throws(ManagedIDError) {
    let found = object.entity?.name ?? String(describing: type(of: object))
    guard found == id.entityName else {
      throw .entityMismatch(id: id.description, expected: id.entityName, found: found)
    }
  }

  func uri(of object: ManagedObject) -> String {
    anyID(of: object)?.description ?? "a \(object.entity?.name ?? "\(type(of: object))")"
  }

  /// What a precondition failure says of `other`, an object `action` cannot take because it
  /// is not an object of this context.
  func refusal(_ action: String, of other: ManagedObject) -> String {
    let otherState = other.tracker as? ContextState
    let otherID = otherState?.uri(of: other) ?? "a \(other.entity?.name ?? "\(type(of: other))")"
    let whose =
      otherState == nil
      ? "an object that is no longer in a context"
      : otherState?.store.identifier == store.identifier
        ? "an object of another context"
        : "an object of another store (\(otherState?.store.identifier.uuidString ?? ""))"
    return
      "TypedStore: \(action) \(otherID), \(whose); as in Core Data, a context works only with its own objects: "
      + "get this context's object for the row with existingObject(with:)"
  }

  func registeredObject(for key: ObjectKey) -> ManagedObject? { registered[key] }

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

  private func adopt(_ object: ManagedObject, entity: EntityDescription, key: ObjectKey, status: ObjectStatus) {
    object.entityStorage = entity
    object.trackerLink = link
    object.lifecycle = status
    object.objectKey = key
    object.assignSlots()
    if entity.observationKeyPaths != nil { object.observeAccess() }
    registered[key] = object
  }

  /// The object for a fetched row: the registered one (loaded if it was a fault, refreshed if
  /// it is unchanged and the row moved on) or a new one, registered in `table` (the identity
  /// map's table of `entity`'s root, moved out of the map for the fetch).
  private func materialize(
    _ row: Row, requested entity: EntityDescription, reader: RowReader, table: inout KeyTable
  ) throws -> ManagedObject {
    let primaryKey = row.primaryKey
    let slot = table.reserveSlot(for: primaryKey)
    if let existing = table.object(at: slot) {
      if let existingEntity = existing.entity,
        existing.isFault || (!existing.hasChanges && existing.rowVersion != row.version)
      {
        let snapshot = existing.isFault ? nil : existing.observationSnapshot()
        try row.decode(into: existing, entity: existingEntity)
        if let snapshot { refetchedObservations.append((existing, snapshot)) }
      }
      return existing
    }
    // Only a hierarchy with subentities needs each row's entity name, and most rows are
    // usually of the requested entity: compare bytes before making a string.
    let concrete =
      entity.subentityNames.isEmpty || row.isEntity(entity) ? entity : (model.entity(named: row.entityName) ?? entity)
    let object = concrete.objectType.init()
    object.entityStorage = concrete
    object.trackerLink = link
    object.lifecycle = .persisted
    object.objectKey = ObjectKey(rootIndex: entity.rootIndex, isTemporary: false, value: primaryKey)
    if concrete.observationKeyPaths != nil { object.observeAccess() }
    if concrete === entity {
      try row.decode(into: object, reader: reader, assigningSlots: true)
    } else {
      try row.decode(into: object, entity: concrete, assigningSlots: true)
    }
    table.insert(object, key: primaryKey, at: slot)  // registered once its values are loaded
    return object
  }

  /// The objects for the rows a SELECT over `entity`'s table returns.
  ///
  /// An object of exactly `Object`'s class (the common case) needs no dynamic cast; a
  /// registered object of another class (a fault made for a superentity's ID) is checked, and
  /// left out if it is not an `Object`.
  func fetchObjects<Object: ManagedObject>(
    _ type: Object.Type, of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue]
  ) throws -> [Object] {
    let rowReader = store.layout(of: entity).reader(for: entity)
    return try withFetchTable(of: entity) { table in
      // The loop collects unretained references: every object it returns is held by `table`
      // until the result below holds it too. Appending to an `[Object]` in the loop looked
      // its generic metadata up on every row (as costly as the identity map); one conversion
      // at the end does not.
      let objects = try store.withRows(of: entity, clauses: clauses, arguments: arguments, connection: reader()) {
        rows in
        var objects: [Unmanaged<ManagedObject>] = []
        while try rows.next() {
          let object = try materialize(rows.row, requested: entity, reader: rowReader, table: &table)
          if Swift.type(of: object) == Object.self || object is Object { objects.append(.passUnretained(object)) }
        }
        return objects
      }
      return [Object](unsafeUninitializedCapacity: objects.count) { buffer, initialized in
        for (index, object) in objects.enumerated() {
          buffer.initializeElement(at: index, to: unsafeDowncast(object.takeUnretainedValue(), to: Object.self))
        }
        initialized = objects.count
      }
    }
  }

  /// Calls `visit` with the object for each row a SELECT over `entity`'s table returns, as
  /// soon as it is loaded: for a caller that files the objects somewhere (a prefetch builds
  /// relationship values) while each is still in the processor's cache, and without an
  /// array of them. `visit` must not touch the identity map; each object it gets is
  /// registered, and stays so at least until the next fetch.
  func forEachFetchedObject(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue],
    _ visit: (ManagedObject) throws -> Void
  ) throws {
    let rowReader = store.layout(of: entity).reader(for: entity)
    try withFetchTable(of: entity) { table in
      try store.withRows(of: entity, clauses: clauses, arguments: arguments, connection: reader()) { rows in
        while try rows.next() {
          try visit(try materialize(rows.row, requested: entity, reader: rowReader, table: &table))
        }
      }
    }
  }

  /// Runs a fetch's loop over the identity map's table of `entity`'s root, moved out of the map
  /// meanwhile (nothing in `body` may touch the map except through it), after dropping the
  /// objects nobody uses; then puts it back and reports the observed objects it reloaded.
  private func withFetchTable<Result>(
    of entity: EntityDescription, _ body: (inout KeyTable) throws -> Result
  ) rethrows -> Result {
    var table = registered.take(root: entity.rootIndex)
    defer {
      registered.restore(table, root: entity.rootIndex)
      reportRefetchedObservations()
    }
    _ = table.dropUnreferenced { $0.lifecycle == .persisted && !$0.hasChanges }
    return try body(&table)
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
  private func loadOrForget(_ object: ManagedObject, key: ObjectKey) throws {
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
  private func load(_ object: ManagedObject) throws {
    guard let entity = object.entity, let key = object.objectKey, !key.isTemporary else {
      object.isFault = false
      return
    }
    guard try store.loadRow(primaryKey: key.value, into: object, entity: entity, connection: reader()) else {
      throw ManagedIDError.noSuchRow(anyID(of: object)?.description ?? entity.name)
    }
  }

  // MARK: - ObjectTracking

  /// Whether a fault whose row is gone is marked deleted instead of stopping the program
  /// (`ManagedObjectContext.shouldDeleteInaccessibleFaults`).
  var shouldDeleteInaccessibleFaults = true
  /// How a save resolves conflicts (`ManagedObjectContext.mergePolicy`).
  var mergePolicy: MergePolicy = .error
  /// Observed objects a fetch reloaded, with what they held before: reported once the fetch
  /// is done, not while its rows are read and its table is out of the identity map (an
  /// observer's callback, or reloading a relationship to compare it, would miss objects).
  var refetchedObservations: [(ManagedObject, ObservationSnapshot)] = []

  func reportRefetchedObservations() {
    guard !refetchedObservations.isEmpty else { return }
    let reports = refetchedObservations
    refetchedObservations.removeAll()
    for (object, snapshot) in reports { object.reportObservedChanges(since: snapshot) }
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
        "TypedStore: cannot fulfil a fault for \(anyID(of: object)?.description ?? object.entity?.name ?? "?"): \(error)"
      )
    }
  }

  func objectDidBecomeUpdated(_ object: ManagedObject) {
    updated.insert(object)
  }

  // MARK: - Changes

  /// The entity of the last object inserted.
  private var lastInsertedEntity: EntityDescription?

  func insert(_ object: ManagedObject) {
    if object.trackerLink === link {
      if object.isDeleted, object.lifecycle == .persisted {  // re-inserting a deleted object undeletes it
        object.isDeleted = false
        deleted.remove(object)
      }
      return
    }
    precondition(object.lifecycle == .detached, refusal("cannot insert", of: object))
    let entity: EntityDescription
    if let last = lastInsertedEntity, last.objectType == type(of: object) {
      entity = last  // inserts usually come in runs of one class: no hashed lookup for each
    } else {
      guard let found = model.entity(for: type(of: object)) else {
        preconditionFailure("TypedStore: \(type(of: object)) is not an entity of this context's model")
      }
      entity = found
      lastInsertedEntity = found
    }
    let number = Self.temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue
    adopt(
      object, entity: entity, key: ObjectKey(rootIndex: entity.rootIndex, isTemporary: true, value: number),
      status: .inserted)
    inserted.append(object)
    if !entity.relationships.isEmpty { linkRelationshipsOfInserted(object) }
  }

  func delete(_ object: ManagedObject) {
    // An object of another live context is a programming error, as in Core Data ("cannot
    // delete objects in other contexts"); saving would otherwise silently delete nothing.
    precondition(
      object.trackerLink === link || object.tracker == nil, refusal("cannot delete", of: object))
    guard object.trackerLink === link, object.lifecycle != .invalidated, !object.isDeleted else { return }
    // A fault (never loaded, or refreshed) carries no snapshot to check the delete against:
    // load it, so that the delete conflicts only with a change made after this point, as an
    // update of the same object would. A row already gone stays for the save to report.
    if object.isFault && object.lifecycle == .persisted { try? load(object) }
    object.isDeleted = true
    if object.lifecycle == .inserted {
      inserted.removeAll { $0 === object }
      if let key = object.objectKey { registered[key] = nil }
      object.lifecycle = .invalidated
      deletedInserts.append(object)
    } else {
      deleted.insert(object)
    }
  }

  func save() throws {
    try applyDeleteRulesInMemory()
    let updatedObjects = updated.filter { !$0.isDeleted && $0.lifecycle == .persisted }
    let deletedObjects = deleted.filter { $0.lifecycle == .persisted }
    if model.hasValidationRules {
      let failures = validationFailures(inserted + updatedObjects)
      if !failures.isEmpty { throw StoreError.validationFailed(failures) }
    }
    if model.hasRelationships && insertedObjectsAreReferenced(inserted + updatedObjects) {
      try obtainPermanentIDs(for: inserted)
    }
    var saved = ContextChanges()
    if !changeObservers.isEmpty {
      saved.updated = Set(updatedObjects.compactMap(anyID))
      saved.deleted = Set(deletedObjects.compactMap(anyID))
    }
    var changes = ChangeSet()
    changes.inserts.reserveCapacity(inserted.count)
    for object in inserted {
      guard let entity = object.entity, let key = object.objectKey else { continue }
      let values = try entity.accessors.map { try $0.encode(object) }
      changes.inserts.append(
        ChangeSet.Insert(entityIndex: entity.index, primaryKey: key.isTemporary ? nil : key.value, values: values))
      if !entity.relationships.isEmpty { changes.links += try linkWrites(for: object, changed: { _ in true }) }
    }
    changes.policy = mergePolicy
    // Only the policies that may write the whole object need every value of each update,
    // and only store-trump needs the values read (to see which attributes the store changed).
    let needsAllValues = mergePolicy == .objectTrump || mergePolicy == .overwrite
    let needsOriginals = mergePolicy == .storeTrump
    var savedUpdates: [ManagedObject] = []
    /// By position in `savedUpdates`: whether the object's row is rewritten (its version moves).
    var rewritesRow: [Bool] = []
    changes.updates.reserveCapacity(updatedObjects.count)
    savedUpdates.reserveCapacity(updatedObjects.count)
    rewritesRow.reserveCapacity(updatedObjects.count)
    // Updated objects usually changed the same attributes: they share one slots array (no
    // allocation per object, and the store groups them by comparing the same buffer).
    var slots: [Int32] = []
    var sharedSlots: [Int32] = []
    for object in updatedObjects {
      guard let entity = object.entity, let key = object.objectKey else { continue }
      slots.removeAll(keepingCapacity: true)
      var values: [PrimitiveValue] = []
      var originals: [PrimitiveValue] = []
      var relationshipNames: [String] = []
      var changedRelationships = Set<Int32>()
      for (slot, committed) in object.committedValues {
        guard slot >= 0 else {
          let index = -slot - 1
          relationshipNames.append(entity.relationships[Int(index)].name)
          changedRelationships.insert(index)
          continue
        }
        if let relationship = entity.storedAttributes[Int(slot)].foreignKeyOf,
          let index = entity.relationships.firstIndex(where: { $0.name == relationship })
        {
          changedRelationships.insert(Int32(index))  // its inverse's positions may need writing
        }
        let current = try entity.accessors[Int(slot)].encode(object)
        if current != committed {
          slots.append(slot)
          values.append(current)
          if needsOriginals { originals.append(committed) }
        }
      }
      if !changedRelationships.isEmpty {
        changes.links += try linkWrites(for: object, changed: changedRelationships.contains)
      }
      guard !slots.isEmpty || !relationshipNames.isEmpty else { continue }
      if slots != sharedSlots { sharedSlots = slots }
      savedUpdates.append(object)
      rewritesRow.append(!slots.isEmpty)
      changes.updates.append(
        ChangeSet.Update(
          entityIndex: entity.index, primaryKey: key.value, version: object.rowVersion, slots: sharedSlots,
          values: values,
          originalValues: originals,
          allValues: needsAllValues && !slots.isEmpty ? try entity.accessors.map { try $0.encode(object) } : nil,
          relationshipNames: relationshipNames))
    }
    for object in deletedObjects {
      guard let entity = object.entity, let key = object.objectKey else { continue }
      changes.deletes.append(
        ChangeSet.Delete(entityIndex: entity.index, primaryKey: key.value, version: object.rowVersion))
    }

    var resolved: [(ManagedObject, Resolution)] = []
    var propagation = DeletePropagation()
    var mergedInto: [ManagedObject] = []
    if !changes.isEmpty {
      let applied: AppliedChanges
      do {
        applied = try store.commit(
          changes, info: TransactionInfo(author: transactionAuthor, contextName: name, origin: ObjectIdentifier(self)))
      } catch StoreError.mergeConflict(let conflicts) {
        throw StoreError.mergeConflict(conflicts.map(describe))
      } catch let clashes as UniquenessClashes {
        throw StoreError.uniquenessConflict(clashes.clashes.map(describe))
      }
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
      for (object, rewritten) in zip(savedUpdates, rewritesRow) where rewritten { object.rowVersion += 1 }
      propagation = applied.propagation
      for object in deletedObjects {
        if let entity = object.entity, let key = object.objectKey,
          applied.resolved[ResolvedRow(entityIndex: entity.index, primaryKey: key.value)] == .kept
        {
          object.isDeleted = false
          resolved.append((object, .kept))
          continue
        }
        // Its row is gone and it has left the context: as in Core Data, it is no longer
        // `isDeleted` (nothing is left to delete) and `managedObjectContext` is nil.
        unlinkFromGraph(object)
        if let key = object.objectKey { registered[key] = nil }
        object.isDeleted = false
        object.lifecycle = .invalidated
      }
      for object in savedUpdates {
        guard let entity = object.entity, let key = object.objectKey,
          let resolution = applied.resolved[ResolvedRow(entityIndex: entity.index, primaryKey: key.value)]
        else { continue }
        resolved.append((object, resolution))
      }
    }
    // The inserted objects' IDs are permanent now. (Taken here, before the objects nobody
    // holds are let go below.)
    if !changeObservers.isEmpty { saved.inserted = Set(inserted.compactMap(anyID)) }
    for object in updated { object.committedValues.removeAll() }
    for object in deletedInserts { object.isDeleted = false }
    inserted.removeAll()
    updated.removeAll()
    deleted.removeAll()
    deletedInserts.removeAll()
    // Objects whose conflicts were resolved hold the row as it was committed.
    for (object, resolution) in resolved {
      if resolution == .deleted {
        forgetDeleted(object)
      } else {
        refresh(object, mergeChanges: true)
      }
    }
    applyPropagation(propagation)
    // Objects that constraint merging made stored rows hold those rows as committed.
    for object in mergedInto { refresh(object, mergeChanges: false) }
    if !changeObservers.isEmpty {
      for (entityName, keys) in propagation.deleted {
        for key in keys {
          saved.deleted.insert(
            AnyManagedID(storeIdentifier: store.identifier, entityName: entityName, key: .permanent(key)))
        }
      }
      for (entityName, keys) in propagation.updated {
        for key in keys {
          saved.updated.insert(
            AnyManagedID(storeIdentifier: store.identifier, entityName: entityName, key: .permanent(key)))
        }
      }
    }
    // Saved objects nobody else holds go, as Core Data releases them: an import loop that
    // saves every 10,000 objects keeps one batch in memory, not all of them.
    registered.dropUnreferenced { $0.lifecycle == .persisted && !$0.hasChanges }
    if !changeObservers.isEmpty { notifyChanges(saved) }
  }

  func notifyChanges(_ changes: ContextChanges) {
    guard !changes.isEmpty else { return }
    for observer in changeObservers.values { observer(changes) }
  }

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

  func rollback() {
    for object in inserted {
      if let key = object.objectKey { registered[key] = nil }
      object.lifecycle = .invalidated
    }
    for object in updated {
      guard let entity = object.entity else { continue }
      let observed = object.observation == nil ? [] : object.committedValues.keys.map { entity.observedSlot(of: $0) }
      for (slot, value) in object.committedValues where slot >= 0 {
        try? entity.accessors[Int(slot)].decode(value, into: object)
      }
      object.committedValues.removeAll()
      // The store holds the links as they were: loaded sides load again when next read.
      object.makeRelationshipsFaults()
      object.observationChanged(slots: observed)
    }
    for object in deleted { object.isDeleted = false }
    for object in deletedInserts { object.isDeleted = false }
    inserted.removeAll()
    updated.removeAll()
    deleted.removeAll()
    deletedInserts.removeAll()
  }

  /// Forgets every registered object; they must not be used afterwards.
  func reset() {
    for object in registered.values {
      object.lifecycle = .invalidated
      object.trackerLink = nil
    }
    for object in inserted { object.trackerLink = nil }
    for object in deleted { object.trackerLink = nil }
    registered.removeAll()
    inserted.removeAll()
    updated.removeAll()
    deleted.removeAll()
    deletedInserts.removeAll()
  }

  /// Turns the object back into a fault (dropping its changes), or with `mergeChanges`
  /// reloads its saved values and re-applies its unsaved changes on top. An object whose row
  /// is gone is marked deleted (or, with `shouldDeleteInaccessibleFaults` off, stays a fault).
  func refresh(_ object: ManagedObject, mergeChanges: Bool) {
    guard object.trackerLink === link, object.lifecycle == .persisted, let entity = object.entity else { return }
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

  /// Drops an object whose row another transaction deleted: it leaves the identity map and
  /// every pending set, and must not be used afterwards.
  func forgetDeleted(_ object: ManagedObject) {
    unlinkFromGraph(object)
    if let key = object.objectKey { registered[key] = nil }
    updated.remove(object)
    deleted.remove(object)
    object.isDeleted = true
    object.lifecycle = .invalidated
  }

  /// Runs `body` and then forgets every object it registered: for answers that promise to
  /// register none (`fetchObjectIDs(for:)`), computed with the same code as a fetch, which
  /// makes an object for each row it reads when the context's unsaved changes take part.
  /// Relationships of objects registered before that `body` loaded are faults again
  /// afterwards, so that no object of the context holds one it no longer knows; what `body`
  /// loaded into those objects themselves stays, as after a fetch.
  func withoutRegisteringObjects<Result>(_ body: () throws -> Result) rethrows -> Result {
    let before = Set(registered.values.map(ObjectIdentifier.init))
    let outer = relationshipLoads
    relationshipLoads = []
    defer {
      let loads = relationshipLoads ?? []
      relationshipLoads = outer.map { $0 + loads }
      for object in registered.values where !before.contains(ObjectIdentifier(object)) {
        if let key = object.objectKey { registered[key] = nil }
        object.lifecycle = .invalidated
        object.trackerLink = nil
      }
      for load in loads where before.contains(ObjectIdentifier(load.object)) && load.object.lifecycle == .persisted {
        guard let entity = load.object.entity else { continue }
        entity.relationships[Int(load.index)].accessor.makeFault(load.object, foreignKey: load.foreignKey)
      }
    }
    return try body()
  }

  /// Gives inserted objects their primary keys now, before they are saved.
  func obtainPermanentIDs(for objects: [ManagedObject]) throws {
    var byTable: [String: [ManagedObject]] = [:]
    for object in objects where object.trackerLink === link && object.lifecycle == .inserted {
      guard let entity = object.entity, object.objectKey?.isTemporary == true else { continue }
      byTable[entity.tableName, default: []].append(object)
    }
    for (_, group) in byTable.sorted(by: { $0.key < $1.key }) {
      guard let root = group.first?.entity.flatMap({ model.entity(named: $0.rootName) }) else { continue }
      let keys = try store.reservePrimaryKeys(count: group.count, root: root)
      for (object, pk) in zip(group, keys) {
        guard let old = object.objectKey else { continue }
        registered[old] = nil
        let key = ObjectKey(rootIndex: root.rootIndex, isTemporary: false, value: pk)
        object.objectKey = key
        registered[key] = object
      }
    }
  }
}

// MARK: - Automatic merging and objects by ID

/// Where a subscription delivers commits for a context to merge, later, on the context's own
/// isolation.
protocol MergeTarget: AnyObject, Sendable {
  func enqueueMerge(_ changes: StoreChanges)
  func enqueueRefreshAllObjects()
}

extension ContextState {
  func setMergesAutomatically(_ on: Bool, into target: any MergeTarget) {
    if !on {
      automaticMergeSubscription = nil
    } else if automaticMergeSubscription == nil {
      automaticMergeSubscription = automaticMerging?(target, ObjectIdentifier(self))
    }
  }

  func refreshAllObjects() {
    for object in registered.values where !object.isFault {
      refresh(object, mergeChanges: true)
    }
  }

  func existingObject<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    try object(named: id, loading: true)
  }

  func object<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    try object(named: id, loading: false)
  }

  func registeredObject<Entity: ManagedObject>(for id: ManagedID<Entity>) throws(ManagedIDError) -> Entity? {
    let (key, _) = try resolve(id)
    guard let object = registeredObject(for: key) else { return nil }
    try checkEntity(of: object, named: id.untyped)
    return object as? Entity
  }

  /// The object `id` names: the registered one, or — once the row is known to exist and to be
  /// of the entity the ID says (one primary-key read) — a new fault of it; with `loading`, a
  /// fault is loaded. Nothing is registered for an ID that names no row.
  private func object<Entity: ManagedObject>(named id: ManagedID<Entity>, loading: Bool) throws -> Entity {
    let (key, entity) = try resolve(id)
    let object: ManagedObject
    if let registered = registered[key], registered.lifecycle != .invalidated {
      try checkEntity(of: registered, named: id.untyped)
      if loading && registered.isFault { try load(registered) }
      object = registered
    } else {
      // Not registered, so the ID is permanent (`resolve` refused any other temporary one).
      let root = model.entities[Int(entity.rootIndex)]
      guard let concrete = try store.entityOfRow(primaryKey: key.value, in: root, connection: reader()) else {
        throw ManagedIDError.noSuchRow(id.description)
      }
      guard concrete === entity else {
        throw ManagedIDError.entityMismatch(id: id.description, expected: entity.name, found: concrete.name)
      }
      object = fault(for: key, entity: concrete)
      if loading { try loadOrForget(object, key: key) }
    }
    guard let typed = object as? Entity else {
      throw ManagedIDError.entityMismatch(
        id: id.description, expected: String(describing: Entity.self), found: object.entity?.name ?? "?")
    }
    return typed
  }
}

/// The rows a save or a merge touched, by ID.
struct ContextChanges {
  var inserted: Set<AnyManagedID> = []
  var updated: Set<AnyManagedID> = []
  var deleted: Set<AnyManagedID> = []
  var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}
