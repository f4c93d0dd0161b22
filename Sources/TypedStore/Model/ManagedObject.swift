/// The base class of every entity in a model.
///
/// Subclass it and declare attributes with `@Attribute`; the class name is the entity name.
///
/// ```swift
/// final class Note: ManagedObject {
///   @Attribute var title: String = ""
///   @Attribute var createdAt: Date? = nil
/// }
///
/// try await container.performBackgroundTask { context in
///   let note = Note(context: context)   // inserted, with a temporary ID
///   note.title = "Draft"
///   try context.save()                  // now permanent
/// }
/// ```
///
/// A managed object belongs to the context that inserted or fetched it and never leaves that
/// context's executor; pass its `managedID` to reach the same row from elsewhere. Object
/// identity is reference identity: within one context there is one object per row.
open class ManagedObject: Hashable {
  // The fields are declared with the one-byte ones together: a fetch allocates one object
  // per row, and every byte of padding is memory it fills. The bookkeeping fields are
  // `@exclusivity(unchecked)`: they are read and written only on the context's executor,
  // and a fetch checked exclusivity at run time some eight times per object (a fifth of
  // materializing one; docs/performance.md, "The measurements behind the code's shape").

  /// The entity of this object, once it belongs to a context.
  public final var entity: EntityDescription? { entityStorage }
  /// Internal, so that the optimizer sees every access and setting it (once per fetched
  /// object) needs no run-time exclusivity check, as a public stored property would.
  @exclusivity(unchecked) final var entityStorage: EntityDescription?
  /// The way back to the context's state (shared by the context's objects); nil outside one.
  @exclusivity(unchecked) final var trackerLink: TrackerLink?
  /// The parts of `objectKey`, stored apart so that its root index and state fill bytes that
  /// an optional `ObjectKey` would leave as padding (8 bytes less in every object).
  @exclusivity(unchecked) private final var keyValue: Int64 = 0
  @exclusivity(unchecked) final var rowVersion: Int64 = 0
  /// The committed values of the attributes changed since the last save, by slot.
  @exclusivity(unchecked) final var committedValues = CommittedValues()
  /// Set while the model resolves a key path: the slots read (`KeyPathResolution.swift`).
  @exclusivity(unchecked) final var keyPathRecorder: [Int32]?
  /// The object's observation registrar, made when a property is first read; nil for objects
  /// of entities that do not declare `Observable`, and until then.
  @exclusivity(unchecked) final var observation: ObjectObservation?
  @exclusivity(unchecked) private final var keyRoot: Int32 = 0
  /// 0 for no key, 1 for a permanent one, 2 for a temporary one.
  @exclusivity(unchecked) private final var keyState: UInt8 = 0
  @exclusivity(unchecked) final var lifecycle: ObjectStatus = .detached
  /// The context lists (updated, deleted) the object is in, one bit each; and the
  /// `awaitsAwakeFromFetch`, `inAwakeFromFetch`, `changedInEvent` and `reportsChanges` bits.
  @exclusivity(unchecked) final var listMembership: UInt8 = 0
  /// The bit of `listMembership` a fetch sets on the objects it made or fulfilled, cleared when
  /// their `awakeFromFetch()` runs.
  static let awaitsAwakeFromFetch: UInt8 = 4
  /// The bit of `listMembership` set while the object's `awakeFromFetch()` runs: its changes
  /// are not recorded then (Core Data's change processing is off around the call).
  static let inAwakeFromFetch: UInt8 = 8
  /// The bit of `listMembership` set on an object changed since its context last processed
  /// its pending changes (`ContextState.event`), so that it is noted once per event.
  static let changedInEvent: UInt8 = 16
  /// The bit of `listMembership` set on an object inserted while its context reports object
  /// changes: its changes are noted although it is not saved yet.
  static let reportsChanges: UInt8 = 32
  /// True for an object of an entity that declares `Observable`: its reads are reported.
  @exclusivity(unchecked) final var observesAccess = false

  /// True while reading an attribute must first do something: fulfil a fault, or record which
  /// attribute a key path reads. Kept in one flag so the common read costs one test.
  @exclusivity(unchecked) @usableFromInline final var _needsAccessHook = false

