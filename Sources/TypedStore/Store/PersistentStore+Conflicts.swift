import Foundation

/// Thrown inside the write transaction when an update or delete found its row at another
/// version than the object read: the fast path gives way to `resolveConflicts`.
struct VersionMismatch: Error {}

// Resolving conflicts: the careful path of a save, taken only when the fast path met a row
// another writer changed. It runs under the write lock, in the transaction begun again after
// the fast path was undone (`DatabaseConnection.undoWrites()`), so what it reads is what it
// writes over. See `MergePolicy` for the table of outcomes.
extension PersistentStore {
  /// The change set to write instead of `changes`, and what each conflicting object must do
  /// after the commit.
  ///
  /// - Throws: `StoreError.mergeConflict` with every conflict, for the `.error` policy.
  func resolveConflicts(_ changes: RowWrites, connection: some DatabaseConnection) throws -> (
    RowWrites, [ResolvedRow: Resolution]
  ) {
    var resolution = ConflictResolution(changes)
    for update in changes.updates {
      try resolve(update, policy: changes.policy, into: &resolution, connection: connection)
    }
    for delete in changes.deletes {
      try resolve(delete, policy: changes.policy, into: &resolution, connection: connection)
    }
    if !resolution.conflicts.isEmpty { throw StoreError.mergeConflict(resolution.conflicts) }
    return (resolution.resolved, resolution.outcomes)
  }

  /// What `resolveConflicts` builds: the change set to write, the outcome of each
  /// conflicting object, and the conflicts the `.error` policy reports.
  private struct ConflictResolution {
    var resolved: RowWrites
    var outcomes: [ResolvedRow: Resolution] = [:]
    var conflicts: [MergeConflict] = []

    init(_ changes: RowWrites) {
      resolved = changes
      resolved.updates = []
      resolved.deletes = []
    }
  }

  /// Resolves one update against its row as it is now.
  private func resolve(
    _ update: RowWrites.Update, policy: MergePolicy, into resolution: inout ConflictResolution,
    connection: some DatabaseConnection
  ) throws {
    guard !update.slots.isEmpty else {  // relationships only: no row written, no version checked
      resolution.resolved.updates.append(update)
      return
    }
    let entity = model.entities[Int(update.entityIndex)]
    let row = ResolvedRow(entityIndex: update.entityIndex, primaryKey: update.primaryKey)
    guard let current = try currentRow(of: entity, primaryKey: update.primaryKey, connection: connection) else {
      try resolveDeletedElsewhere(update, entity: entity, policy: policy, into: &resolution)
      return
    }
    guard current.version != update.version else {
      resolution.resolved.updates.append(update)
      return
    }
    var written = update
    written.version = current.version
    switch policy {
    case .error:
      resolution.conflicts.append(
        MergeConflict(
          objectID: id(entity, update.primaryKey), kind: .updatedElsewhere,
          storeValues: named(current.values, of: entity)))
      return
    case .storeTrump:
      // Only the attributes the other writer left as the object read them.
      let kept = update.slots.indices.filter { current.values[Int(update.slots[$0])] == update.originalValues[$0] }
      written.slots = kept.map { update.slots[$0] }
      written.values = kept.map { update.values[$0] }
    case .objectTrump:
      break
    case .overwrite:
      guard let values = update.allValues else { throw VersionMismatch() }
      written.slots = entity.storedAttributes.indices.map(Int32.init)
      written.values = values
    case .rollback:
      written.slots = []
    }
    if !written.slots.isEmpty { resolution.resolved.updates.append(written) }
    resolution.outcomes[row] = .reload
  }

  /// Resolves an update of a row another writer deleted.
  private func resolveDeletedElsewhere(
    _ update: RowWrites.Update, entity: EntityDescription, policy: MergePolicy,
    into resolution: inout ConflictResolution
  ) throws {
    let row = ResolvedRow(entityIndex: update.entityIndex, primaryKey: update.primaryKey)
    switch policy {
    case .error:
      resolution.conflicts.append(
        MergeConflict(objectID: id(entity, update.primaryKey), kind: .deletedElsewhere, storeValues: nil))
    case .storeTrump, .rollback:
      resolution.outcomes[row] = .deleted
    case .objectTrump, .overwrite:
      guard let values = update.allValues else { throw VersionMismatch() }
      resolution.resolved.inserts.append(
        RowWrites.Insert(entityIndex: update.entityIndex, primaryKey: update.primaryKey, values: values))
      resolution.outcomes[row] = .reload
    }
  }

  /// Resolves one delete against its row as it is now.
  private func resolve(
    _ delete: RowWrites.Delete, policy: MergePolicy, into resolution: inout ConflictResolution,
    connection: some DatabaseConnection
  ) throws {
    let entity = model.entities[Int(delete.entityIndex)]
    let row = ResolvedRow(entityIndex: delete.entityIndex, primaryKey: delete.primaryKey)
    guard let current = try currentRow(of: entity, primaryKey: delete.primaryKey, connection: connection) else {
      resolution.outcomes[row] = .deleted  // deleted by another writer too: as asked, not a conflict
      return
    }
    guard current.version != delete.version else {
      resolution.resolved.deletes.append(delete)
      return
    }
    switch policy {
    case .error:
      resolution.conflicts.append(
        MergeConflict(
          objectID: id(entity, delete.primaryKey), kind: .deletedHereUpdatedElsewhere,
          storeValues: named(current.values, of: entity)))
    case .storeTrump, .rollback:
      resolution.outcomes[row] = .kept
    case .objectTrump, .overwrite:
      var forced = delete
      forced.version = current.version
      resolution.resolved.deletes.append(forced)
    }
  }

  /// The row's version and attribute values (by attribute index), or nil when there is no
  /// such row of `entity`.
  private func currentRow(of entity: EntityDescription, primaryKey: Int64, connection: some DatabaseConnection) throws
    -> (version: Int64, values: [PrimitiveValue])?
  {
    let columns = ["_version"] + entity.storedAttributes.map { "\"\($0.columnName)\"" }
    let statement = try connection.statement(
      "SELECT \(columns.joined(separator: ", ")) FROM \"\(entity.tableName)\" WHERE pk = ?")
    defer { statement.reset() }
    try statement.bind(primaryKey, at: 1)
    guard try statement.step() else { return nil }
    let values = try entity.storedAttributes.indices.map { try statement.value(Int32($0 + 1)) }
    return (statement.int64(0), values)
  }

  private func named(_ values: [PrimitiveValue], of entity: EntityDescription) -> [String: PrimitiveValue] {
    Dictionary(uniqueKeysWithValues: zip(entity.storedAttributes.map(\.name), values))
  }

  private func id(_ entity: EntityDescription, _ primaryKey: Int64) -> AnyManagedID {
    AnyManagedID(storeIdentifier: identifier, entityName: entity.name, key: .permanent(primaryKey))
  }
}
