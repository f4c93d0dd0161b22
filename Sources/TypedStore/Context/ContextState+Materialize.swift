// Materializing: the objects for the rows a fetch reads, found in or added to the identity
// map's table of the entity's root.
extension ContextState {
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
        if wakesFetchedObjects { existing.listMembership |= ManagedObject.awaitsAwakeFromFetch }  // loaded (again)
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
    object.listMembership = wakesFetchedObjects ? ManagedObject.awaitsAwakeFromFetch : 0
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
    let fetched = try withFetchTable(of: entity) { table in
      // The loop collects unretained references: every object it returns is held by `table`
      // until the result below holds it too. Appending to an `[Object]` in the loop looked
      // its generic metadata up on every row (as costly as the identity map); one conversion
      // at the end does not.
      let objects = try store.withRows(of: entity, clauses: clauses, arguments: arguments, connection: reader()) {
        rows in
        var objects: [Unmanaged<ManagedObject>] = []
        while try rows.next() {
          let object = try materialize(rows.row, requested: entity, reader: rowReader, table: &table)
          if Swift.type(of: object) == Object.self || object is Object {
            objects.append(.passUnretained(object))
          } else if object.listMembership & ManagedObject.awaitsAwakeFromFetch != 0 {
            awakening.append(object)  // not in the result: held here until its hook ran
          }
        }
        return objects
      }
      let result = [Object](unsafeUninitializedCapacity: objects.count) { buffer, initialized in
        for (index, object) in objects.enumerated() {
          buffer.initializeElement(at: index, to: unsafeDowncast(object.takeUnretainedValue(), to: Object.self))
        }
        initialized = objects.count
      }
      return (result, objects)
    }
    // Once the table is back in the identity map, the hook may read the context. The result
    // holds every one of these objects until the caller lets it go, so the unretained
    // references stay good whatever the hooks do (no retain and release per object: an
    // entity with no hook pays a test and an empty call per object).
    for object in fetched.1 {
      object._withUnsafeGuaranteedRef { object in
        if object.listMembership & ManagedObject.awaitsAwakeFromFetch != 0 { object.awakeFetched() }
      }
    }
    return fetched.0
  }

  /// Calls `visit` with the object for each row a SELECT over `entity`'s table returns, as
  /// soon as it is loaded: for a caller that files the objects somewhere (a prefetch builds
  /// relationship values) while each is still in the processor's cache, and without an
  /// array of them. Each object calls its `awakeFromFetch()` at its first use. `visit` must not touch the identity map; each object it gets is
  /// registered, and stays so at least until the next fetch.
  func forEachFetchedObject(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue],
    _ visit: (ManagedObject) throws -> Void
  ) throws {
    let rowReader = store.layout(of: entity).reader(for: entity)
    try withFetchTable(of: entity) { table in
      try store.withRows(of: entity, clauses: clauses, arguments: arguments, connection: reader()) { rows in
        while try rows.next() {
          let object = try materialize(rows.row, requested: entity, reader: rowReader, table: &table)
          // Awoken at its first use, as Core Data wakes prefetched objects: holding each in
          // a list until the fetch ends cost a prefetch 3 % more instructions.
          if object.listMembership & ManagedObject.awaitsAwakeFromFetch != 0 { object._needsAccessHook = true }
          try visit(object)
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
      awakeFetchedObjects()
    }
    _ = table.dropUnreferenced { $0.lifecycle == .persisted && !$0.hasChanges }
    return try body(&table)
  }

  /// Calls `awakeFromFetch()` on the objects the last fetch made or fulfilled that are not in
  /// its result (prefetched, or of another class), held by `awakening` meanwhile.
  func awakeFetchedObjects() {
    guard !awakening.isEmpty else { return }
    let objects = awakening
    awakening.removeAll()
    for object in objects where object.listMembership & ManagedObject.awaitsAwakeFromFetch != 0 {
      object.awakeFetched()
    }
  }

  func reportRefetchedObservations() {
    guard !refetchedObservations.isEmpty else { return }
    let reports = refetchedObservations
    refetchedObservations.removeAll()
    for (object, snapshot) in reports { object.reportObservedChanges(since: snapshot) }
  }
}