  /// Set when a key path applied to a probe (`keyPathRecorder` set) read `managedID`: the
  /// row's key, which a predicate compares as `pk`.
  @exclusivity(unchecked) final var recordedIdentityRead = false

  /// True when the object's attribute values have not been loaded yet.
  @exclusivity(unchecked) public internal(set) final var isFault = false {
    didSet { updateAccessHook() }
  }

  /// True while the object is marked for deletion: from `context.delete(_:)` until the save
  /// that deletes its row, or a rollback.
  ///
  /// As in Core Data, the save ends it: the object has then left its context, `isDeleted` is
  /// false again and `managedObjectContext` is nil (its `managedID` still names the row that
  /// was). An object whose row another context or process deleted — learned from a merge, a
  /// save's conflict resolution, or a fault whose row is gone — is marked deleted instead: it
  /// leaves its context too, and `isDeleted` stays true, since no save of its context deleted it.
  ///
  /// ```swift
  /// context.delete(note)
  /// note.isDeleted                  // true: the next save deletes the row
  /// try context.save()
  /// note.isDeleted                  // false
  /// note.managedObjectContext       // nil: the object has left the context
  /// ```
  ///
  /// To ask whether an object still stands for a row of its context, whatever deleted it,
  /// test `managedObjectContext != nil`.
  @exclusivity(unchecked) public internal(set) final var isDeleted = false

  /// The row the object stands for in its context's identity map; nil outside a context.
  final var objectKey: ObjectKey? {
    get { keyState == 0 ? nil : ObjectKey(rootIndex: keyRoot, isTemporary: keyState == 2, value: keyValue) }
    set {
      keyValue = newValue?.value ?? 0
      keyRoot = newValue?.rootIndex ?? 0
      keyState = newValue.map { $0.isTemporary ? 2 : 1 } ?? 0
    }
  }

  /// The context's state, if the object belongs to a context that still exists.
  final var tracker: (any ObjectTracking)? { trackerLink?.tracker }

  /// The entity's name in the model, the store, history, object URIs and the tool: the class
  /// name, unless the class overrides this to store itself under another name.
  ///
  /// ```swift
  /// final class TaskItem: ManagedObject {
  ///   override class var entityName: String { "Task" }
  ///   @Attribute var title: String = ""
  /// }
  /// ```
  ///
  /// Declare it once, on the class it names: a subclass that inherits the override without
  /// declaring its own is named after its class.
  open class var entityName: String { String(describing: self) }

  /// Whether objects of this entity that a `.cascade` rule deletes are loaded when their
  /// context has not loaded them, so that their `prepareForDeletion()`, `willSave()` and
  /// `didSave()` run as in Core Data (which always loads them). False by default: their rows
  /// are deleted in SQL by the save, without objects, which is much faster.
  ///
  /// ```swift
  /// final class Attachment: ManagedObject {
  ///   override class var loadsForCascadeDelete: Bool { true }
  ///   @Attribute var path: String = ""
  ///   override func prepareForDeletion() {
  ///     super.prepareForDeletion()
  ///     try? FileManager.default.removeItem(atPath: path)
  ///   }
  /// }
  /// ```
  open class var loadsForCascadeDelete: Bool { false }

  /// The entity's name in the model version before this one, when the entity was renamed
  /// (Core Data's renaming identifier): migrating a store renames its table, its entity code
  /// and its history's entity names, and keeps every row. Nil (the default) for an entity
  /// that kept its name.
  ///
  /// ```swift
  /// final class Customer: ManagedObject {        // was `Client` in version 1
  ///   override class var originalEntityName: String? { "Client" }
  ///   @Attribute var name: String = ""
  /// }
  /// ```
  open class var originalEntityName: String? { nil }

  /// The entity's compound uniqueness constraints; none unless the class overrides this.
  ///
  /// ```swift
  /// override class var uniquenessConstraints: [UniquenessConstraint] {
  ///   [UniquenessConstraint(\Person.givenName, \Person.familyName)]
  /// }
  /// ```
  open class var uniquenessConstraints: [UniquenessConstraint] { [] }

