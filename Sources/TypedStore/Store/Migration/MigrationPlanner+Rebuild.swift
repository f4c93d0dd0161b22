import Foundation

extension MigrationPlanner {
  // MARK: - In place

  /// Alters the table where SQLite can: `RENAME TO`, `RENAME COLUMN` and `ADD COLUMN` are
  /// O(1); defaults and new entity codes take one `UPDATE` each; only the indexes that change
  /// are dropped or made.
  mutating func alter(_ source: StoredTable, into layout: TableLayout, plan: TablePlan) {
    let table = layout.root.name
    for object in source.objects where object.kind == .index && !layout.objects.contains(object) {
      command(sql.dropIndex(named: object.name))
      note(.removeIndex, source.root.name, object.name, object.columns.joined(separator: ", "))
    }
    if source.root.name != table { command("ALTER TABLE \"\(source.root.name)\" RENAME TO \"\(table)\"") }
    for (column, columnSource) in plan.sources {
      if let name = columnSource.oldColumn, name != column.name {
        command("ALTER TABLE \"\(table)\" RENAME COLUMN \"\(name)\" TO \"\(column.name)\"")
      }
      switch columnSource {
      case .copy: break
      case .copyFilling(_, let value, let codes):
        command(
          "UPDATE \"\(table)\" SET \"\(column.name)\" = ? WHERE \"\(column.name)\" IS NULL "
            + "AND \(entityIn)", [value, .text(HistorySchema.jsonArray(codes))])
      case .fill(let value, let codes):
        command("ALTER TABLE \"\(table)\" ADD COLUMN \(sql.definition(column))")
        command(
          "UPDATE \"\(table)\" SET \"\(column.name)\" = ? WHERE \(entityIn)",
          [value, .text(HistorySchema.jsonArray(codes))])
      case .null, .derived:  // a derived column always rebuilds the table (`migrateTable`)
        command("ALTER TABLE \"\(table)\" ADD COLUMN \(sql.definition(column))")
      }
    }
    if let (sql, arguments) = entityCodeExpression(plan.codes) {
      command("UPDATE \"\(table)\" SET _entity = \(sql)", arguments)
      note(.remapEntityCodes, table, nil, codesDetail(plan.codes), rows: plan.rows)
    }
    for object in layout.objects where object.kind == .index && !source.objects.contains(object) {
      commands(sql.create(object))
      note(.addIndex, table, object.name, object.columns.joined(separator: ", "), rows: plan.rows)
    }
  }

  // MARK: - Rebuilt

  /// SQLite's 12-step table rebuild, inside the migration's transaction: a new table of the
  /// new shape, one `INSERT … SELECT` that maps every row (in SQLite, in bounded memory), the
  /// old table dropped, the new one renamed, its indexes made.
  mutating func rebuild(_ source: StoredTable, into layout: TableLayout, plan: TablePlan) {
    let table = layout.root.name
    let temporary = "_migrating_\(table)"
    command(sql.createTable(named: temporary, columns: layout.columns))
    var arguments: [PrimitiveValue] = []
    var entity = "_entity"
    if let (sql, codeArguments) = entityCodeExpression(plan.codes) {
      entity = sql
      arguments += codeArguments
      note(.remapEntityCodes, table, nil, codesDetail(plan.codes), rows: plan.rows)
    }
    var expressions: [String] = []
    for (column, columnSource) in plan.sources {
      let (text, values) = expression(for: columnSource, column: column)
      expressions.append(text)
      arguments += values
    }
    let names = ["pk", "_version", "_entity"] + plan.sources.map { "\"\($0.column.name)\"" }
    command(
      "INSERT INTO \"\(temporary)\" (\(names.joined(separator: ", "))) SELECT "
        + (["pk", "_version", entity] + expressions).joined(separator: ", ") + " FROM \"\(source.root.name)\"",
      arguments)
    command("DROP TABLE \"\(source.root.name)\"")
    command("ALTER TABLE \"\(temporary)\" RENAME TO \"\(table)\"")
    for object in layout.objects where object.kind == .index { commands(sql.create(object)) }
    note(.rebuildTable, table, nil, "new table, rows copied, old table dropped, indexes made", rows: plan.rows)
  }

