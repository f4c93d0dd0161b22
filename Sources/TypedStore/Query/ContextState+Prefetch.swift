import Foundation

// Prefetching (`FetchRequest.relationshipKeyPathsForPrefetching`): after a fetch, each named
// relationship of the results is loaded with one query for all of them (two for a
// many-to-many: the links, then the rows), instead of one query per object when each is
// first touched. The related objects come back loaded, not as faults.

extension ContextState {
  /// The relationship indexes a request prefetches, checked before the store is read.
  ///
  /// - Throws: `FetchError.notARelationship` for a key path that names no relationship.
  func prefetchedRelationships<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> [Int] {
    try request.relationshipKeyPathsForPrefetching.map { keyPath in
      guard let index = model.relationshipIndex(for: keyPath as PartialKeyPath<Entity>) else {
        throw FetchError.notARelationship(model.describe(keyPath, on: model.entity(for: Entity.self)))
      }
      return index
    }
  }

  /// Loads relationship `index` of every loaded, saved object of `objects` whose side is a
  /// fault, with the related objects' values.
  func prefetch(_ index: Int, of objects: [ManagedObject]) throws {
    // Inherited relationships keep their index and field offset in subentities: one
    // description (and accessor) serves every object.
    guard let first = objects.first?.entity, index < first.relationships.count else { return }
    let relationship = first.relationships[index]
    let accessor = relationship.accessor
    let owners = objects.filter { object in
      object.lifecycle == .persisted && !object.isFault && object.objectKey?.isTemporary == false
        && accessor.isFault(object)
    }
    guard !owners.isEmpty else { return }
    guard let destination = model.entity(named: relationship.destinationEntityName) else { return }

    switch relationship.storage {
    case .foreignKey:
      // The keys are in the owners' rows: one query for the related rows not loaded yet.
      let keys = Set(owners.map { accessor.foreignKey(in: $0) }.filter { $0 != 0 })
      let missing = keys.filter { key in
        registered[ObjectKey(rootIndex: destination.rootIndex, isTemporary: false, value: key)].map(\.isFault) ?? true
      }
      if !missing.isEmpty {
        _ = try fetchObjects(
          ManagedObject.self, of: destination, clauses: " WHERE pk IN (\(try reader().dialect.jsonIntegerValues))",
          arguments: [.text(HistorySchema.jsonArray(missing.sorted()))])
      }
      for owner in owners {
        let key = accessor.foreignKey(in: owner)
        let target =
          key == 0 ? nil : registered[ObjectKey(rootIndex: destination.rootIndex, isTemporary: false, value: key)]
        accessor.fulfill(owner, with: target.map { [$0] } ?? [])
      }
      return
    case .inverseForeignKey(let column, let orderColumn):
      // The related rows hold the owners' keys: one query, sorted by that key, so each
      // owner's objects come as one run, which becomes its owner's value as soon as it ends,
      // while its objects are still in the processor's cache.
      guard Int(relationship.inverseIndex) < destination.relationships.count else { return }
      var runs = OwnerRuns(
        accessor: accessor, inverse: destination.relationships[Int(relationship.inverseIndex)].accessor,
        owners: owners)
      let order = orderColumn.map { "\"\($0)\", " } ?? ""
      try forEachFetchedObject(
        of: destination,
        clauses:
          " WHERE \"\(column)\" IN (\(try reader().dialect.jsonIntegerValues)) ORDER BY \"\(column)\", \(order)pk",
        arguments: [.text(HistorySchema.jsonArray(owners.compactMap { $0.objectKey?.value }))]
      ) { runs.add($0) }
      runs.finish()
    case .joinTable:
      // The links, then the related rows not loaded yet.
      let links = try store.relatedRows(
        of: relationship, owners: owners.compactMap { $0.objectKey?.value }, reader: reader())
      let missing = Set(links.map(\.key)).filter { key in
        registered[ObjectKey(rootIndex: destination.rootIndex, isTemporary: false, value: key)].map(\.isFault) ?? true
      }
      if !missing.isEmpty {
        _ = try fetchObjects(
          ManagedObject.self, of: destination, clauses: " WHERE pk IN (\(try reader().dialect.jsonIntegerValues))",
          arguments: [.text(HistorySchema.jsonArray(missing.sorted()))])
      }
      var byOwner: [Int64: [ManagedObject]] = [:]
      for link in links {
        let key = ObjectKey(rootIndex: link.entity.rootIndex, isTemporary: false, value: link.key)
        byOwner[link.owner, default: []].append(registered[key] ?? fault(for: key, entity: link.entity))
      }
      for owner in owners {
        accessor.fulfill(owner, with: owner.objectKey.flatMap { byOwner[$0.value] } ?? [])
      }
    }
  }
}

/// Files the related objects of a prefetch, which come sorted by owner, into their owners'
/// relationship: each owner's objects are one run, held unretained until it ends (the
/// identity map holds every one of them meanwhile).
private struct OwnerRuns {
  let accessor: any RelationshipAccessor
  /// The related objects' side of the relationship: where each names its owner.
  let inverse: any RelationshipAccessor
  /// The owners sorted by key: all faults at first, each loaded when its run ends. The runs
  /// come in key order, so a cursor finds each owner (a dictionary lookup per run missed the
  /// processor's cache every time).
  var owners: [(key: Int64, object: ManagedObject)]
  var cursor = 0
  var runOwner: Int64 = 0
  var run: [Unmanaged<ManagedObject>] = []

  init(accessor: any RelationshipAccessor, inverse: any RelationshipAccessor, owners: [ManagedObject]) {
    self.accessor = accessor
    self.inverse = inverse
    self.owners = owners.compactMap { owner in owner.objectKey.map { ($0.value, owner) } }
    self.owners.sort { $0.key < $1.key }
  }

  mutating func add(_ object: ManagedObject) {
    let owner =
      inverse.isFault(object)
      ? inverse.foreignKey(in: object) : (inverse.objects(in: object).first?.objectKey?.value ?? 0)
    if owner != runOwner {
      endRun()
      runOwner = owner
    }
    run.append(.passUnretained(object))
  }

  /// The owner with key `key`, if it is one of the owners.
  private mutating func owner(_ key: Int64) -> ManagedObject? {
    if cursor < owners.count, owners[cursor].key > key {
      // An owner read from memory (an object moved in this context) may come out of order:
      // then the cursor goes back to it by binary search.
      var low = 0
      var high = cursor
      while low < high {
        let middle = (low + high) / 2
        if owners[middle].key < key { low = middle + 1 } else { high = middle }
      }
      cursor = low
    }
    while cursor < owners.count, owners[cursor].key < key { cursor += 1 }
    return cursor < owners.count && owners[cursor].key == key ? owners[cursor].object : nil
  }

  private mutating func endRun() {
    guard !run.isEmpty else { return }
    if let owner = owner(runOwner) {
      if accessor.isFault(owner) {
        run.withUnsafeBufferPointer { accessor.fulfill(owner, withUnretained: $0) }
      } else {
        // A second run of one owner. The rows come sorted by their stored owner, so only an
        // owner read from memory could split a run; an object moved in memory loads its new
        // owner's side, which is then not prefetched, so no known case gets here. Kept so that
        // such a run would still be added, not lost.
        for object in run { accessor.insert(object.takeUnretainedValue(), at: nil, in: owner) }
      }
    }
    run.removeAll(keepingCapacity: true)
  }

  /// Ends the last run, and gives the owners with no related rows an empty value.
  mutating func finish() {
    endRun()
    for owner in owners where accessor.isFault(owner.object) { accessor.fulfill(owner.object, with: []) }
    owners.removeAll()
  }
}
