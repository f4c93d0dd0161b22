import Foundation

// Fetching: the request becomes one SELECT over the entity's table. When the context has
// unsaved inserts or deletes of the entity's hierarchy, order and range are applied in memory
// after merging them, so results always match what a save would make of the store.

/// A request resolved against the model: SQL clauses and the sort keys as attribute slots.
struct ResolvedFetch {
  let entity: EntityDescription
  let whereClause: String
  let arguments: [PrimitiveValue]
  let sortKeys: [SortKey]
  let orderBy: String
  /// The values `orderBy` binds, after `arguments`.
  let orderArguments: [PrimitiveValue]
  /// Whether a sort key has no SQL with Swift's order: the objects are then ordered in
  /// memory, with the descriptors themselves (`SQLSortOrder.inMemory`).
  let sortsInMemory: Bool
  /// The attributes the predicate reads (empty without one).
  let predicateSlots: Set<Int32>
  /// Whether `whereClause` only narrows the rows (`TranslatedPredicate.isExact`): the fetch
  /// then evaluates the predicate in Swift on each, and applies its order and range in memory.
  var checksInSwift = false

  /// Whether the rows are filtered or ordered in memory, after a SELECT of the candidates.
  var inMemory: Bool { sortsInMemory || checksInSwift }

  /// The values a statement of `whereClause` and `orderBy` binds, in order.
  var clauseArguments: [PrimitiveValue] { orderArguments.isEmpty ? arguments : arguments + orderArguments }
}

extension ContextState {
  func fetch<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> [Entity] {
    let resolved = try resolve(request)
    let prefetched = try prefetchedRelationships(request)
    let objects: [Entity]
    if resolved.inMemory || (request.includesPendingChanges && pendingChangesAffect(resolved)) {
      objects = try fetchMergingPending(request, resolved).compactMap { $0 as? Entity }
    } else if request.returnsObjectsAsFaults {
      // The keys alone; each object's row is read when it is first touched.
      let rows = try store.selectKeysAndEntities(
        of: resolved.entity, clauses: clauses(resolved, limit: request.fetchLimit, offset: request.fetchOffset),
        arguments: resolved.clauseArguments, connection: reader())
      objects = rows.compactMap { row in
        fault(for: ObjectKey(rootIndex: row.entity.rootIndex, isTemporary: false, value: row.key), entity: row.entity)
          as? Entity
      }
    } else {
      objects = try fetchObjects(
        Entity.self, of: resolved.entity,
        clauses: clauses(resolved, limit: request.fetchLimit, offset: request.fetchOffset),
        arguments: resolved.clauseArguments)
    }
    for index in prefetched { try prefetch(index, of: objects) }
    return objects
  }

  func count<Entity: ManagedObject>(for request: FetchRequest<Entity>) throws -> Int {
    let resolved = try resolve(request)
    if resolved.checksInSwift || (request.includesPendingChanges && pendingChangesAffect(resolved, orderMatters: false))
    {
      return try fetchObjectIDs(for: request).count
    }
    var total = try store.selectCount(
      of: resolved.entity, clauses: resolved.whereClause, arguments: resolved.arguments,
      connection: reader())
    total = max(0, total - request.fetchOffset)
    return request.fetchLimit > 0 ? min(total, request.fetchLimit) : total
  }

  func fetchObjectIDs<Entity: ManagedObject>(for request: FetchRequest<Entity>) throws -> [ManagedID<Entity>] {
    let resolved = try resolve(request)
    if resolved.inMemory || (request.includesPendingChanges && pendingChangesAffect(resolved)) {
      // The same answer as a fetch, whose objects (and the ones it made on the way) go again.
      return try withoutRegisteringObjects {
        try fetchMergingPending(request, resolved).compactMap { object in
          anyID(of: object).map { ManagedID<Entity>(unchecked: $0) }
        }
      }
    }
    let storeID = store.identifier
    let statementClauses = clauses(resolved, limit: request.fetchLimit, offset: request.fetchOffset)
    return try store.withRows(
      of: resolved.entity, clauses: statementClauses, arguments: resolved.clauseArguments, connection: reader()
    ) { rows in
      var ids: [ManagedID<Entity>] = []
      while try rows.next() {
        let row = rows.row
        ids.append(
          ManagedID(
            unchecked: AnyManagedID(
              storeIdentifier: storeID, entityName: row.entityName, key: .permanent(row.primaryKey))))
      }
      return ids
    }
  }

