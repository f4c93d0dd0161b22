import Foundation

/// The rows a batch request works on.
enum RowSelection: Sendable {
  /// Every row of the entity (and its subentities, when included).
  case all
  /// The rows with these primary keys, among the entity's rows.
  case primaryKeys([Int64])
}

/// One row a batch request changed.
struct AffectedRow: Sendable {
  var entityName: String
  var primaryKey: Int64
}

extension PersistentStore {
  /// Sets attributes of the selected rows with one UPDATE statement, in the write path.
  /// Returns the rows changed.
  func batchUpdate(
    _ entity: EntityDescription, selection: RowSelection, includesSubentities: Bool,
    assignments: [(slot: Int32, value: PrimitiveValue)], info: TransactionInfo
  ) throws -> [AffectedRow] {
    try writer.write(info) { connection, history in
      let (whereClause, arguments) = self.whereClause(entity, selection, includesSubentities)
      let affected = try self.selectAffected(entity, whereClause: whereClause, arguments: arguments, connection)
      guard !affected.isEmpty, !assignments.isEmpty else { return affected }
      let sets = assignments.map { "\"\(entity.attributes[Int($0.slot)].columnName)\" = ?" }
      let statement = try connection.statement(
        "UPDATE \"\(entity.tableName)\" SET \((sets + ["_version = _version + 1"]).joined(separator: ", "))\(whereClause)"
      )
      defer { statement.reset() }
      for (index, assignment) in assignments.enumerated() { statement.bind(assignment.value, at: Int32(index + 1)) }
      for (index, argument) in arguments.enumerated() {
        statement.bind(argument, at: Int32(assignments.count + index + 1))
      }
      try statement.run()
      let names = assignments.map { entity.attributes[Int($0.slot)].name }
      for (entityName, keys) in self.groupByEntity(affected) {
        guard let concrete = self.model.entity(named: entityName) else { continue }
        try history.didUpdate(concrete, primaryKeys: keys, changedAttributes: names)
      }
      return affected
    }
  }

  /// Deletes the selected rows with one DELETE statement, in the write path, after recording
  /// their tombstones. Returns the rows deleted.
  func batchDelete(
    _ entity: EntityDescription, selection: RowSelection, includesSubentities: Bool, info: TransactionInfo
  ) throws -> [AffectedRow] {
    try writer.write(info) { connection, history in
      let (whereClause, arguments) = self.whereClause(entity, selection, includesSubentities)
      let affected = try self.selectAffected(entity, whereClause: whereClause, arguments: arguments, connection)
      guard !affected.isEmpty else { return affected }
      for (entityName, keys) in self.groupByEntity(affected) {
        guard let concrete = self.model.entity(named: entityName) else { continue }
        try history.willDelete(concrete, primaryKeys: keys)
      }
      let statement = try connection.statement("DELETE FROM \"\(entity.tableName)\"\(whereClause)")
      defer { statement.reset() }
      for (index, argument) in arguments.enumerated() { statement.bind(argument, at: Int32(index + 1)) }
      try statement.run()
      return affected
    }
  }

  // MARK: - Helpers

  private func whereClause(_ entity: EntityDescription, _ selection: RowSelection, _ includesSubentities: Bool)
    -> (String, [PrimitiveValue])
  {
    var conditions: [String] = []
    var arguments: [PrimitiveValue] = []
    let (restriction, entityArguments) = entityRestriction(for: entity, includesSubentities: includesSubentities)
    if !restriction.isEmpty {
      conditions.append(restriction)
      arguments += entityArguments
    }
    if case .primaryKeys(let keys) = selection {
      conditions.append("pk IN (SELECT value FROM json_each(?))")
      arguments.append(.text(HistorySchema.jsonArray(keys)))
    }
    return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), arguments)
  }

  private func selectAffected(
    _ entity: EntityDescription, whereClause: String, arguments: [PrimitiveValue], _ connection: SQLiteConnection
  ) throws -> [AffectedRow] {
    let statement = try connection.statement(
      "SELECT pk, _entity FROM \"\(entity.tableName)\"\(whereClause) ORDER BY pk")
    defer { statement.reset() }
    for (index, argument) in arguments.enumerated() { statement.bind(argument, at: Int32(index + 1)) }
    var rows: [AffectedRow] = []
    while try statement.step() {
      rows.append(AffectedRow(entityName: statement.string(1), primaryKey: statement.int64(0)))
    }
    return rows
  }

  private func groupByEntity(_ rows: [AffectedRow]) -> [(String, [Int64])] {
    var groups: [String: [Int64]] = [:]
    for row in rows { groups[row.entityName, default: []].append(row.primaryKey) }
    return groups.sorted { $0.key < $1.key }
  }
}
