// Core Data's pending changes: what a context's objects went through since it last processed
// them (its "current event"), reported by `processPendingChanges()` as one
// `ObjectsDidChangeMessage`, and the base of `changedValuesForCurrentEvent()`.
//
// Objects saved before that change during the event are always noted (a bit on the object and
// a list, once per object per event: the save already pays for the first change of an
// object). Inserts, deletes, refreshes and rollbacks are noted only while someone listens
// (`reportsObjectChanges`), so that a context nobody observes keeps no second list of them.

/// What changed in a context since it last processed its pending changes.
struct PendingEvent {
  /// Objects whose attributes or relationships changed in the event, each marked
  /// `ManagedObject.changedInEvent`, beyond those that joined the context's updated list in
  /// it (`ObjectList.joinedInEvent`): saved objects changed in an earlier event too, and
  /// inserted ones while reporting.
  var changed: [ManagedObject] = []
  // The rest only while the context reports object changes:
  /// Inserted objects (marked `changedInEvent` too).
  var inserted: [ManagedObject] = []
  /// Objects deleted by `delete(_:)`.
  var deleted: [ManagedObject] = []
  /// Objects forgotten because a merged change deleted their row.
  var forgotten: [ManagedObject] = []
  /// Objects refreshed, and objects whose changes `rollback()` discarded.
  var refreshed: [ManagedObject] = []
  /// Inserted objects `rollback()` dropped.
  var invalidated: [ManagedObject] = []
  /// Objects `rollback()` gave their saved state back (a live query places them again).
  var restored: [ManagedObject] = []

  var isEmpty: Bool {
    changed.isEmpty && inserted.isEmpty && deleted.isEmpty && forgotten.isEmpty && refreshed.isEmpty
      && invalidated.isEmpty
  }
}

extension ContextState {
  // MARK: - Noting changes

  /// The object changed for the first time in this event (and is saved, or reported).
  func objectDidChangeInEvent(_ object: ManagedObject) {
    object.listMembership |= ManagedObject.changedInEvent
    event.changed.append(object)
  }

  /// Notes an insert while reporting: the object's later changes are reported too.
  func noteInsert(_ object: ManagedObject) {
    guard reportsObjectChanges else { return }
    object.listMembership |= ManagedObject.reportsChanges | ManagedObject.changedInEvent
    event.inserted.append(object)
  }

  /// Notes a delete while reporting (`merged`: another context or process deleted the row);
  /// an object inserted in this same event goes unreported.
  func noteDelete(_ object: ManagedObject, merged: Bool = false) {
    guard reportsObjectChanges else { return }
    if merged {
      event.forgotten.append(object)
    } else if let index = event.inserted.firstIndex(where: { $0 === object }) {
      event.inserted.remove(at: index)
    } else {
      event.deleted.append(object)
    }
  }

  /// Notes a refresh while reporting. One the context made itself (not a merge, which tells
  /// live queries of its rows itself) may move the object in a live query's results.
  func noteRefresh(_ object: ManagedObject) {
    guard reportsObjectChanges else { return }
    event.refreshed.append(object)
    if !isMerging { event.restored.append(object) }
  }

  /// Notes an undelete (`insert(_:)` of a deleted object) while reporting: a delete of this
  /// event is taken back; one already reported comes back as a refresh.
  func noteUndelete(_ object: ManagedObject) {
    guard reportsObjectChanges else { return }
    if let index = event.deleted.firstIndex(where: { $0 === object }) {
      event.deleted.remove(at: index)
    } else {
      event.refreshed.append(object)
      event.restored.append(object)
    }
  }

  /// Notes what `rollback()` undoes while reporting (called before it does).
  func noteRollback() {
    guard reportsObjectChanges else { return }
    // Objects inserted in this event were never reported: they go unreported.
    let unreported = Set(event.inserted.map(ObjectIdentifier.init))
    event.invalidated += inserted.filter { !unreported.contains(ObjectIdentifier($0)) }
    event.refreshed += updated.objects + deleted.objects
    event.restored += updated.objects + deleted.objects
  }

  /// Whether inserts, deletes and refreshes are noted: someone listens to them.
  func updateReporting() {
    let wasReporting = reportsObjectChanges
    reportsObjectChanges =
      !changeObservers.isEmpty || messageObservers.contains { $0.token.kind == .objectsDidChange }
    // Objects inserted before anyone listened report their later changes from now on.
    if reportsObjectChanges && !wasReporting {
      for object in inserted { object.listMembership |= ManagedObject.reportsChanges }
    }
  }

  // MARK: - Processing them

  /// Ends the current event: reports it to the observers of `ObjectsDidChangeMessage` and to
  /// live queries that follow unsaved changes, and keeps, for each saved object changed in it,
  /// the values `changedValuesForCurrentEvent()` compares with next.
  func processPendingChanges() {
    guard !event.isEmpty || !updated.joinedInEvent.isEmpty else { return }
    var ended = event
    event = PendingEvent()
    for object in updated.joinedInEvent where object.listMembership & ManagedObject.changedInEvent != 0 {
      ended.changed.append(object)
    }
    updated.startEvent()
    eventSerial += 1
    // The values at the end of this event, taken now and kept once the observers were told:
    // what they read of `changedValuesForCurrentEvent()` is this event's change.
    var bases: [EventBase] = []
    for object in ended.changed {
      object.listMembership &= ~ManagedObject.changedInEvent
      if object.lifecycle == .persisted && !object.committedValues.isEmpty,
        let base = eventBase(of: object)
      {
        bases.append(base)
      }
    }
    for object in ended.inserted { object.listMembership &= ~ManagedObject.changedInEvent }
    defer { keep(bases) }
    guard reportsObjectChanges else { return }
    let message = objectsDidChangeMessage(for: ended)
    // What live queries follow, taken before observers may change anything.
    var changes = ContextChanges(origin: .pendingChanges)
    changes.inserted = Set(message.inserted.compactMap(anyID))
    changes.updated = Set((Array(message.updated) + ended.restored.filter { !$0.isDeleted }).compactMap(anyID))
    changes.deleted = Set((Array(message.deleted) + ended.invalidated).compactMap(anyID))
    if !message.isEmpty { deliver(message) }
    notifyChanges(changes)
  }