  /// What `FetchResultsCollection` needs: the rows' keys in order, and the unsaved objects
  /// (inserted ones) that take part, which it holds. Keys of held objects are `-1 - index`.
  func fetchKeys<Entity: ManagedObject>(for request: FetchRequest<Entity>) throws -> (keys: [Int64], held: [Entity]) {
    let resolved = try resolve(request)
    if resolved.inMemory || (request.includesPendingChanges && pendingChangesAffect(resolved)) {
      var held: [Entity] = []
      let keys = try fetchMergingPending(request, resolved).map { object -> Int64 in
        if let key = object.objectKey, !key.isTemporary { return key.value }
        held.append(unsafeDowncast(object, to: Entity.self))
        return -Int64(held.count)
      }
      return (keys, held)
    }
    let keys = try store.selectKeys(
      of: resolved.entity, clauses: clauses(resolved, limit: request.fetchLimit, offset: request.fetchOffset),
      arguments: resolved.clauseArguments, connection: reader())
    return (keys, [])
  }

  /// The objects of these keys of `Entity`'s table, in this order: loaded in one query; a row
  /// gone meanwhile gives a fault (which behaves as `shouldDeleteInaccessibleFaults` says).
  func objects<Entity: ManagedObject>(_ type: Entity.Type, keys: ArraySlice<Int64>) throws -> [Entity] {
    guard let entity = store.model.entity(for: Entity.self) else {
      throw FetchError.unknownEntity(String(describing: Entity.self))
    }
    let loaded = try fetchObjects(
      Entity.self, of: entity, clauses: " WHERE pk IN (\(try reader().dialect.jsonIntegerValues))",
      arguments: [.text(HistorySchema.jsonArray(Array(keys)))])
    var byKey: [Int64: Entity] = [:]
    byKey.reserveCapacity(loaded.count)
    for object in loaded { if let key = object.objectKey?.value { byKey[key] = object } }
    return keys.map { key in byKey[key] ?? fault(Entity.self, of: entity, primaryKey: key) }
  }

  /// The request's results as a collection that loads them a batch at a time.
  func fetch<Entity: ManagedObject>(_ request: FetchRequest<Entity>, batchSize: Int) throws
    -> FetchResultsCollection<Entity>
  {
    guard batchSize > 0 else { throw FetchError.invalidRange("batchSize must be at least 1") }
    let (keys, held) = try fetchKeys(for: request)
    return FetchResultsCollection(keys: keys, held: held, batchSize: batchSize, state: self)
  }

  // MARK: - Translation

  func resolve<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> ResolvedFetch {
    let model = store.model
    guard let entity = model.entity(for: Entity.self) else {
      throw FetchError.unknownEntity(String(describing: Entity.self))
    }
    guard request.fetchLimit >= 0, request.fetchOffset >= 0 else {
      throw FetchError.invalidRange("fetchLimit and fetchOffset must not be negative")
    }
    let sortKeys = try sortKeys(request.sortDescriptors)
    let sortsInMemory = sortKeys.contains { $0.order == .inMemory }
    // In memory, the keys are applied in Swift to rows in key order.
    let terms = sortsInMemory ? [] : try sortKeys.compactMap { try orderTerm($0, of: entity) }
    let order = terms.map(\.sql) + ["pk ASC"]
    var (restriction, arguments) = store.entityRestriction(
      for: entity, includesSubentities: request.includesSubentities)
    var predicateSlots: Set<Int32> = []
    var checksInSwift = false
    if let predicate = request.predicate {
      let translated = try PredicateTranslator<Entity>.translate(
        predicate, model: model, storeIdentifier: store.identifier, dialect: store.dialect)
      restriction = restriction.isEmpty ? translated.sql : "\(restriction) AND \(translated.sql)"
      arguments += translated.arguments
      predicateSlots = translated.slots
      checksInSwift = !translated.isExact
    }
    var resolved = ResolvedFetch(
      entity: entity, whereClause: restriction.isEmpty ? "" : " WHERE \(restriction)", arguments: arguments,
      sortKeys: sortKeys, orderBy: " ORDER BY " + order.joined(separator: ", "),
      orderArguments: terms.flatMap(\.arguments), sortsInMemory: sortsInMemory, predicateSlots: predicateSlots)
    resolved.checksInSwift = checksInSwift
    return resolved
  }

