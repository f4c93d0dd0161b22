import Foundation

// Uniqueness conflicts: the careful path a save takes when SQLite refused a row for a unique
// index. Like version conflicts (`PersistentStore+Conflicts.swift`), it runs under the write
// lock after the fast path was undone (`DatabaseConnection.undoWrites()`), so what it reads is
// what it writes over.
//
// Each insert and update is checked against every constraint of its entity: against the
// rows already stored, and against the other rows of the same save. With the `.error` policy
// every conflict is reported. With a by-property policy, an inserted object that matches a
// stored row is merged into that row (Core Data's constraint merging): the row survives,
// with the inserted object's values (`.objectTrump`, `.overwrite`) or its own (`.storeTrump`,
// `.rollback`), and every reference the save makes to the inserted object moves to the row.
// Conflicts between objects of the same save, and updates that collide, are errors under
// every policy.

/// A conflict found by the careful path, in the change set's terms; the context turns it
/// into a `UniquenessConflict` with object IDs.
struct UniquenessClash: Sendable {
  var entityIndex: Int32
  var constraint: [String]
  /// The clashing insert, by index in the change set, or the clashing update's row.
  var insertIndex: Int?
  var updatedKey: Int64?
  /// The stored row it matches, or the other insert of the same save.
  var storedKey: Int64?
  var otherInsertIndex: Int?
}

/// Thrown by `resolveUniqueness` for the `.error` policy or a conflict no policy merges.
struct UniquenessClashes: Error {
  var clashes: [UniquenessClash]
}

extension PersistentStore {
  /// The change set to write instead of `changes`: inserts merged into the stored rows they
  /// match, and the save's references to them moved to those rows.
  ///
  /// - Throws: `UniquenessClashes` with every conflict, unless each is an insert that the
  ///   policy merges.
  func resolveUniqueness(_ changes: RowWrites, connection: some DatabaseConnection) throws -> RowWrites {
    var clashes: [UniquenessClash] = []
    var resolved = changes
    let merges = changes.policy != .error
    let objectWins = changes.policy == .objectTrump || changes.policy == .overwrite
    var seen: [String: Int] = [:]  // entity root + constraint + values → insert index
    var movedKeys: [String: [Int64: Int64]] = [:]  // table → old key → stored row's key

    for (index, insert) in changes.inserts.enumerated() {
      let entity = model.entities[Int(insert.entityIndex)]
      for constraint in entity.uniqueness {
        let values = constraint.map { insert.values[Int($0)] }
        guard !values.contains(.null) else { continue }  // NULLs never conflict
        let names = constraint.map { entity.storedAttributes[Int($0)].name }
        let signature = "\(entity.tableName)|\(constraint)|\(values)"
        if let other = seen[signature] {
          clashes.append(
            UniquenessClash(
              entityIndex: insert.entityIndex, constraint: names, insertIndex: index, otherInsertIndex: other))
          continue
        }
        seen[signature] = index
        guard let stored = try storedRow(matching: values, constraint, of: entity, excluding: nil, connection) else {
          continue
        }
        guard merges, resolved.inserts[index].mergedInto == nil else {
          clashes.append(
            UniquenessClash(entityIndex: insert.entityIndex, constraint: names, insertIndex: index, storedKey: stored))
          continue
        }
        resolved.inserts[index].mergedInto = stored
        resolved.inserts[index].writesOver = objectWins
        if let key = insert.primaryKey { movedKeys[entity.tableName, default: [:]][key] = stored }
      }
    }
    for update in changes.updates where !update.slots.isEmpty {
      let entity = model.entities[Int(update.entityIndex)]
      for constraint in entity.uniqueness where constraint.contains(where: update.slots.contains) {
        let current = try currentValues(of: entity, primaryKey: update.primaryKey, connection)
        let values = constraint.map { slot in
          update.slots.firstIndex(of: slot).map { update.values[$0] } ?? current[Int(slot)]
        }
        guard !values.contains(.null),
          let stored = try storedRow(matching: values, constraint, of: entity, excluding: update.primaryKey, connection)
        else { continue }
        clashes.append(
          UniquenessClash(
            entityIndex: update.entityIndex, constraint: constraint.map { entity.storedAttributes[Int($0)].name },
            updatedKey: update.primaryKey, storedKey: stored))
      }
    }
    if !clashes.isEmpty { throw UniquenessClashes(clashes: clashes) }
    if !movedKeys.isEmpty { moveReferences(in: &resolved, movedKeys) }
    return resolved
  }