  /// Creates an object that belongs to no context yet; `context.insert(_:)` adds it.
  ///
  /// Every entity class needs this initializer: the store creates objects with it when it
  /// fetches rows. Subclasses that declare initializers of their own must also provide it.
  public required init() {}

  // MARK: - Life cycle
  // Core Data's hooks, with its names and timing (docs/lifecycle.md). Each runs on the
  // context's executor; the base implementations do nothing. Batch requests call none of
  // them, as in Core Data.

  /// Called once, when the object is inserted into a context (not when it is fetched): the
  /// place for defaults computed at insert. Changes made here are the insert's.
  ///
  /// ```swift
  /// override func awakeFromInsert() {
  ///   super.awakeFromInsert()
  ///   createdAt = Date()
  /// }
  /// ```
  open func awakeFromInsert() {}

  /// Called when a fetched object's values are loaded: when a fetch makes it, or when a fault
  /// is fulfilled (again after a refresh). Changes made here are not changes of the object:
  /// they mark nothing updated and are not saved, as Core Data's change processing is off
  /// around this call; use it for caches and transient values. Do not fetch or change
  /// relationships here.
  ///
  /// ```swift
  /// override func awakeFromFetch() {
  ///   super.awakeFromFetch()
  ///   searchKey = title.lowercased()   // a transient cache
  /// }
  /// ```
  open func awakeFromFetch() {}

  /// Called for each inserted, updated or deleted object a save is about to write, in the
  /// saving context, before validation: what it changes is saved in the same transaction.
  /// It runs once per object per save: an object it changes (itself or another) is saved as
  /// changed, and one that only then became changed gets its own call.
  ///
  /// ```swift
  /// override func willSave() {
  ///   super.willSave()
  ///   if isUpdated && !isDeleted { modifiedAt = Date() }
  /// }
  /// ```
  open func willSave() {}

  /// Called for each object a save wrote (inserted, updated or deleted), after the commit.
  ///
  /// ```swift
  /// override func didSave() {
  ///   super.didSave()
  ///   if isDeleted { thumbnailCache.remove(title) }
  /// }
  /// ```
  open func didSave() {}

  /// Called when the object is deleted (`context.delete(_:)`, again on each repeated call, and
  /// for each object a cascade deletes in the context), before the delete rules run: the
  /// place for clean-up and custom propagation.
  ///
  /// ```swift
  /// override func prepareForDeletion() {
  ///   super.prepareForDeletion()
  ///   folder?.noteCount -= 1
  /// }
  /// ```
  open func prepareForDeletion() {}

  /// Called before a loaded object becomes a fault or is reloaded: a refresh
  /// (`refresh(_:mergeChanges:)`, `refreshAllObjects()`, a merge that refreshes it) or a
  /// `reset()`.
  ///
  /// ```swift
  /// override func willTurnIntoFault() {
  ///   super.willTurnIntoFault()
  ///   observer?.cancel()
  /// }
  /// ```
  open func willTurnIntoFault() {}

  /// Called after the object became a fault (or was reloaded), for the same events as
  /// ``willTurnIntoFault()``.
  ///
  /// ```swift
  /// override func didTurnIntoFault() {
  ///   super.didTurnIntoFault()
  ///   searchKey = nil
  /// }
  /// ```
  open func didTurnIntoFault() {}

  /// Called when the object's values were set back from a snapshot (Core Data's
  /// `awake(fromSnapshotEvents:)`): `.rollback` for an object whose changes or deletion
  /// `rollback()` discarded, `.mergePolicy` for one whose conflict the merge policy resolved
  /// during a save. Runs with change processing off, as `awakeFromFetch()`: recompute
  /// derived values and caches here.
  ///
  /// ```swift
  /// override func awake(fromSnapshotEvents events: SnapshotEvents) {
  ///   super.awake(fromSnapshotEvents: events)
  ///   searchKey = title.lowercased()
  /// }
  /// ```
  open func awake(fromSnapshotEvents events: SnapshotEvents) {}

