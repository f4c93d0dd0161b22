import Foundation
import Synchronization

/// Everything a context tracks: the identity map, the pending changes and its reader
/// connection. It lives on the context's executor only — the `ManagedObjectContext` actor
/// holds it, and its objects point back to it to fire faults and report changes — so none of
/// it needs a lock.
///
/// This file holds its state, identity and pending changes; each other job has a file of its
/// own: `+Faulting`, `+Materialize` (objects for fetched rows), `+Save`, `+Refresh`,
/// `+ObjectsByID`, `+Relationships`. The layers above add fetching (`Query/`), batch requests
/// (`Batch/`) and merging (`Sync/`).
final class ContextState: ObjectTracking {
  let store: PersistentStore
  var model: ManagedObjectModel { store.model }
  weak var context: ManagedObjectContext?
  weak var modelContext: ModelContext?
  var name: String?
  var transactionAuthor: String?

  // The pending-change lists and the identity map are `@exclusivity(unchecked)`: the state is
  // used only on its context's executor, no closure given to one of their mutating methods
  // reaches them again, and the run-time checks cost about 115 instructions per object
  // inserted or first changed, and several per save.

  /// One object per row (or per temporary ID): the identity map.
  @exclusivity(unchecked) var registered = IdentityMap()
  /// Inserted objects in insertion order (saved in that order, so keys follow it).
  @exclusivity(unchecked) var inserted: [ManagedObject] = []
  @exclusivity(unchecked) var updated = ObjectList(.updated)
  @exclusivity(unchecked) var deleted = ObjectList(.deleted)
  /// Inserted objects deleted before a save: they left the context at once, and are
  /// `isDeleted` until the next save or rollback ends their deletion, as saved ones are.
  @exclusivity(unchecked) var deletedInserts: [ManagedObject] = []
  private var readerConnection: (any DatabaseConnection)?
  /// A migration stage's context reads and writes inside the migration's open write
  /// transaction, on its connection (`StoreWriter` says how its writes go).
  let migrationTransaction: (any DatabaseConnection)?

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
  var changeObservers: [ObjectIdentifier: (ContextChanges) -> Void] = [:] {
    didSet { updateReporting() }
  }
  /// What changed since the context last processed its pending changes (`+PendingChanges`).
  @exclusivity(unchecked) var event = PendingEvent()
  /// Whether inserts, deletes and refreshes are noted in `event`: someone listens. (Read for
  /// every insert and delete: unchecked, as the lists above are.)
  @exclusivity(unchecked) var reportsObjectChanges = false
  /// For saved objects changed before the current event: their values when the last one
  /// ended (`changedValuesForCurrentEvent()`), by object.
  var eventBases: [ObjectIdentifier: EventBase] = [:]
  /// How many events the context ended (`processPendingChanges`).
  var eventSerial = 0
  /// True while a merge applies other contexts' and processes' changes.
  var isMerging = false
  /// The event during which a save, rollback or reset last dropped every event base: bases
  /// of that event or an earlier one are not kept.
  var eventBasesForgottenAt = 0
  /// The observers of the context's messages, in the order they were added.
  var messageObservers: [(token: ContextObservationToken, deliver: (Any) -> Void)] = []
  var nextObserverNumber = 0

  /// Whether a fault whose row is gone is marked deleted instead of stopping the program
  /// (`ManagedObjectContext.shouldDeleteInaccessibleFaults`).
  var shouldDeleteInaccessibleFaults = true
  /// How a save resolves conflicts (`ManagedObjectContext.mergePolicy`).
  var mergePolicy: MergePolicy = .error
  /// Set by a `HistoryMerger` on its effects context while its transactional hooks run: the
  /// consumer's checkpoint that the next save writes in the same transaction.
  var consumerCheckpoint: ConsumerCheckpoint?
  /// Observed objects a fetch reloaded, with what they held before: reported once the fetch
  /// is done, not while its rows are read and its table is out of the identity map (an
  /// observer's callback, or reloading a relationship to compare it, would miss objects).
  var refetchedObservations: [(ManagedObject, ObservationSnapshot)] = []
  /// The objects a fetch loaded outside its result (prefetched, or of another class), held
  /// here until their `awakeFromFetch()` runs, once the fetch is done and its table is back
  /// in the identity map. A fetch's result objects are awoken through the result itself.
  @exclusivity(unchecked) var awakening: [ManagedObject] = []
  /// Whether the objects a fetch loads call `awakeFromFetch()`: false for the context a batch
  /// request picks its rows with inside its write transaction, so that no application code
  /// runs while the store's write lock is held. A constant: read for every row a fetch loads,
  /// where a variable's exclusivity check cost a fetch 5 % more instructions.
  let wakesFetchedObjects: Bool

  /// The entity of the last object inserted.
  private var lastInsertedEntity: EntityDescription?