  func clauses(_ resolved: ResolvedFetch, limit: Int, offset: Int) -> String {
    var text = resolved.whereClause + resolved.orderBy
    if limit > 0 || offset > 0 {
      // Integers from the request, not user text: LIMIT -1 (SQLite) or ALL means no limit.
      let none = store.dialect == .sqlite ? "-1" : "ALL"
      text += " LIMIT \(limit > 0 ? String(limit) : none) OFFSET \(offset)"
    }
    return text
  }

  // MARK: - Pending changes

  /// Whether unsaved changes can make the store's answer to the request differ from what a
  /// save would make of it: inserts and deletes in the entity's hierarchy always can; an
  /// update only when it changed an attribute the request sorts by. Otherwise the request
  /// runs as SQL alone, with its limit (the registered objects, changed or not, are what
  /// the fetch returns for their rows anyway).
  private func pendingChangesAffect(_ resolved: ResolvedFetch, orderMatters: Bool = true) -> Bool {
    let root = resolved.entity.rootName
    func inHierarchy(_ object: ManagedObject) -> Bool { object.entity?.rootName == root }
    if inserted.contains(where: inHierarchy) || deleted.contains(where: inHierarchy) { return true }
    // An unsaved edit of an attribute the predicate reads can move an object in or out.
    var watched = resolved.predicateSlots
    if orderMatters {
      watched.formUnion(resolved.sortKeys.compactMap(\.ownSlot).map(Int32.init))
      // A key that reads a related object: an unsaved edit of a key on the way (which object
      // is related) or of the attribute read (a renamed folder) may move an object.
      let related = resolved.sortKeys.filter { $0.ownSlot == nil }.flatMap { slotsOnTheWay($0, from: resolved.entity) }
      if !related.isEmpty
        && updated.contains(where: { object in
          related.contains { $0.root == object.entity?.rootName && object.committedValues[$0.slot] != nil }
        })
      {
        return true
      }
    }
    guard !watched.isEmpty else { return false }
    return updated.contains { object in
      inHierarchy(object) && object.committedValues.keys.contains(where: watched.contains)
    }
  }

  /// The stored slots a sort key reads through its relationships, by root entity: each key
  /// column followed (in the row that holds it), then the attribute.
  private func slotsOnTheWay(_ key: SortKey, from entity: EntityDescription) -> [(root: String, slot: Int32)] {
    var slots: [(root: String, slot: Int32)] = []
    var current = entity
    for index in key.path.relationships {
      let relationship = current.relationships[index]
      guard let destination = model.entity(named: relationship.destinationEntityName) else { return slots }
      switch relationship.storage {
      case .foreignKey:
        if let slot = relationship.foreignKeySlot { slots.append((current.rootName, slot)) }
      case .inverseForeignKey:
        if Int(relationship.inverseIndex) < destination.relationships.count,
          let slot = destination.relationships[Int(relationship.inverseIndex)].foreignKeySlot
        {
          slots.append((destination.rootName, slot))
        }
      case .joinTable:
        break
      }
      current = destination
    }
    slots.append((current.rootName, Int32(key.path.slot)))
    return slots
  }