  /// Calls `awake(fromSnapshotEvents:)` with change processing off.
  final func awakeFromSnapshot(_ events: SnapshotEvents) {
    guard lifecycle == .persisted, !isFault else { return }
    let wasAwakening = listMembership & Self.inAwakeFromFetch != 0
    listMembership |= Self.inAwakeFromFetch
    awake(fromSnapshotEvents: events)
    if !wasAwakening { listMembership &= ~Self.inAwakeFromFetch }
  }

  // MARK: - Validation
  // Called by `save()` (and `context.validate()`) after `willSave()`, for the objects it
  // writes. Every failure of every object is collected into one
  // `StoreError.validationFailed`, and nothing is written.

  /// Validates the object about to be inserted: throw to refuse it (`changedAttributeNames`
  /// says what it sets).
  ///
  /// ```swift
  /// override func validateForInsert() throws {
  ///   try super.validateForInsert()
  ///   if endDate < startDate { throw EventError.endsBeforeItStarts }
  /// }
  /// ```
  open func validateForInsert() throws {}

  /// Validates the object about to be updated: throw to refuse it (`changedAttributeNames`
  /// says what changed).
  ///
  /// ```swift
  /// override func validateForUpdate() throws {
  ///   try super.validateForUpdate()
  ///   if isArchived && isPinned { throw NoteError.pinnedAndArchived }
  /// }
  /// ```
  open func validateForUpdate() throws {}

  /// Validates the object about to be deleted.
  ///
  /// ```swift
  /// override func validateForDelete() throws {
  ///   try super.validateForDelete()
  ///   if isLocked { throw NoteError.locked }
  /// }
  /// ```
  open func validateForDelete() throws {}

  // MARK: - State

  /// True for an object inserted into its context and not saved yet.
  public final var isInserted: Bool { lifecycle == .inserted }

  /// True for a saved object with attribute changes not saved yet.
  public final var isUpdated: Bool { lifecycle == .persisted && !committedValues.isEmpty }

  /// True when the object has unsaved changes: inserted, updated or deleted.
  public final var hasChanges: Bool { isInserted || isUpdated || isDeleted }

  /// The names of the attributes and relationships changed since the last save.
  public final var changedAttributeNames: Set<String> {
    guard let entity else { return [] }
    if isInserted { return Set(entity.storedAttributes.map(\.name)) }
    return Set(committedValues.keys.map { entity.propertyName(ofSlot: $0) })
  }

  // MARK: - Hashable (identity)