  /// The key of a stored row of `entity`'s table whose constraint columns hold `values`.
  private func storedRow(
    matching values: [PrimitiveValue], _ constraint: [Int32], of entity: EntityDescription, excluding key: Int64?,
    _ connection: some DatabaseConnection
  ) throws -> Int64? {
    let conditions = constraint.map { "\"\(entity.storedAttributes[Int($0)].columnName)\" = ?" }
    let statement = try connection.statement(
      "SELECT pk FROM \"\(entity.tableName)\" WHERE \(conditions.joined(separator: " AND "))"
        + (key == nil ? "" : " AND pk != ?") + " LIMIT 1")
    defer { statement.reset() }
    for (index, value) in values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
    if let key { try statement.bind(key, at: Int32(values.count + 1)) }
    return try statement.step() ? statement.int64(0) : nil
  }

  /// Every stored value of a row of `entity`, by slot.
  private func currentValues(of entity: EntityDescription, primaryKey: Int64, _ connection: some DatabaseConnection)
    throws
    -> [PrimitiveValue]
  {
    let columns = entity.storedAttributes.map { "\"\($0.columnName)\"" }
    let statement = try connection.statement(
      "SELECT \(columns.joined(separator: ", ")) FROM \"\(entity.tableName)\" WHERE pk = ?")
    defer { statement.reset() }
    try statement.bind(primaryKey, at: 1)
    guard try statement.step() else { return Array(repeating: .null, count: columns.count) }
    return try entity.storedAttributes.indices.map { try statement.value(Int32($0)) }
  }

  /// Points the change set's key columns and links at the stored rows that merged inserts
  /// became.
  private func moveReferences(in changes: inout RowWrites, _ moved: [String: [Int64: Int64]]) {
    func target(_ value: PrimitiveValue, slot: Int, of entity: EntityDescription) -> PrimitiveValue {
      guard case .integer(let key) = value, let name = entity.storedAttributes[slot].foreignKeyOf,
        let relationship = entity.relationship(named: name),
        let destination = model.entity(named: relationship.destinationEntityName),
        let stored = moved[destination.tableName]?[key]
      else { return value }
      return .integer(stored)
    }
    for index in changes.inserts.indices {
      let entity = model.entities[Int(changes.inserts[index].entityIndex)]
      guard entity.storedAttributes.count != entity.attributes.count else { continue }
      changes.inserts[index].values = changes.inserts[index].values.enumerated().map {
        target($1, slot: $0, of: entity)
      }
    }
    for index in changes.updates.indices {
      let entity = model.entities[Int(changes.updates[index].entityIndex)]
      let slots = changes.updates[index].slots
      changes.updates[index].values = changes.updates[index].values.enumerated().map {
        target($1, slot: Int(slots[$0]), of: entity)
      }
    }
    for index in changes.links.indices {
      let entity = model.entities[Int(changes.links[index].entityIndex)]
      let relationship = entity.relationships[Int(changes.links[index].relationshipIndex)]
      if let owner = moved[entity.tableName]?[changes.links[index].owner] { changes.links[index].owner = owner }
      if let destination = model.entity(named: relationship.destinationEntityName),
        let keys = moved[destination.tableName]
      {
        changes.links[index].targets = changes.links[index].targets.map { keys[$0] ?? $0 }
      }
    }
  }
}
