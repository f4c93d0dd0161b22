import Foundation

extension MigrationPlanner {
  /// The plan for one table that continues an old one: where each new column's values come
  /// from, whether the table can be altered in place or must be rebuilt.
  struct TablePlan {
    var sources: [(column: TableColumn, source: ColumnSource)] = []
    var rebuild = false
    /// (old code, new code) for each entity of the table that continues an old one.
    var codes: [(Int64, Int64)] = []
    var rows = 0
  }

  mutating func migrateTable(from source: StoredTable, to layout: TableLayout) throws {
    var plan = TablePlan()
    plan.rows = try count("SELECT count(*) FROM \"\(source.root.name)\"")
    for entity in layout.hierarchy {
      if let previous = oldName[entity.name].flatMap(old.entity(named:)) {
        plan.codes.append((previous.code, entity.code))
      } else {
        note(.addEntity, entity.name, nil, "in the table \(layout.root.name)")
      }
    }
    for column in layout.columns {
      guard let entity = new.entity(named: column.entityName) else { continue }
      guard let columnSource = try self.source(of: column, entity: entity) else { continue }
      plan.sources.append((column, columnSource))
    }
    let used = Set(plan.sources.compactMap { $0.source.oldColumn })
    for column in source.columns where !used.contains(column.name) {
      plan.rebuild = true
      if column.role == .attribute {
        note(.removeAttribute, column.entityName, column.property, "column \(column.name) dropped", rows: plan.rows)
      }
    }
    for (column, columnSource) in plan.sources {
      switch columnSource {
      case .copy(let name):
        let before = source.columns.first { $0.name == name }
        if before?.isNotNull != column.isNotNull { plan.rebuild = true }
        // A rename onto a name the old table still uses is a rebuild, not a chain of renames.
        if name != column.name && source.columns.contains(where: { $0.name == column.name }) { plan.rebuild = true }
      case .copyFilling, .fill: if column.isNotNull { plan.rebuild = true }
      case .derived: plan.rebuild = true
      case .null: break
      }
    }
    guard result.refusals.isEmpty else { return }
    try checkUniqueness(of: layout, from: source, plan: plan)
    guard result.refusals.isEmpty else { return }
    if plan.rebuild {
      rebuild(source, into: layout, plan: plan)
    } else {
      alter(source, into: layout, plan: plan)
    }
  }

  // MARK: - Columns

  /// Where `column` of the new table takes its values from; nil (after a refusal) when it
  /// cannot be inferred.
  mutating func source(of column: TableColumn, entity: EntityDescription) throws
    -> ColumnSource?
  {
    let previousEntity = oldName[entity.name].flatMap(old.entity(named:))
    let codes =
      previousEntity.map { previous in
        previous.selfAndDescendantNames.compactMap { old.entity(named: $0)?.code }
      } ?? []
    switch column.role {
    case .attribute:
      guard let attribute = entity.attribute(named: column.property),
        let source = try attributeSource(attribute, column: column, previousEntity: previousEntity, codes: codes)
      else { return nil }
      return try adjustingForMoves(source, attribute: attribute, column: column)
    case .foreignKey, .order:
      return try relationshipSource(column, entity: entity, previousEntity: previousEntity, codes: codes)
    }
  }