  /// Whether the two are the same object: a context holds one object per row.
  public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }

  /// Hashes the object's identity, as `==` compares it.
  public final func hash(into hasher: inout Hasher) {
    hasher.combine(ObjectIdentifier(self))
  }

  // MARK: - Hooks called by @Attribute

  /// Whether reading an attribute must first do something (see `_needsAccessHook`).
  final func updateAccessHook() {
    _needsAccessHook =
      isFault || keyPathRecorder != nil || observesAccess || listMembership & Self.awaitsAwakeFromFetch != 0
  }

  /// Calls `awakeFromFetch()` on a loaded object with change processing off, as Core Data
  /// does: what it sets is not recorded as a change (`_willChangeValue`). An object a reset or
  /// a refresh took away meanwhile (invalidated, or a fault again) is passed over: it is
  /// awoken when it is loaded again. A fetch calls it for its objects once it is done; a
  /// prefetched object calls it at its first use, as Core Data wakes prefetched objects.
  final func awakeFetched() {
    listMembership &= ~Self.awaitsAwakeFromFetch
    if _needsAccessHook { updateAccessHook() }
    guard lifecycle == .persisted, !isFault else { return }
    let wasAwakening = listMembership & Self.inAwakeFromFetch != 0
    listMembership |= Self.inAwakeFromFetch
    awakeFromFetch()
    if !wasAwakening { listMembership &= ~Self.inAwakeFromFetch }
  }

  @usableFromInline
  final func _willAccessValue(slot: Int32) {
    if listMembership & Self.awaitsAwakeFromFetch != 0 && !isFault { awakeFetched() }  // prefetched
    if observesAccess && !isFault {  // the common case for objects of Observable entities
      observationAccess(slot: slot)
      return
    }
    if keyPathRecorder != nil {
      keyPathRecorder?.append(slot)
      return
    }
    if isFault {
      guard let tracker else {
        fatalError("TypedStore: an attribute of a fault was read after its context was deallocated or reset")
      }
      tracker.fulfillFault(of: self)
    }
    if observesAccess { observationAccess(slot: slot) }
  }

  /// Records the attribute's committed value before its first change, and tells observers it
  /// will change. Returns whether the setter must call `_didChangeValue` after the write
  /// (observers must hear it, or a composite keeps only its changed elements): the setter
  /// asks this, not the object's fields, because a field read from inlined code in the
  /// user's module costs a run-time exclusivity check.
  @usableFromInline
  @discardableResult
  final func _willChangeValue(slot: Int32) -> Bool {
    guard slot >= 0 else { return false }
    // An inserted object has no committed values to keep and cannot be a fault: unless it is
    // observed, there is nothing to do, and reading `tracker` (a weak reference) would cost
    // more than the rest of setting the attribute.
    if lifecycle == .inserted && observation == nil && listMembership & Self.reportsChanges == 0 { return false }
    guard let tracker else { return false }  // an object in no context tracks nothing
    if isFault { tracker.fulfillFault(of: self) }
    if listMembership & Self.awaitsAwakeFromFetch != 0 { awakeFetched() }  // prefetched, first used
    let observed = observation != nil
    if observed { observationWillSet(slot: slot) }
    guard listMembership & Self.inAwakeFromFetch == 0 else { return observed }
    if lifecycle == .persisted, let entity, !entity.compositeEnds.isEmpty, entity.compositeEnds[Int(slot)] > 0 {
      willChangeComposite(slot: slot, of: entity, tracker: tracker)
      return true  // the setter then calls `_observationDidSet`, which keeps what changed
    }
    if lifecycle == .persisted, committedValues[slot] == nil, let entity {
      let wasUpdated = !committedValues.isEmpty
      committedValues[slot] = (try? entity.accessors[Int(slot)].encode(self)) ?? .null
      if !wasUpdated {
        tracker.objectDidBecomeUpdated(self)  // noted in the event too
        return observed
      }
    }
    noteChangeInEvent(tracker)
    return observed
  }

  /// Before a composite attribute of a saved object is set: records the saved value of each
  /// of its elements not recorded yet, and which those are (`keepChangedElements` drops the
  /// ones the set leaves as they were).
  private func willChangeComposite(slot: Int32, of entity: EntityDescription, tracker: any ObjectTracking) {
    let wasUpdated = !committedValues.isEmpty
    var added: [Int32] = []
    for element in slot..<entity.compositeEnds[Int(slot)] where committedValues[element] == nil {
      committedValues[element] = (try? entity.accessors[Int(element)].encode(self)) ?? .null
      added.append(element)
    }
    trackerLink?.compositeSet = TrackerLink.CompositeSet(object: ObjectIdentifier(self), slot: slot, added: added)
    if wasUpdated { noteChangeInEvent(tracker) } else { tracker.objectDidBecomeUpdated(self) }
  }

  /// After a composite attribute of a saved object was set: of the elements whose saved values
  /// the set recorded, forgets those that still hold them, so that only the elements whose
  /// values differ count as changed (in `changedValues()`, merges and history). Elements
  /// recorded by earlier changes stay recorded, as any attribute's do. When the composite has
  /// no element recorded left, its first stays: setting a value equal to the saved one is a
  /// change, as for any attribute.
  final func keepChangedElements(slot: Int32, of entity: EntityDescription) {
    guard let set = trackerLink?.compositeSet, set.object == ObjectIdentifier(self), set.slot == slot else { return }
    trackerLink?.compositeSet = nil
    for element in set.added.reversed() {
      if let saved = committedValues[element], (try? entity.accessors[Int(element)].encode(self)) == saved {
        committedValues[element] = nil
      }
    }
    if !(slot..<entity.compositeEnds[Int(slot)]).contains(where: { committedValues[$0] != nil }),
      let first = set.added.first, first == slot
    {
      committedValues[slot] = (try? entity.accessors[Int(slot)].encode(self)) ?? .null
    }
  }

  /// After an attribute set that `_willChangeValue` asked to hear about: for a composite of a
  /// saved object, keeps only the elements that changed; then tells observers.
  @usableFromInline
  final func _didChangeValue(slot: Int32) {
    if slot >= 0, lifecycle == .persisted, let entity, !entity.compositeEnds.isEmpty,
      entity.compositeEnds[Int(slot)] > 0
    {
      keepChangedElements(slot: slot, of: entity)
    }
    _observationDidSet(slot: slot)
  }

  /// Notes the object in its context's current event, once per event: a saved object, or an
  /// inserted one whose context reports object changes.
  @inline(__always)
  final func noteChangeInEvent(_ tracker: any ObjectTracking) {
    guard listMembership & Self.changedInEvent == 0,
      lifecycle == .persisted || listMembership & Self.reportsChanges != 0
    else { return }
    tracker.objectDidChangeInEvent(self)
  }

  /// Gives every attribute and relationship field its slot, so that later writes are tracked.
  final func assignSlots() {
    guard let entity else { return }
    let base = Unmanaged.passUnretained(self).toOpaque()
    withExtendedLifetime(self) {
      entity.slotFields.withUnsafeBufferPointer { fields in
        for field in fields { (base + field.offset).assumingMemoryBound(to: Int32.self).pointee = field.slot }
      }
    }
  }

  /// Makes every relationship a fault, for an object whose row is (re)loaded from the store:
  /// a to-one that holds its key gets it from the row.
  final func makeRelationshipsFaults() {
    guard let entity else { return }
    for relationship in entity.relationships where !relationship.holdsForeignKey {
      relationship.accessor.makeFault(self, foreignKey: 0)
    }
  }
}