  /// What this context's objects hold to reach it.
  let link = TrackerLink()
  /// While `withoutRegisteringObjects` runs: each relationship fault fulfilled, with the key
  /// the fault held.
  var relationshipLoads: [(object: ManagedObject, index: Int32, foreignKey: Int64)]?

  init(
    store: PersistentStore, name: String?, migrationTransaction: (any DatabaseConnection)? = nil,
    wakesFetchedObjects: Bool = true
  ) {
    self.store = store
    self.name = name
    self.wakesFetchedObjects = wakesFetchedObjects
    self.migrationTransaction = migrationTransaction
    self.readerConnection = migrationTransaction
    link.tracker = self
  }

  func reader() throws -> any DatabaseConnection {
    if let readerConnection { return readerConnection }
    let connection = try store.makeReader()
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
  func checkEntity(of object: ManagedObject, named id: AnyManagedID) throws(ManagedIDError) {
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

  // MARK: - ObjectTracking

  func objectDidBecomeUpdated(_ object: ManagedObject) {
    // In the event too: the objects that joined `updated` since it began are its changed
    // ones (those with the bit: a refresh puts an object back without it).
    object.listMembership |= ManagedObject.changedInEvent
    updated.insert(object)
  }

  // MARK: - Changes

  func insert(_ object: ManagedObject) {
    if object.trackerLink === link {
      if object.isDeleted, object.lifecycle == .persisted {  // re-inserting a deleted object undeletes it
        object.isDeleted = false
        deleted.remove(object)
        noteUndelete(object)
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
    if reportsObjectChanges { noteInsert(object) }
    if !entity.relationships.isEmpty { linkRelationshipsOfInserted(object) }
    object.awakeFromInsert()
  }

  func delete(_ object: ManagedObject) {
    // An object of another live context is a programming error, as in Core Data ("cannot
    // delete objects in other contexts"); saving would otherwise silently delete nothing.
    precondition(
      object.trackerLink === link || object.tracker == nil, refusal("cannot delete", of: object))
    guard object.trackerLink === link, object.lifecycle != .invalidated else { return }
    // Core Data's hook, before the delete rules run, and again on a repeated delete.
    object.prepareForDeletion()
    guard !object.isDeleted else { return }
    // A fault (never loaded, or refreshed) carries no snapshot to check the delete against:
    // load it, so that the delete conflicts only with a change made after this point, as an
    // update of the same object would. A row already gone stays for the save to report.
    if object.isFault && object.lifecycle == .persisted { try? load(object) }
    object.isDeleted = true
    if reportsObjectChanges { noteDelete(object) }
    if object.lifecycle == .inserted {
      inserted.removeAll { $0 === object }
      if let key = object.objectKey { registered[key] = nil }
      object.lifecycle = .invalidated
      deletedInserts.append(object)
    } else {
      deleted.insert(object)
    }
  }

  func rollback() {
    noteRollback()
    forgetEventBases()
    for object in inserted {
      if let key = object.objectKey { registered[key] = nil }
      object.lifecycle = .invalidated
    }
    for object in updated {
      guard let entity = object.entity else { continue }
      var observed: [Int32] = []
      if object.observation != nil {
        for slot in object.committedValues.keys.map(entity.observedSlot) where !observed.contains(slot) {
          observed.append(slot)  // a composite's elements: the composite once
        }
      }
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
    let restored = updated.objects + deleted.objects
    inserted.removeAll()
    updated.removeAll(alsoClearing: ManagedObject.changedInEvent)
    deleted.removeAll()
    deletedInserts.removeAll()
    Self.forEachHeld(restored) { $0.awakeFromSnapshot(.rollback) }
  }

  /// Forgets every registered object; they must not be used afterwards.
  func reset() {
    let reported = reportsObjectChanges
    event = PendingEvent()
    forgetEventBases()
    defer {
      if reported {
        var message = ManagedObjectContext.ObjectsDidChangeMessage()
        message.invalidatedAll = true
        deliver(message)
      }
    }
    for object in registered.values where !object.isFault && object.lifecycle == .persisted {
      object.willTurnIntoFault()
      object.didTurnIntoFault()
    }
    for object in registered.values {
      object.lifecycle = .invalidated
      object.trackerLink = nil
    }
    for object in inserted { object.trackerLink = nil }
    for object in deleted { object.trackerLink = nil }
    registered.removeAll()
    inserted.removeAll()
    updated.removeAll(alsoClearing: ManagedObject.changedInEvent)
    deleted.removeAll()
    deletedInserts.removeAll()
  }

  /// Drops an object whose row another transaction deleted: it leaves the identity map and
  /// every pending set, and must not be used afterwards.
  func forgetDeleted(_ object: ManagedObject) {
    noteDelete(object, merged: true)
    forgetEventBases(of: object)
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
      let keys = try store.reservePrimaryKeys(count: group.count, root: root, in: migrationTransaction)
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
