import Foundation

// Keeping both sides of every relationship consistent in memory.
//
// A relationship's setter and its typed helpers call in here. Before anything changes, both
// sides are loaded (a fault would otherwise reload the store's stale links before the save)
// and the change is recorded in each object whose side changes; then the objects' fields are
// written directly (`RelationshipAccessor`), which calls no hook, so nothing recurses. A
// to-one that holds its key records its change as an attribute change of its key column; any
// other side records a marker (a negative slot in `committedValues`), so the object counts as
// updated and its save reports the relationship in history.

extension ManagedObject {
  /// The key under which `committedValues` marks a change of relationship `index` that is
  /// not stored in this object's row.
  static func relationshipMarker(_ index: Int32) -> Int32 { -(index + 1) }

  @usableFromInline
  final func _willAccessRelationship(slot: Int32) {
    if keyPathRecorder != nil {
      keyPathRecorder?.append(Self.relationshipMarker(slot))
      return
    }
    guard slot >= 0 else { return }
    if listMembership & Self.awaitsAwakeFromFetch != 0 && !isFault { awakeFetched() }  // prefetched
    loadRelationship(Int(slot))
    if observesAccess { observationAccess(slot: Self.relationshipMarker(slot)) }
  }

  @usableFromInline
  final func _relationshipWillChange(slot: Int32) {
    guard let entity, tracker != nil else { return }
    loadRelationship(Int(slot))
    recordRelationshipChange(entity.relationships[Int(slot)], index: slot)
  }

  @usableFromInline
  final func _relationshipDidChange(slot: Int32, from old: Any) {
    guard let entity, tracker != nil else { return }
    let relationship = entity.relationships[Int(slot)]
    defer { _observationDidSet(slot: Self.relationshipMarker(slot)) }
    var current = relationship.accessor.objects(in: self)
    if relationship.kind == .ordered {
      var seen = Set<ObjectIdentifier>()
      let unique = current.filter { seen.insert(ObjectIdentifier($0)).inserted }
      if unique.count != current.count {
        relationship.accessor.setObjects(unique, in: self)
        current = unique
      }
    }
    let before = (old as? any RelationshipValue)?.objects ?? []
    let beforeIDs = Set(before.map(ObjectIdentifier.init))
    let currentIDs = Set(current.map(ObjectIdentifier.init))
    for removed in before where !currentIDs.contains(ObjectIdentifier(removed)) {
      unlink(removed, through: relationship)
    }
    for added in current where !beforeIDs.contains(ObjectIdentifier(added)) {
      link(added, through: relationship)
    }
  }

  @usableFromInline
  final func _editRelationship(slot: Int32, inserting element: ManagedObject, at index: Int?) {
    guard let entity, slot >= 0 else {
      preconditionFailure("TypedStore: insert the object into a context before using its relationship helpers")
    }
    let relationship = entity.relationships[Int(slot)]
    loadRelationship(Int(slot))
    let wasMember = relationship.accessor.contains(element, in: self)
    if wasMember && relationship.kind != .ordered { return }
    changeSide(relationship, index: slot) { relationship.accessor.insert(element, at: index, in: self) }
    if !wasMember { link(element, through: relationship) }
  }

  @usableFromInline
  final func _editRelationship(slot: Int32, removing element: ManagedObject) {
    guard let entity, slot >= 0 else {
      preconditionFailure("TypedStore: insert the object into a context before using its relationship helpers")
    }
    let relationship = entity.relationships[Int(slot)]
    loadRelationship(Int(slot))
    guard relationship.accessor.contains(element, in: self) else { return }
    changeSide(relationship, index: slot) { relationship.accessor.remove(element, in: self) }
    unlink(element, through: relationship)
  }

  // MARK: - Helpers

  /// Loads this object's row if it is a fault, then relationship `index` if it is one.
  final func loadRelationship(_ index: Int) {
    guard let entity, let tracker else { return }
    if isFault { tracker.fulfillFault(of: self) }
    if entity.relationships[index].accessor.isFault(self) {
      tracker.fulfillRelationshipFault(of: self, index: Int32(index))
    }
  }

  /// Changes this object's side of `relationship` with `write`, recorded before and
  /// reported to observers around it.
  private func changeSide(_ relationship: RelationshipDescription, index: Int32, _ write: () -> Void) {
    recordRelationshipChange(relationship, index: index)
    write()
    _observationDidSet(slot: Self.relationshipMarker(index))
  }

  /// Notes, before it happens, that this object's side of `relationship` changes (and tells
  /// observers it will).
  final func recordRelationshipChange(_ relationship: RelationshipDescription, index: Int32) {
    observationWillSet(slot: Self.relationshipMarker(index))
    if let slot = relationship.foreignKeySlot {
      _willChangeValue(slot: slot)
      return
    }
    let marker = Self.relationshipMarker(index)
    guard listMembership & Self.inAwakeFromFetch == 0 else { return }
    // The context (a weak reference, costly to read) only when there is something to tell it.
    if lifecycle == .persisted && committedValues[marker] == nil {
      guard let tracker else { return }
      let wasUpdated = !committedValues.isEmpty
      committedValues[marker] = linksRead(relationship)
      if !wasUpdated {
        tracker.objectDidBecomeUpdated(self)
        return
      }
    }
    guard listMembership & Self.changedInEvent == 0, let tracker else { return }
    noteChangeInEvent(tracker)
  }

