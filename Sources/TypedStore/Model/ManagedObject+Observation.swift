import Observation

// Swift's Observation for managed objects of entities whose class conforms to `Observable`.
//
// An `@Observable` class keeps an `ObservationRegistrar` and calls `access` on every read of
// a property and `willSet`/`didSet` around every write. A managed object does the same, with
// two differences that keep the cost off every object that nobody observes:
//
// - Only entities that declare `Observable` take part. Their objects read attributes through
//   the access hook (the one flag test every attribute read makes already), and each gets its
//   registrar the first time one of its properties is read. Objects of other entities carry
//   a nil reference and a false flag, nothing else: a registrar is two allocations, and
//   `access` a call into Observation, on every read of every fetched object.
// - The registrar hears key paths of its own, one per slot (`\ObservedSlots.[slot]`), made once
//   per entity, instead of the user's key paths: the context knows changes by slot (a merge
//   reloads a row; a rollback restores committed values) and has no key path of the class at
//   hand then. The registrar ignores the subject and compares key paths, so this is the same
//   to an observer, and it is per object, since each object has its own registrar.
//
// Changes made in the object (an attribute or relationship set, in this object or as the
// inverse of one) call `willSet` before and `didSet` after the write, as `@Observable` does.
// Changes that come from the store (a merge, a refresh, a rollback, a save that resolves a
// conflict) are compared with the values before and reported after the new values are in
// place, for the properties whose values differ.

/// The subject of the key paths observation registrars hear from managed objects: one key path
/// per attribute slot or relationship marker (a negative slot).
final class ObservedSlots: Observable, Sendable {
  static let subject = ObservedSlots()

  subscript(slot: Int32) -> Int32 { slot }
}

/// The key paths of one entity's slots, for its objects' registrars. (A class: reading one
/// from the entity then copies no arrays.)
final class ObservationKeyPaths: Sendable {
  private let attributes: [KeyPath<ObservedSlots, Int32> & Sendable]
  private let relationships: [KeyPath<ObservedSlots, Int32> & Sendable]

  init(attributeCount: Int, relationshipCount: Int) {
    attributes = (0..<Int32(attributeCount)).map(Self.keyPath)
    relationships = (0..<Int32(relationshipCount)).map { Self.keyPath(ManagedObject.relationshipMarker($0)) }
  }

  private static func keyPath(_ slot: Int32) -> KeyPath<ObservedSlots, Int32> & Sendable {
    \ObservedSlots.[slot]
  }

  /// The key path of an attribute slot, or of the relationship a negative slot marks.
  subscript(slot: Int32) -> KeyPath<ObservedSlots, Int32>? {
    if slot >= 0 {
      guard Int(slot) < attributes.count else { return nil }
      return attributes[Int(slot)]
    }
    let index = Int(-slot - 1)
    guard index < relationships.count else { return nil }
    return relationships[index]
  }
}

/// An object's registrar, made when one of its properties is first read.
final class ObjectObservation {
  let registrar = ObservationRegistrar()
}

extension ManagedObject {
  /// Reports a read of `slot` to Observation (an attribute slot, or a relationship marker).
  final func observationAccess(slot: Int32) {
    guard let keyPath = entity?.observationKeyPaths?[slot] else { return }
    if let observation {
      observation.registrar.access(ObservedSlots.subject, keyPath: keyPath)
    } else {
      let observation = ObjectObservation()
      self.observation = observation
      observation.registrar.access(ObservedSlots.subject, keyPath: keyPath)
    }
  }

  /// Tells observers that `slot` is about to change; a no-op unless something read the object.
  final func observationWillSet(slot: Int32) {
    guard let observation, let keyPath = entity?.observationKeyPaths?[slot] else { return }
    observation.registrar.willSet(ObservedSlots.subject, keyPath: keyPath)
  }

  /// Tells observers that `slot` changed.
  @usableFromInline
  final func _observationDidSet(slot: Int32) {
    guard let observation, let keyPath = entity?.observationKeyPaths?[slot] else { return }
    observation.registrar.didSet(ObservedSlots.subject, keyPath: keyPath)
  }

  /// Reports changes that already happened (from the store) to observers: `willSet` and
  /// `didSet` for each slot.
  final func observationChanged(slots: some Sequence<Int32>) {
    guard observation != nil else { return }
    for slot in slots {
      observationWillSet(slot: slot)
      _observationDidSet(slot: slot)
    }
  }

  /// Makes reads of this object's properties go through the access hook, for an object of an
  /// entity that declares `Observable`.
  final func observeAccess() {
    observesAccess = true
    _needsAccessHook = true
  }

  /// What an observed object looks like before the store changes it, to report afterwards
  /// what changed: nil for an object nobody observes.
  final func observationSnapshot() -> ObservationSnapshot? {
    guard observation != nil, let entity else { return nil }
    var snapshot = ObservationSnapshot()
    if !isFault {
      snapshot.values = entity.accessors.map { try? $0.encode(self) }
    }
    for (index, relationship) in entity.relationships.enumerated() where !relationship.accessor.isFault(self) {
      snapshot.relationships[Int32(index)] = relationship.accessor.objects(in: self).map(ObjectIdentifier.init)
    }
    return snapshot
  }

  /// Reports to observers what changed since `snapshot`. Relationships that were loaded are
  /// loaded again to compare them (the object is observed, so they are likely to be read);
  /// with `assumeChanged`, every property the snapshot holds is reported instead, for an
  /// object turned into a fault whose new values are not read yet.
  final func reportObservedChanges(since snapshot: ObservationSnapshot, assumeChanged: Bool = false) {
    guard let entity else { return }
    var changed: [Int32] = []
    if let before = snapshot.values {
      for (slot, value) in before.enumerated() {
        guard entity.storedAttributes[slot].foreignKeyOf == nil else { continue }
        if assumeChanged || isFault || (try? entity.accessors[slot].encode(self)) != value {
          let observed = entity.compositeSlot(of: Int32(slot))  // a composite's elements: the composite
          if changed.last != observed { changed.append(observed) }
        }
      }
    }
    for (index, objects) in snapshot.relationships.sorted(by: { $0.key < $1.key }) {
      let relationship = entity.relationships[Int(index)]
      if !assumeChanged && !isFault && lifecycle == .persisted {
        loadRelationship(Int(index))
      }
      let current = relationship.accessor.isFault(self) ? nil : relationship.accessor.objects(in: self)
      let same =
        current.map {
          relationship.kind == .ordered
            ? $0.map(ObjectIdentifier.init) == objects : Set($0.map(ObjectIdentifier.init)) == Set(objects)
        } ?? false
      if assumeChanged || !same {
        changed.append(Self.relationshipMarker(index))
      }
    }
    observationChanged(slots: changed)
  }
}

/// An observed object's attribute values (as stored) and loaded relationships, before the
/// store changes them.
struct ObservationSnapshot {
  /// By slot; nil for a fault.
  var values: [PrimitiveValue?]?
  /// The loaded relationships' objects, by relationship index.
  var relationships: [Int32: [ObjectIdentifier]] = [:]
}
