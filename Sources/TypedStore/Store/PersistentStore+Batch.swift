import Foundation

/// The rows a batch request works on.
package enum RowSelection: Sendable {
  /// Every row of the entity (and its subentities, when included).
  case all
  /// The rows these IDs name: each must exist and be of its ID's entity, or the request
  /// throws before writing anything.
  case rows([NamedRow])
}

/// A row an ID names: its primary key and the concrete entity the ID says it is.
package struct NamedRow: Sendable {
  var primaryKey: Int64
  var entity: EntityDescription
}

/// A condition on a batch request's rows: a translated predicate's SQL (over the table's own
/// columns) and its bound values; when that SQL only narrows the rows, the keys of the rows
/// Swift's evaluation selects, read on the write transaction's connection.
package struct RowFilter: Sendable {
  var sql: String
  var arguments: [PrimitiveValue]
  var swiftSelection: (@Sendable (any DatabaseConnection) throws -> [Int64])? = nil

  /// The filter in SQL alone, inside the write transaction on `connection`: the keys Swift
  /// selects there, when it must, become a condition on the rows.
  func exact(on connection: some DatabaseConnection) throws -> RowFilter {
    guard let swiftSelection else { return self }
    let keys = try swiftSelection(connection)
    return RowFilter(
      sql: "(\(sql)) AND pk IN (\(connection.dialect.jsonIntegerValues))",
      arguments: arguments + [.text(HistorySchema.jsonArray(keys))])
  }
}

/// The rows a batch request changed, by entity.
package struct AffectedRows: Sendable {
  package var groups: [(entityName: String, primaryKeys: [Int64])] = []

  var count: Int { groups.reduce(0) { $0 + $1.primaryKeys.count } }
}

// Batch requests: one statement for the rows, one for their history, with the same WHERE
// clause; the affected keys are read once, for the result and the change notification.
extension PersistentStore {
  /// Sets attributes of the selected rows with one UPDATE statement, in the write path.
  func batchUpdate(
    _ entity: EntityDescription, selection: RowSelection, filter: RowFilter? = nil, includesSubentities: Bool,
    assignments: [(slot: Int32, value: PrimitiveValue)], info: TransactionInfo,
    in transaction: (any DatabaseConnection)? = nil
  ) throws -> AffectedRows {
    try checkStorable(assignments.map(\.value), entityIndex: entity.index, slots: assignments.map(\.slot))
    let work = BatchWork(
      store: self, entity: entity, selection: selection, filter: filter, includesSubentities: includesSubentities,
      assignments: assignments)
    return try perform(work, info: info, in: transaction)
  }

  /// `batchUpdate`'s work inside a write transaction the caller holds, on either engine.
  package func batchUpdate<C: DatabaseConnection>(
    _ entity: EntityDescription, selection: RowSelection, filter: RowFilter? = nil, includesSubentities: Bool,
    assignments: [(slot: Int32, value: PrimitiveValue)], connection: C, history: HistoryRecorder<C>
  ) throws -> AffectedRows {
    try checkNamedRows(selection, of: entity, connection)
    let filter = try filter?.exact(on: connection)
    let rows = historyRows(entity, selection, filter, includesSubentities, dialect: connection.dialect)
    let affected = try selectAffected(entity, rows, includesSubentities: includesSubentities, connection)
    guard !affected.isEmpty, !assignments.isEmpty else { return AffectedRows() }
    try history.willUpdate(
      changedAttributes: assignments.map { entity.storedAttributes[Int($0.slot)].name }, groups: affected)
    let sets = assignments.map { "\"\(entity.storedAttributes[Int($0.slot)].columnName)\" = ?" }
    let statement = try connection.statement(
      "UPDATE \"\(entity.tableName)\" SET "
        + "\((sets + ["_version = _version + 1"]).joined(separator: ", "))\(rows.whereClause)"
    )
    defer { statement.reset() }
    for (index, assignment) in assignments.enumerated() { try statement.bind(assignment.value, at: Int32(index + 1)) }
    for (index, argument) in rows.arguments.enumerated() {
      try statement.bind(argument, at: Int32(assignments.count + index + 1))
    }
    try statement.run()
    return AffectedRows(groups: affected.map { ($0.entity.name, $0.primaryKeys) })
  }

  /// Deletes the selected rows with one DELETE statement, in the write path, after recording
  /// their tombstones.
  func batchDelete(
    _ entity: EntityDescription, selection: RowSelection, filter: RowFilter? = nil, includesSubentities: Bool,
    info: TransactionInfo, in transaction: (any DatabaseConnection)? = nil
  ) throws -> AffectedRows {
    let work = BatchWork(
      store: self, entity: entity, selection: selection, filter: filter, includesSubentities: includesSubentities,
      assignments: nil)
    return try perform(work, info: info, in: transaction)
  }

  /// `batchDelete`'s work inside a write transaction the caller holds, on either engine.
  package func batchDelete<C: DatabaseConnection>(
    _ entity: EntityDescription, selection: RowSelection, filter: RowFilter? = nil, includesSubentities: Bool,
    connection: C, history: HistoryRecorder<C>
  ) throws -> AffectedRows {
    try checkNamedRows(selection, of: entity, connection)
    let filter = try filter?.exact(on: connection)
    let rows = historyRows(entity, selection, filter, includesSubentities, dialect: connection.dialect)
    let affected = try selectAffected(entity, rows, includesSubentities: includesSubentities, connection)
    guard !affected.isEmpty else { return AffectedRows() }
    try willDelete(rows, groups: affected, connection: connection, history: history)
    let statement = try connection.statement("DELETE FROM \"\(entity.tableName)\"\(rows.whereClause)")
    defer { statement.reset() }
    for (index, argument) in rows.arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    try statement.run()
    // The same delete rules as a save's, set-based, in the same transaction.
    if model.hasRelationships {
      _ = try propagateDeletes(affected, connection: connection, history: history)
    }
    return AffectedRows(groups: affected.map { ($0.entity.name, $0.primaryKeys) })
  }