  /// The value of the new column `column` in terms of the old table's row.
  func expression(for source: ColumnSource, column: TableColumn) -> (String, [PrimitiveValue]) {
    switch source {
    case .copy(let name): ("\"\(name)\"", [])
    case .copyFilling(let name, let value, let codes):
      (
        "CASE WHEN \"\(name)\" IS NULL AND \(entityIn) THEN \(sql.parameter(for: column)) ELSE \"\(name)\" END",
        [.text(HistorySchema.jsonArray(codes)), value]
      )
    case .fill(let value, let codes):
      (
        "CASE WHEN \(entityIn) THEN \(sql.parameter(for: column)) END",
        [.text(HistorySchema.jsonArray(codes)), value]
      )
    case .null: (sql.null(for: column), [])
    case .derived(let sql, let arguments): (sql, arguments)
    }
  }

  /// `CASE _entity WHEN ? THEN ? … END` for codes that change; nil when none does.
  func entityCodeExpression(_ codes: [(Int64, Int64)]) -> (String, [PrimitiveValue])? {
    guard codes.contains(where: { $0.0 != $0.1 }) else { return nil }
    let cases = Array(repeating: "WHEN ? THEN \(sql.integerParameter)", count: codes.count).joined(separator: " ")
    return ("CASE _entity \(cases) END", codes.flatMap { [PrimitiveValue.integer($0.0), .integer($0.1)] })
  }

  private func codesDetail(_ codes: [(Int64, Int64)]) -> String {
    codes.filter { $0.0 != $0.1 }.map { "\($0.0) → \($0.1)" }.joined(separator: ", ")
  }

  // MARK: - Uniqueness

  /// Every unique index of the new table whose values could collide (a new index, or one over
  /// a column that gets values it did not have) is checked against the old rows first.
  mutating func checkUniqueness(of layout: TableLayout, from source: StoredTable, plan: TablePlan) throws {
    let byColumn = Dictionary(plan.sources.map { ($0.column.name, $0) }, uniquingKeysWith: { first, _ in first })
    for object in layout.objects where object.kind == .index && object.isUnique {
      let sources = object.columns.compactMap { byColumn[$0] }
      guard sources.count == object.columns.count else { continue }
      let unchanged = sources.allSatisfy { if case .copy = $0.source { true } else { false } }
      if unchanged
        && source.objects.contains(where: { $0.isUnique && $0.columns == sources.compactMap(\.source.oldColumn) })
      {
        continue
      }
      let collisions = try collisions(sources, table: source.root.name)
      guard !collisions.isEmpty else { continue }
      let entity = sources.first?.column.entityName ?? layout.root.name
      result.refusals.append(
        .uniquenessViolation(entity: entity, properties: sources.map(\.column.property), collisions: collisions))
    }
  }

  private func collisions(_ sources: [(column: TableColumn, source: ColumnSource)], table: String) throws
    -> [MigrationError.Collision]
  {
    var arguments: [PrimitiveValue] = []
    var values: [String] = []
    for (index, (column, source)) in sources.enumerated() {
      let (text, bound) = expression(for: source, column: column)
      values.append("\(text) AS v\(index)")
      arguments += bound
    }
    let names = sources.indices.map { "v\($0)" }
    let keys = sql.dialect == .sqlite ? "group_concat(pk)" : "string_agg(CAST(pk AS text), ',')"
    let statement = try connection.statement(
      "SELECT \(keys), " + zip(names, sources).map { sql.literal($0, of: $1.column) }.joined(separator: ", ")
        + " FROM (SELECT pk, \(values.joined(separator: ", ")) FROM \"\(table)\") AS old WHERE "
        + names.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
        + " GROUP BY \(names.joined(separator: ", ")) HAVING count(*) > 1 LIMIT 20")
    defer { statement.reset() }
    for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    var found: [MigrationError.Collision] = []
    while try statement.step() {
      let keys = statement.string(0).split(separator: ",").compactMap { Int64($0) }.sorted()
      found.append(
        MigrationError.Collision(
          values: sources.indices.map { statement.string(Int32($0 + 1)) }, primaryKeys: Array(keys.prefix(100))))
    }
    return found
  }
}