  private func fetchMergingPending<Entity: ManagedObject>(
    _ request: FetchRequest<Entity>, _ resolved: ResolvedFetch
  ) throws -> [ManagedObject] {
    if resolved.checksInSwift && !request.includesPendingChanges && hasChanges {
      return try fetchBySavedValues(request)
    }
    let allowed = Set(request.includesSubentities ? resolved.entity.selfAndDescendantNames : [resolved.entity.name])
    var objects = try fetchObjects(
      ManagedObject.self, of: resolved.entity, clauses: resolved.whereClause + resolved.orderBy,
      arguments: resolved.clauseArguments
    ).filter { !request.includesPendingChanges || !$0.isDeleted }
    if resolved.checksInSwift, let predicate = request.predicate {
      // The SQL only narrowed the rows: Swift's evaluation decides (the edited objects below
      // are asked again anyway).
      objects = try objects.filter { object in try (object as? Entity).map { try predicate.evaluate($0) } ?? false }
    }
    var candidates = request.includesPendingChanges ? inserted.filter { allowed.contains($0.entity?.name ?? "") } : []
    if let predicate = request.predicate, request.includesPendingChanges {
      // The store answered for the saved values; objects whose unsaved edits touch what the
      // predicate reads are asked again, in Swift, with their values now.
      let edited = updated.filter { object in
        !object.isDeleted && allowed.contains(object.entity?.name ?? "")
          && object.committedValues.keys.contains(where: resolved.predicateSlots.contains)
      }
      let editedIDs = Set(edited.map(ObjectIdentifier.init))
      objects.removeAll { editedIDs.contains(ObjectIdentifier($0)) }
      candidates += edited
      candidates = try candidates.filter { object in
        guard let typed = object as? Entity else { return false }
        return try predicate.evaluate(typed)
      }
    }
    objects += candidates
    if resolved.sortKeys.isEmpty && request.predicate != nil {
      // Primary key order, as the SQL gives it; inserted objects (no key yet) last.
      func rank(_ object: ManagedObject) -> (Int, Int64) {
        guard let key = object.objectKey, !key.isTemporary else { return (1, object.objectKey?.value ?? 0) }
        return (0, key.value)
      }
      objects = objects.enumerated().sorted { left, right in
        let (a, b) = (rank(left.element), rank(right.element))
        return a != b ? a < b : left.offset < right.offset
      }.map(\.element)
    } else if !resolved.sortKeys.isEmpty {
      // Swift's order, from the descriptors themselves; ties by primary key, as the store
      // orders them, inserted objects after saved ones.
      func tieKey(_ index: Int) -> (Int, Int64) {
        guard let key = objects[index].objectKey, !key.isTemporary else { return (1, Int64(index)) }
        return (0, key.value)
      }
      let order = objects.indices.sorted { left, right in
        for sort in resolved.sortKeys {
          let comparison = sort.compare(objects[left], objects[right])
          if comparison != .orderedSame { return comparison == .orderedAscending }
        }
        return tieKey(left) < tieKey(right)
      }
      objects = order.map { objects[$0] }
    }
    let start = min(request.fetchOffset, objects.count)
    let end = request.fetchLimit > 0 ? min(objects.count, start + request.fetchLimit) : objects.count
    return Array(objects[start..<end])
  }
}

extension ContextState {
  /// A request that ignores unsaved changes, whose predicate Swift checks (another engine's SQL
  /// only narrowed the rows), in a context with unsaved changes: the predicate must see the
  /// saved values, which this context's edited objects no longer hold. A context of its own,
  /// with no changes, answers; this one returns its own objects for the rows, in that order.
  fileprivate func fetchBySavedValues<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws
    -> [ManagedObject]
  {
    let scratch = ContextState(store: store, name: nil)
    let keys = try scratch.fetch(request).compactMap { $0.objectKey?.value }
    return try objects(Entity.self, keys: keys[...])
  }
}

/// Orders two values as `COLLATE SWIFT` does: text as Swift's `String` `<` and `==`, other
/// values as `compareSQLite`.
func compareSwift(_ left: PrimitiveValue, _ right: PrimitiveValue) -> Int {
  guard case .text(let a) = left, case .text(let b) = right else { return compareSQLite(left, right) }
  return a == b ? 0 : (a < b ? -1 : 1)
}

/// Orders two values as SQLite's ORDER BY does: NULL, then numbers, then text (by UTF-8
/// bytes), then blobs (by bytes).
func compareSQLite(_ left: PrimitiveValue, _ right: PrimitiveValue) -> Int {
  func rank(_ value: PrimitiveValue) -> Int {
    switch value {
    case .null: 0
    case .integer, .real: 1
    case .text: 2
    case .blob: 3
    }
  }
  func number(_ value: PrimitiveValue) -> Double {
    switch value {
    case .integer(let int): Double(int)
    case .real(let real): real
    default: 0
    }
  }
  func bytes<C: Collection<UInt8>>(_ a: C, _ b: C) -> Int {
    for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
  }
  let (l, r) = (rank(left), rank(right))
  if l != r { return l < r ? -1 : 1 }
  switch (left, right) {
  case (.integer(let a), .integer(let b)): return a == b ? 0 : (a < b ? -1 : 1)
  case (.text(let a), .text(let b)): return bytes(Array(a.utf8), Array(b.utf8))
  case (.blob(let a), .blob(let b)): return bytes(a, b)
  case (.null, .null): return 0
  default:
    let (a, b) = (number(left), number(right))
    return a == b ? 0 : (a < b ? -1 : 1)
  }
}