/// Where an object stands in its context's life cycle.
enum ObjectStatus: Sendable {
  /// Created with `init()`, not inserted anywhere.
  case detached
  /// Inserted, not saved yet.
  case inserted
  /// Backed by a row in the store.
  case persisted
  /// Its context was reset or its row deleted by a save; the object must not be used.
  case invalidated
}

/// The row an object stands for, unique within one store: the root entity's table and the
/// primary key, or a temporary number before the first save.
struct ObjectKey: Hashable, Sendable {
  let rootIndex: Int32
  let isTemporary: Bool
  let value: Int64
}

/// The link from a context's objects to its state: one per context, held strongly by each
/// object and holding the state weakly, since the context holds its objects and not the
/// reverse. (Setting a strong reference costs a fetch less than a weak one in every object.)
final class TrackerLink {
  /// `@exclusivity(unchecked)`: set once, when the context's state is made, and read on its
  /// executor; the run-time check cost the first change of a saved object about 110
  /// instructions.
  @exclusivity(unchecked) weak var tracker: (any ObjectTracking)?

  /// A composite attribute being set in one of the context's objects: the element slots whose
  /// saved values its `_willChangeValue` recorded, for its `_didChangeValue` (the two run on
  /// the context's executor, one right after the other).
  struct CompositeSet {
    var object: ObjectIdentifier
    var slot: Int32
    var added: [Int32]
  }

  var compositeSet: CompositeSet?
}

/// What an object calls back into its context with. The Context layer implements it; the
/// Model layer only knows this protocol.
protocol ObjectTracking: AnyObject {
  /// Loads the object's row now; the object is a fault.
  func fulfillFault(of object: ManagedObject)
  /// The object, saved and unchanged until now, had its first attribute changed.
  func objectDidBecomeUpdated(_ object: ManagedObject)
  /// The object changed for the first time since the context last processed its pending
  /// changes (its first change since its save goes to `objectDidBecomeUpdated` instead).
  func objectDidChangeInEvent(_ object: ManagedObject)
  /// Loads relationship `index` of the object, which is a fault.
  func fulfillRelationshipFault(of object: ManagedObject, index: Int32)
  /// A related object that belonged to no context joins this one.
  func insertRelated(_ object: ManagedObject)
  /// What a precondition failure says when `action` (e.g. "cannot relate X to") meets
  /// `other`, an object of another context or store: both named by their IDs.
  func refusal(_ action: String, of other: ManagedObject) -> String
  /// The URI of the ID of `object`, an object of this tracker.
  func uri(of object: ManagedObject) -> String
}