  /// What a marker of `relationship` keeps: for a side of a many-to-many, the keys of the
  /// objects it holds before its first change (`linkKeys(in:)` reads them back), so that the
  /// save of the side that writes the join table writes only this context's additions and
  /// removals, and a refresh of either side shows them on top of the store's links; `.null`
  /// for any other side.
  private func linksRead(_ relationship: RelationshipDescription) -> PrimitiveValue {
    guard case .joinTable = relationship.storage, !relationship.accessor.isFault(self) else {
      return .null
    }
    var keys: [Int64] = []
    for object in relationship.accessor.objects(in: self) {
      // A loaded side of a saved object holds saved objects only: anything else was added by a
      // change, which would have recorded the marker first.
      guard let key = object.objectKey, !key.isTemporary else { return .null }
      keys.append(key.value)
    }
    return .blob(keys.withUnsafeBufferPointer { Data(buffer: $0) })
  }

  /// The keys a marker recorded by `linksRead(_:)` holds, or nil for a marker that holds none.
  static func linkKeys(in marker: PrimitiveValue) -> [Int64]? {
    guard case .blob(let data) = marker else { return nil }
    var keys = [Int64](repeating: 0, count: data.count / MemoryLayout<Int64>.size)
    keys.withUnsafeMutableBytes { _ = data.copyBytes(to: $0) }
    return keys
  }

  /// The inverse side of `relationship` in `other` (one of its destination's objects).
  private func inverse(of relationship: RelationshipDescription, in other: ManagedObject) -> (
    RelationshipDescription, Int32
  )? {
    guard let otherEntity = other.entity, Int(relationship.inverseIndex) < otherEntity.relationships.count else {
      return nil
    }
    return (otherEntity.relationships[Int(relationship.inverseIndex)], relationship.inverseIndex)
  }

  /// `other` joined this object's side of `relationship`: make its inverse point here, taking
  /// `other` from its previous partner when the inverse is a to-one.
  private func link(_ other: ManagedObject, through relationship: RelationshipDescription) {
    adoptRelated(other)
    guard let (inverse, inverseIndex) = inverse(of: relationship, in: other) else { return }
    other.loadRelationship(Int(inverseIndex))
    if inverse.accessor.contains(self, in: other) { return }
    if !inverse.kind.isToMany, let previous = inverse.accessor.objects(in: other).first, previous !== self {
      // `other` leaves its previous partner's side of this same relationship.
      if let previousEntity = previous.entity, let index = indexOfRelationship(relationship, in: previousEntity) {
        previous.loadRelationship(index)
        let previousSide = previousEntity.relationships[index]
        if previousSide.accessor.contains(other, in: previous) {
          previous.changeSide(previousSide, index: Int32(index)) { previousSide.accessor.remove(other, in: previous) }
        }
      }
    }
    other.changeSide(inverse, index: inverseIndex) { inverse.accessor.insert(self, at: nil, in: other) }
  }

  /// `other` left this object's side of `relationship`: its inverse no longer points here.
  /// (This object's own side is left as it is: the caller changes it, or it is deleted.)
  final func unlinkInverse(of other: ManagedObject, through relationship: RelationshipDescription) {
    unlink(other, through: relationship)
  }

  private func unlink(_ other: ManagedObject, through relationship: RelationshipDescription) {
    guard other.trackerLink === trackerLink, let (inverse, inverseIndex) = inverse(of: relationship, in: other)
    else { return }
    other.loadRelationship(Int(inverseIndex))
    guard inverse.accessor.contains(self, in: other) else { return }
    other.changeSide(inverse, index: inverseIndex) { inverse.accessor.remove(self, in: other) }
  }

  /// The index of `relationship` (declared by this object's entity or a superentity) in
  /// `entity`, an entity of the same hierarchy: inherited relationships keep their index.
  private func indexOfRelationship(_ relationship: RelationshipDescription, in entity: EntityDescription) -> Int? {
    entity.relationships.firstIndex { $0.name == relationship.name && $0.entityName == relationship.entityName }
  }

  /// A related object that belongs to no context joins this object's context (as SwiftData
  /// does); one of another context or store is a programming error, as in Core Data: a
  /// setter cannot throw, and relating it would link rows its IDs do not name here.
  private func adoptRelated(_ other: ManagedObject) {
    guard other.trackerLink !== trackerLink else { return }
    guard let tracker else {
      preconditionFailure("TypedStore: a relationship cannot join objects of different contexts")
    }
    guard other.lifecycle == .detached else {
      preconditionFailure(tracker.refusal("cannot relate \(tracker.uri(of: self)) to", of: other))
    }
    tracker.insertRelated(other)
  }
}
