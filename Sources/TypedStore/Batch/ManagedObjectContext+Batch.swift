import Foundation

// Batch requests run in the store's one write path like a save, as one transaction with its
// history, without touching the context's registered objects.
extension ManagedObjectContext {
  /// Inserts the request's rows in one transaction.
  ///
  /// - Throws: `BatchError` before anything is written for a request that cannot run, or the
  ///   store's error (nothing written).
  public func execute<Entity: ManagedObject>(_ request: BatchInsertRequest<Entity>) throws -> BatchResult<Entity> {
    let entity = try batchEntity(Entity.self)
    guard request.count >= 0 else { throw BatchError.invalidCount(request.count) }
    var changes = ChangeSet()
    changes.inserts.reserveCapacity(request.count)
    for index in 0..<request.count {
      let draft = Entity()
      request.fill(index, draft)
      let values = try entity.accessors.map { try $0.encode(draft) }
      changes.inserts.append(ChangeSet.Insert(entityIndex: entity.index, primaryKey: nil, values: values))
    }
    let applied = try persistentStore.commit(changes, info: batchInfo(request.author))
    return BatchResult(
      count: applied.insertedKeys.count,
      objectIDs: request.returnsObjectIDs
        ? applied.insertedKeys.map { typedID(entityName: entity.name, primaryKey: $0) } : nil)
  }

  /// Sets the request's attributes on its rows with one UPDATE statement.
  public func execute<Entity: ManagedObject>(_ request: BatchUpdateRequest<Entity>) throws -> BatchResult<Entity> {
    let entity = try batchEntity(Entity.self)
    let draft = Entity()
    var assignments: [(slot: Int32, value: PrimitiveValue)] = []
    for assignment in request.propertiesToUpdate {
      guard let slots = persistentStore.model.attributeSlots(for: assignment.keyPath), slots.count == 1,
        let slot = slots.first
      else {
        throw BatchError.unsupportedKeyPath(String(describing: assignment.keyPath))
      }
      assignment.apply(draft)
      assignments.append((slot, try entity.accessors[Int(slot)].encode(draft)))
    }
    let rows = try persistentStore.batchUpdate(
      entity, selection: request.selection, includesSubentities: request.includesSubentities,
      assignments: assignments, info: batchInfo(request.author))
    return result(rows, returnsObjectIDs: request.returnsObjectIDs)
  }

  /// Deletes the request's rows with one DELETE statement.
  public func execute<Entity: ManagedObject>(_ request: BatchDeleteRequest<Entity>) throws -> BatchResult<Entity> {
    let entity = try batchEntity(Entity.self)
    let rows = try persistentStore.batchDelete(
      entity, selection: request.selection, includesSubentities: request.includesSubentities,
      info: batchInfo(request.author))
    return result(rows, returnsObjectIDs: request.returnsObjectIDs)
  }

  // MARK: - Helpers

  private func batchEntity<Entity: ManagedObject>(_ type: Entity.Type) throws -> EntityDescription {
    guard let entity = persistentStore.model.entity(for: type) else {
      throw BatchError.unknownEntity(String(describing: type))
    }
    return entity
  }

  private func batchInfo(_ author: String?) -> TransactionInfo {
    TransactionInfo(author: author ?? transactionAuthor, contextName: name, origin: ObjectIdentifier(state))
  }

  private func typedID<Entity: ManagedObject>(entityName: String, primaryKey: Int64) -> ManagedID<Entity> {
    ManagedID(
      unchecked: AnyManagedID(
        storeIdentifier: persistentStore.identifier, entityName: entityName, key: .permanent(primaryKey)))
  }

  private func result<Entity: ManagedObject>(_ rows: AffectedRows, returnsObjectIDs: Bool) -> BatchResult<Entity> {
    guard returnsObjectIDs else { return BatchResult(count: rows.count, objectIDs: nil) }
    let ids: [ManagedID<Entity>] = rows.groups.flatMap { group in
      group.primaryKeys.map { typedID(entityName: group.entityName, primaryKey: $0) }
    }
    return BatchResult(count: ids.count, objectIDs: ids.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) })
  }
}