  /// Keeps the bases an event ended with, unless an event an observer ended meanwhile (a
  /// later one) kept its own.
  private func keep(_ bases: [EventBase]) {
    for base in bases {
      let id = ObjectIdentifier(base.object)
      if base.serial <= eventBasesForgottenAt { continue }  // a save or rollback came since
      if let current = eventBases[id], current.serial > base.serial { continue }
      eventBases[id] = base
    }
  }

  /// The message of an event: each object once, in the set that says the most (a deleted
  /// object is not also updated; an inserted one is not also updated).
  private func objectsDidChangeMessage(for event: PendingEvent) -> ManagedObjectContext.ObjectsDidChangeMessage {
    var message = ManagedObjectContext.ObjectsDidChangeMessage()
    message.deleted = Set(event.deleted.filter(\.isDeleted) + event.forgotten)
    message.invalidated = Set(event.invalidated)
    message.inserted = Set(event.inserted.filter { $0.lifecycle == .inserted && !$0.isDeleted })
    message.updated = Set(
      event.changed.filter { object in
        !object.isDeleted && (object.isInserted || object.isUpdated) && !message.inserted.contains(object)
      })
    message.refreshed = Set(
      event.refreshed.filter { object in
        !message.updated.contains(object) && !message.deleted.contains(object)
          && !message.invalidated.contains(object)
      })
    return message
  }

  /// The current values of the object's changed properties: stored values of attributes, the
  /// objects of relationship sides.
  private func eventBase(of object: ManagedObject) -> EventBase? {
    guard let entity = object.entity else { return nil }
    let base = EventBase(object, serial: eventSerial)
    for (slot, committed) in object.committedValues {
      base.committed[slot] = committed
      if slot >= 0, let name = entity.storedAttributes[Int(slot)].foreignKeyOf,
        let relationship = entity.relationship(named: name)
      {
        // A to-one's object, which may not be saved yet (then it has no key to keep).
        base.values[slot] = .objects(relationship.accessor.objects(in: object))
      } else if slot >= 0 {
        if let value = try? entity.accessors[Int(slot)].encode(object) { base.values[slot] = .value(value) }
      } else {
        let relationship = entity.relationships[Int(-slot - 1)]
        if !relationship.accessor.isFault(object) {
          base.values[slot] = .objects(relationship.accessor.objects(in: object))
        }
      }
    }
    return base
  }

  // MARK: - Observers

  /// Registers an observer of one kind of message.
  func addObserver<Message: ContextMessage>(for type: Message.Type, using body: @escaping (Message) -> Void)
    -> ContextObservationToken
  {
    nextObserverNumber += 1
    let token = ContextObservationToken(context: ObjectIdentifier(self), number: nextObserverNumber, kind: Message.kind)
    messageObservers.append((token, { if let message = $0 as? Message { body(message) } }))
    updateReporting()
    return token
  }

  func removeObserver(_ token: ContextObservationToken) {
    messageObservers.removeAll { $0.token == token }
    updateReporting()
  }

  /// Whether anyone observes messages of `kind`.
  func observes(_ kind: ContextMessageKind) -> Bool {
    messageObservers.contains { $0.token.kind == kind }
  }

  /// Calls the observers of the message's kind, in the order they were added.
  func deliver<Message: ContextMessage>(_ message: Message) {
    for observer in messageObservers where observer.token.kind == Message.kind { observer.deliver(message) }
  }
}

/// The values of an object's changed properties at the end of an event, by slot: stored
/// values of attributes and to-one keys, the objects of changed relationship sides. What
/// `changedValuesForCurrentEvent()` compares with, kept by the context
/// (`ContextState.eventBases`) until the object's changes are saved, discarded or refreshed.
final class EventBase {
  enum Value {
    case value(PrimitiveValue)
    case objects([ManagedObject])
  }
  /// The object (held, so that its identifier names no other object meanwhile).
  let object: ManagedObject
  /// Which event of its context ended with these values (`ContextState.eventSerial`).
  let serial: Int
  var values: [Int32: Value] = [:]
  /// The object's committed values when the base was taken: a slot whose committed value
  /// differs now was cleared and changed again since, and the base no longer applies to it.
  var committed: [Int32: PrimitiveValue] = [:]

  init(_ object: ManagedObject, serial: Int) {
    self.object = object
    self.serial = serial
  }

  /// The base of `slot`, if it still applies.
  func value(of slot: Int32) -> Value? {
    guard let value = values[slot], object.committedValues[slot] == committed[slot] else { return nil }
    return value
  }
}

extension ContextState {
  /// Forgets the event bases of every object (a save, rollback or reset cleared their
  /// changes), or of one (refreshed, or deleted by a merged change).
  func forgetEventBases(of object: ManagedObject? = nil) {
    if object == nil { eventBasesForgottenAt = eventSerial }
    guard !eventBases.isEmpty else { return }
    if let object {
      eventBases[ObjectIdentifier(object)] = nil
    } else {
      eventBases.removeAll()
    }
  }
}