  // MARK: - Helpers

  /// Throws unless every row the IDs name exists and is of the entity its ID says: read in
  /// the write transaction, before anything is written, so that no row another writer
  /// deleted (or an ID whose URI names its row under another entity) is skipped silently.
  ///
  /// - Throws: `ManagedIDError.noSuchRow` or `.entityMismatch`, for the first such ID.
  private func checkNamedRows(
    _ selection: RowSelection, of entity: EntityDescription, _ connection: some DatabaseConnection
  ) throws {
    guard case .rows(let rows) = selection, !rows.isEmpty else { return }
    let statement = try connection.statement(
      "SELECT pk, _entity FROM \"\(entity.tableName)\" WHERE pk IN (\(connection.dialect.jsonIntegerValues))")
    defer { statement.reset() }
    try statement.bind(.text(HistorySchema.jsonArray(rows.map(\.primaryKey))), at: 1)
    var codes: [Int64: Int64] = [:]
    codes.reserveCapacity(rows.count)
    while try statement.step() { codes[statement.int64(0)] = statement.int64(1) }
    for row in rows {
      let code = codes[row.primaryKey]
      guard code != row.entity.code else { continue }
      let id = AnyManagedID(storeIdentifier: identifier, entityName: row.entity.name, key: .permanent(row.primaryKey))
      guard let code else { throw ManagedIDError.noSuchRow(id.description) }
      throw ManagedIDError.entityMismatch(
        id: id.description, expected: row.entity.name, found: layout(of: entity).entity(code: code)?.name ?? "?")
    }
  }

  private func historyRows(
    _ entity: EntityDescription, _ selection: RowSelection, _ filter: RowFilter?, _ includesSubentities: Bool,
    dialect: SQLDialect
  ) -> HistoryRows {
    var conditions: [String] = []
    var arguments: [PrimitiveValue] = []
    let (restriction, entityArguments) = entityRestriction(for: entity, includesSubentities: includesSubentities)
    if !restriction.isEmpty {
      conditions.append(restriction)
      arguments += entityArguments
    }
    if case .rows(let rows) = selection {
      conditions.append("pk IN (\(dialect.jsonIntegerValues))")
      arguments.append(.text(HistorySchema.jsonArray(rows.map(\.primaryKey))))
    }
    if let filter {
      conditions.append(filter.sql)
      arguments += filter.arguments
    }
    return HistoryRows(
      table: entity.tableName, whereClause: conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "),
      arguments: arguments)
  }

  /// The selected rows' keys by concrete entity.
  private func selectAffected(
    _ entity: EntityDescription, _ rows: HistoryRows, includesSubentities: Bool, _ connection: some DatabaseConnection
  ) throws -> [(entity: EntityDescription, primaryKeys: [Int64])] {
    if rows.whereClause.isEmpty, entity.isRoot, entity.subentityNames.isEmpty,
      let keys = try consecutiveKeys(inTable: rows.table, connection)
    {
      return keys.isEmpty ? [] : [(entity, keys)]
    }
    if entity.subentityNames.isEmpty || !includesSubentities {
      // Every selected row is of `entity`: the keys alone, without reading the rows' payload.
      let statement = try connection.statement("SELECT pk FROM \"\(rows.table)\"\(rows.whereClause) ORDER BY pk")
      defer { statement.reset() }
      for (index, argument) in rows.arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
      var keys: [Int64] = []
      while try statement.step() { keys.append(statement.int64(0)) }
      return keys.isEmpty ? [] : [(entity, keys)]
    }
    let statement = try connection.statement("SELECT pk, _entity FROM \"\(rows.table)\"\(rows.whereClause) ORDER BY pk")
    defer { statement.reset() }
    for (index, argument) in rows.arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    let candidates = entity.selfAndDescendantNames.compactMap { model.entity(named: $0) }
    var keys = [[Int64]](repeating: [], count: candidates.count)
    var last = 0
    while try statement.step() {
      let code = statement.int64(1)
      if code != candidates[last].code {
        guard let index = candidates.firstIndex(where: { $0.code == code }) else { continue }
        last = index
      }
      keys[last].append(statement.int64(0))
    }
    return zip(candidates, keys).filter { !$0.1.isEmpty }.map { ($0.0, $0.1) }
  }

  /// Every key of a table whose keys form one run of consecutive integers (a table filled by
  /// inserts and never thinned out), found without reading each row: its row count (SQLite
  /// counts a page's cells without decoding them) equals the span from its smallest to its
  /// largest key (each one b-tree seek). nil when the keys have gaps. Reading each key costs
  /// more than deleting the rows (docs/performance.md).
  private func consecutiveKeys(inTable table: String, _ connection: some DatabaseConnection) throws -> [Int64]? {
    func integer(_ sql: String) throws -> Int64? {
      let statement = try connection.statement(sql)
      defer { statement.reset() }
      guard try statement.step(), !statement.isNull(0) else { return nil }
      return statement.int64(0)
    }
    guard let count = try integer("SELECT count(*) FROM \"\(table)\""), count > 0 else { return [] }
    guard let first = try integer("SELECT min(pk) FROM \"\(table)\""),
      let last = try integer("SELECT max(pk) FROM \"\(table)\""), last &- first &+ 1 == count
    else { return nil }
    return Array(first...last)
  }
}
