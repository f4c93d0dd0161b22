import Foundation

// Batch requests run in the store's one write path like a save, as one transaction with its
// history, without touching the context's registered objects.
extension ContextState {
  func execute<Entity: ManagedObject>(_ request: BatchInsertRequest<Entity>) throws -> BatchResult<Entity> {
    let entity = try batchEntity(Entity.self)
    guard request.count >= 0 else { throw BatchError.invalidCount(request.count) }
    var changes = RowWrites()
    changes.inserts.reserveCapacity(request.count)
    for index in 0..<request.count {
      let draft = Entity()
      request.fill(index, draft)
      let values = try entity.accessors.map { try $0.storedValue(of: draft) }
      changes.inserts.append(RowWrites.Insert(entityIndex: entity.index, primaryKey: nil, values: values))
    }
    let applied: AppliedChanges
    do {
      applied = try store.commit(changes, info: batchInfo(request.author), in: migrationTransaction)
    } catch let clashes as UniquenessClashes {
      // Batch requests have no objects to name or merge: SQLite's refusal, as it words it.
      let constraint = clashes.clashes.first?.constraint ?? []
      throw StoreError.uniqueConstraintViolation(
        entity: entity.name,
        message: "UNIQUE constraint failed: " + constraint.map { "\(entity.name).\($0)" }.joined(separator: ", "))
    }
    return BatchResult(
      count: applied.insertedKeys.count,
      objectIDs: request.returnsObjectIDs
        ? applied.insertedKeys.map { typedID(entityName: entity.name, primaryKey: $0) } : nil)
  }

  func execute<Entity: ManagedObject>(_ request: BatchUpdateRequest<Entity>) throws -> BatchResult<Entity> {
    let entity = try batchEntity(Entity.self)
    let draft = Entity()
    var assignments: [(slot: Int32, value: PrimitiveValue)] = []
    for assignment in request.propertiesToUpdate {
      guard let slot = store.model.attributeSlot(for: assignment.keyPath) else {
        throw BatchError.unsupportedKeyPath(store.model.describe(assignment.keyPath, on: entity))
      }
      assignment.apply(draft)
      assignments.append((slot, try entity.accessors[Int(slot)].storedValue(of: draft)))
    }
    let rows = try store.batchUpdate(
      entity, selection: try selection(request.objectIDs, of: entity, includesSubentities: request.includesSubentities),
      filter: try filter(request.predicate, includesSubentities: request.includesSubentities),
      includesSubentities: request.includesSubentities, assignments: assignments, info: batchInfo(request.author),
      in: migrationTransaction)
    return result(rows, returnsObjectIDs: request.returnsObjectIDs)
  }

  func execute<Entity: ManagedObject>(_ request: BatchDeleteRequest<Entity>) throws -> BatchResult<Entity> {
    let entity = try batchEntity(Entity.self)
    let rows = try store.batchDelete(
      entity, selection: try selection(request.objectIDs, of: entity, includesSubentities: request.includesSubentities),
      filter: try filter(request.predicate, includesSubentities: request.includesSubentities),
      includesSubentities: request.includesSubentities, info: batchInfo(request.author), in: migrationTransaction)
    return result(rows, returnsObjectIDs: request.returnsObjectIDs)
  }

  // MARK: - Helpers

  /// The rows a request's IDs name, checked against this context's store before the write
  /// transaction: an ID of another store, a temporary ID (this context's too: an unsaved
  /// object has no row) or an ID of an entity the request does not reach throws, so a request
  /// is never narrowed to the IDs that happen to fit. The store checks in the transaction
  /// that each row exists and is of its ID's entity.
  private func selection(
    _ ids: [AnyManagedID]?, of entity: EntityDescription, includesSubentities: Bool
  ) throws(ManagedIDError) -> RowSelection {
    guard let ids else { return .all }
    var rows: [NamedRow] = []
    rows.reserveCapacity(ids.count)
    for id in ids {
      guard id.storeIdentifier == store.identifier else {
        throw .foreignStore(id: id.description, expected: store.identifier)
      }
      guard let primaryKey = id.primaryKey else { throw .temporaryID(id.description) }
      guard let named = model.entity(named: id.entityName),
        includesSubentities ? model.isEntity(named.name, kindOf: entity.name) : named === entity
      else {
        throw .entityMismatch(id: id.description, expected: entity.name, found: id.entityName)
      }
      rows.append(NamedRow(primaryKey: primaryKey, entity: named))
    }
    return .rows(rows)
  }

  /// The predicate as SQL, translated before anything is written. When the SQL only narrows
  /// the rows (`TranslatedPredicate.isExact`: strings, decimals or floating point arithmetic
  /// on PostgreSQL), the filter also picks the rows Swift's evaluation selects, read in the
  /// write transaction by a context of its own on the transaction's connection: the rows the
  /// request changes are the ones Swift picks at that moment, as a fetch there would. That
  /// context's objects do not call `awakeFromFetch()`: no application code runs under the
  /// store's write lock.
  private func filter<Entity: ManagedObject>(_ predicate: Predicate<Entity>?, includesSubentities: Bool) throws
    -> RowFilter?
  {
    guard let predicate else { return nil }
    let translated = try PredicateTranslator<Entity>.translate(
      predicate, model: store.model, storeIdentifier: store.identifier, dialect: store.dialect)
    var filter = RowFilter(sql: translated.sql, arguments: translated.arguments)
    if !translated.isExact {
      let store = store
      filter.swiftSelection = { connection in
        var request = FetchRequest<Entity>(predicate: predicate)
        request.includesSubentities = includesSubentities
        let scratch = ContextState(
          store: store, name: "batch", migrationTransaction: connection, wakesFetchedObjects: false)
        return try scratch.fetchObjectIDs(for: request).compactMap(\.primaryKey)
      }
    }
    return filter
  }

  private func batchEntity<Entity: ManagedObject>(_ type: Entity.Type) throws -> EntityDescription {
    guard let entity = store.model.entity(for: type) else {
      throw BatchError.unknownEntity(String(describing: type))
    }
    return entity
  }

  private func batchInfo(_ author: String?) -> TransactionInfo {
    TransactionInfo(author: author ?? transactionAuthor, contextName: name, origin: ObjectIdentifier(self))
  }

  private func typedID<Entity: ManagedObject>(entityName: String, primaryKey: Int64) -> ManagedID<Entity> {
    ManagedID(
      unchecked: AnyManagedID(
        storeIdentifier: store.identifier, entityName: entityName, key: .permanent(primaryKey)))
  }

  private func result<Entity: ManagedObject>(_ rows: AffectedRows, returnsObjectIDs: Bool) -> BatchResult<Entity> {
    guard returnsObjectIDs else { return BatchResult(count: rows.count, objectIDs: nil) }
    let ids: [ManagedID<Entity>] = rows.groups.flatMap { group in
      group.primaryKeys.map { typedID(entityName: group.entityName, primaryKey: $0) }
    }
    return BatchResult(count: ids.count, objectIDs: ids.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) })
  }
}