  private mutating func attributeSource(
    _ attribute: AttributeDescription, column: TableColumn, previousEntity: EntityDescription?, codes: [Int64]
  ) throws -> ColumnSource? {
    let entityName = attribute.entityName
    guard let previousEntity, let previous = previousAttribute(of: attribute, in: previousEntity) else {
      guard let previousEntity else { return .null }  // a new entity: no rows yet
      return try addedAttribute(attribute, table: previousEntity.rootName, codes: codes)
    }
    if previous.attributeType != attribute.attributeType || previous.storage != attribute.storage {
      refuse(
        entityName, attribute.name,
        "changes type from \(previous.attributeType)/\(previous.storage) to \(attribute.attributeType)/\(attribute.storage)"
      )
      return nil
    }
    if previous.name != attribute.name {
      note(.renameAttribute, entityName, attribute.name, "was \(previous.name)")
    } else if previous.columnName != attribute.columnName {
      note(.renameAttribute, entityName, attribute.name, "column \(previous.columnName) → \(attribute.columnName)")
    }
    if previous.isOptional && !attribute.isOptional {
      let nils = try count(
        "SELECT count(*) FROM \"\(previousEntity.rootName)\" WHERE \"\(previous.columnName)\" IS NULL "
          + "AND \(entityIn)", [.text(HistorySchema.jsonArray(codes))])
      guard nils > 0 else {
        note(.makeRequired, entityName, attribute.name, "no row is nil", rows: 0)
        return .copy(previous.columnName)
      }
      guard let value = defaultValue(of: attribute) else {
        refuse(
          entityName, attribute.name,
          "becomes required while \(nils) rows are nil, and it declares no default that is the same for every object")
        return nil
      }
      note(.makeRequired, entityName, attribute.name, "nil rows get \(value.sqlLiteral)", rows: nils)
      return .copyFilling(previous.columnName, value, codes: codes)
    }
    if !previous.isOptional && attribute.isOptional { note(.makeOptional, entityName, attribute.name, "") }
    return .copy(previous.columnName)
  }

  private mutating func addedAttribute(_ attribute: AttributeDescription, table: String, codes: [Int64]) throws
    -> ColumnSource?
  {
    // Rows of every entity of the table: SQLite counts the b-tree without reading a row (an
    // added optional attribute of a million rows plans in milliseconds, not a full scan).
    let wholeTable = Set(old.entities.filter { $0.rootName == table }.map(\.code)) == Set(codes)
    let rows =
      wholeTable
      ? try count("SELECT count(*) FROM \"\(table)\"")
      : try count(
        "SELECT count(*) FROM \"\(table)\" "
          + "WHERE \(entityIn)", [.text(HistorySchema.jsonArray(codes))])
    guard let value = defaultValue(of: attribute) else {
      if rows == 0 {
        note(.addAttribute, attribute.entityName, attribute.name, "no rows to fill", rows: 0)
        return .null
      }
      refuse(
        attribute.entityName, attribute.name,
        "is added while \(rows) rows exist, and it declares no default that is the same for every object "
          + "(a value such as UUID() or Date() differs per object)")
      return nil
    }
    note(.addAttribute, attribute.entityName, attribute.name, "existing rows get \(value.sqlLiteral)", rows: rows)
    if case .null = value { return .null }
    return .fill(value, codes: codes)
  }

  /// The value the attribute's declaration gives every new object (`= ""`, `= nil`, `= .draft`)
  /// in its stored form; nil when two new objects get different values (`= UUID()`,
  /// `= Date()`). A model read from JSON (a tool's) has no class to ask and its JSON no
  /// defaults: an optional attribute's is nil there, a required one has none; a model read
  /// from a model file has the file's defaults.
  func defaultValue(of attribute: AttributeDescription) -> PrimitiveValue? {
    guard let entity = new.entity(named: attribute.entityName) else { return nil }
    guard entity.hasClass else { return attribute.constantDefault ?? (attribute.isOptional ? .null : nil) }
    let first = entity.objectType.init()
    let second = entity.objectType.init()
    guard let one = try? attribute.accessor.encode(first), let two = try? attribute.accessor.encode(second),
      one == two
    else { return nil }
    return one
  }
}

extension ColumnSource {
  /// The old column it reads, if any.
  var oldColumn: String? {
    switch self {
    case .copy(let name), .copyFilling(let name, _, _): name
    case .fill, .null, .derived: nil
    }
  }
}

extension PrimitiveValue {
  /// The value as an SQL literal, for reports and messages (never for SQL that runs).
  var sqlLiteral: String {
    switch self {
    case .null: "nil"
    case .integer(let value): String(value)
    case .real(let value): String(value)
    case .text(let value): "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
    case .blob(let data): "x'" + data.hexDigits + "'"
    }
  }
}
