import Foundation

// MARK: - Inferring a migration
//
// The planner compares the model a store keeps (decoded from `_metadata.model_json`) with the
// model it is opened with, and turns the differences into SQL commands, with every value
// bound. It reads the store (row counts, values that a new uniqueness constraint would find
// twice) and writes nothing: the same planning is the dry run and, under the write lock, the
// migration. Identifiers come from the two validated models only.
//
// The SQL is the store engine's (`SchemaSQL`: SQLite's, or PostgreSQL's types, index names and
// typed parameters); the planning is the same on both.
//
// Each root table is either altered in place (renames, added nullable columns, indexes, entity
// codes: O(1) or one pass) or rebuilt with SQLite's 12-step procedure (a new table, one
// `INSERT … SELECT`, drop, rename, indexes), which runs inside SQLite in bounded memory: no
// row passes through Swift.

/// One SQL statement of a migration and the values bound to it.
struct MigrationCommand: Sendable, Equatable {
  var sql: String
  var arguments: [PrimitiveValue] = []
}

/// A migration inferred from two models: the operations a report shows, the commands that do
/// them, and the reasons it cannot run.
struct InferredMigration: Sendable {
  var operations: [MigrationReport.Operation] = []
  var commands: [MigrationCommand] = []
  var refusals: [MigrationError] = []
}

/// Where a column of the new table takes its values from, in the old table.
enum ColumnSource: Equatable {
  /// The old column's values.
  case copy(String)
  /// The old column's values; rows of the given (old) entity codes where it is NULL get the value.
  case copyFilling(String, PrimitiveValue, codes: [Int64])
  /// A new column: rows of the given (old) entity codes get the value, others NULL.
  case fill(PrimitiveValue, codes: [Int64])
  /// A new column, NULL in every row.
  case null
  /// An SQL expression over the old row that only a rebuild's `INSERT … SELECT` can compute
  /// (a window function, or a subquery into a join table): the table is rebuilt.
  case derived(String, [PrimitiveValue] = [])
}

struct MigrationPlanner {
  let connection: any DatabaseConnection
  /// The SQL of the store's engine.
  let sql: SchemaSQL
  let old: ManagedObjectModel
  let new: ManagedObjectModel
  /// For each entity of the new model, the old entity it continues (by name or
  /// `originalEntityName`).
  var oldName: [String: String] = [:]
  var result = InferredMigration()

  init(connection: any DatabaseConnection, old: ManagedObjectModel, new: ManagedObjectModel) {
    self.connection = connection
    self.sql = SchemaSQL(connection.dialect)
    self.old = old
    self.new = new
  }

  /// Plans the whole migration; refusals are collected, not thrown.
  static func infer(connection: any DatabaseConnection, old: ManagedObjectModel, new: ManagedObjectModel) throws
    -> InferredMigration
  {
    var planner = MigrationPlanner(connection: connection, old: old, new: new)
    planner.mapEntities()
    guard planner.result.refusals.isEmpty else { return planner.result }
    let oldLayouts = layouts(of: old).map { StoredTable($0, schema: old.schema) }
    for layout in layouts(of: new) {
      if let source = planner.oldName[layout.root.name].flatMap({ name in oldLayouts.first { $0.root.name == name } }) {
        try planner.migrateTable(from: source, to: layout)
      } else {
        planner.createTable(layout)
      }
    }
    for layout in oldLayouts where !planner.oldName.values.contains(layout.root.name) {
      try planner.dropTable(layout)
    }
    try planner.removeSubentities()
    planner.migrateRelationships()
    planner.rewriteCatalog()
    planner.rewriteHistory()
    return planner.result
  }

  static func layouts(of model: ManagedObjectModel) -> [TableLayout] { TableLayout.tables(of: model) }

  // MARK: - Entities

  /// Which old entity each new entity continues; refuses moves within a hierarchy, two
  /// entities continuing one, and models that share no entity at all.
  mutating func mapEntities() {
    for entity in new.entities {
      let candidates = [entity.originalName, entity.name].compactMap { $0 }
      guard let name = candidates.first(where: { old.entity(named: $0) != nil }) else { continue }
      if oldName.values.contains(name) {
        refuse(entity.name, nil, "continues the old entity \(name), which another entity continues too")
        continue
      }
      oldName[entity.name] = name
    }
    for entity in new.entities {
      guard let source = oldName[entity.name].flatMap(old.entity(named:)) else { continue }
      let expected = entity.superentityName.map { oldName[$0] ?? "(new) \($0)" }
      let move = "superentity \(source.superentityName ?? "none") → \(entity.superentityName ?? "none")"
      if source.superentityName != expected {
        if !entity.isRoot && oldName[entity.rootName] == source.rootName {
          // Within its hierarchy: the same table (`MigrationPlanner+Hierarchy.swift`).
          note(.moveEntity, entity.name, nil, move)
          checkMoveLinks(entity, from: source)
        } else {
          refuse(entity.name, nil, "moves to another hierarchy (\(move)), whose rows live in another table")
        }
      }
      if source.name != entity.name {
        note(.renameEntity, entity.name, nil, "was \(source.name)")
      }
    }
    if oldName.isEmpty {
      refuse(
        new.entities.map(\.name).joined(separator: ", "), nil,
        "shares no entity with the store's model (\(old.entities.map(\.name).joined(separator: ", "))): "
          + "this looks like another application's store")
    }
  }

  /// Old subentities that are gone while their table stays: allowed when they have no rows.
  mutating func removeSubentities() throws {
    let kept = Set(oldName.values)
    for entity in old.entities where !entity.isRoot && !kept.contains(entity.name) && kept.contains(entity.rootName) {
      let rows = try count(
        "SELECT count(*) FROM \"\(entity.rootName)\" WHERE _entity = \(sql.integerParameter)", [.integer(entity.code)])
      if rows > 0 {
        refuse(
          entity.name, nil,
          "is removed while \(rows) rows of it exist (they share the table \(entity.rootName) with kept entities)")
      } else {
        note(.removeEntity, entity.name, nil, "no rows", rows: 0)
      }
    }
  }

  // MARK: - Whole tables

  mutating func createTable(_ layout: TableLayout) {
    for entity in layout.hierarchy { note(.addEntity, entity.name, nil, "") }
    // The join tables its entities own are the relationships' (`migrateRelationships`).
    command(sql.createTable(named: layout.root.name, columns: layout.columns))
    for object in layout.objects where object.kind == .index { commands(sql.create(object)) }
    command("INSERT INTO _primary_key (entity, key_floor) VALUES (?, 0)", [.text(layout.root.name)])
  }

  mutating func dropTable(_ layout: StoredTable) throws {
    let rows = try count("SELECT count(*) FROM \"\(layout.root.name)\"")
    for entity in layout.hierarchy {
      note(
        .removeEntity, entity.name, nil, entity.isRoot ? "its table is dropped" : "", rows: entity.isRoot ? rows : nil)
    }
    command("DROP TABLE \"\(layout.root.name)\"")
    command("DELETE FROM _primary_key WHERE entity = ?", [.text(layout.root.name)])
  }

  // MARK: - The catalog and history

  /// `_entities` gets the new model's codes; `_primary_key` follows a renamed root.
  mutating func rewriteCatalog() {
    command("DELETE FROM _entities")
    for entity in new.entities {
      command("INSERT INTO _entities (code, name) VALUES (?, ?)", [.integer(entity.code), .text(entity.name)])
    }
    for entity in new.entities where entity.isRoot {
      if let source = oldName[entity.name], source != entity.name {
        command("UPDATE _primary_key SET entity = ? WHERE entity = ?", [.text(entity.name), .text(source)])
      }
    }
  }

  /// History keeps resolving after renames: change rows of a renamed entity get its new name,
  /// and the changed-attribute lists and tombstone keys of a renamed attribute its new name.
  mutating func rewriteHistory() {
    for entity in new.entities {
      guard let source = oldName[entity.name], source != entity.name else { continue }
      command("UPDATE _history_change SET entity = ? WHERE entity = ?", [.text(entity.name), .text(source)])
      note(.rewriteHistory, entity.name, nil, "change rows of \(source) now name \(entity.name)")
    }
    for entity in new.entities {
      guard let source = oldName[entity.name].flatMap(old.entity(named:)) else { continue }
      for attribute in entity.attributes where attribute.entityName == entity.name {
        guard let previous = previousAttribute(of: attribute, in: source), previous.name != attribute.name else {
          continue
        }
        renameInHistory(entities: entity.selfAndDescendantNames, from: previous.name, to: attribute.name)
        note(.rewriteHistory, entity.name, attribute.name, "changed lists and tombstones: \(previous.name) → it")
      }
      for relationship in entity.relationships where relationship.entityName == entity.name {
        guard let previous = previousRelationship(of: relationship, in: source), previous.name != relationship.name
        else { continue }
        renameInHistory(entities: entity.selfAndDescendantNames, from: previous.name, to: relationship.name)
        note(.rewriteHistory, entity.name, relationship.name, "changed lists: \(previous.name) → it")
      }
    }
  }

  private mutating func renameInHistory(entities: [String], from: String, to: String) {
    let names = PrimitiveValue.text(HistorySchema.jsonArray(entities))
    guard sql.dialect == .sqlite else {
      // The same on PostgreSQL, whose history keeps the lists and tombstones as JSON text.
      command(
        """
        UPDATE _history_change SET changed = (SELECT CAST(json_agg(CASE WHEN e.value = ?1 THEN ?2 ELSE e.value END \
        ORDER BY e.n) AS text) FROM json_array_elements_text(CAST(changed AS json)) WITH ORDINALITY AS e(value, n)) \
        WHERE changed IS NOT NULL AND entity IN (\(sql.dialect.jsonTextValues("?3"))) \
        AND EXISTS (SELECT 1 FROM json_array_elements_text(CAST(changed AS json)) AS e(value) WHERE e.value = ?1)
        """, [.text(from), .text(to), names])
      command(
        """
        UPDATE _history_change SET tombstone = (SELECT CAST(json_object_agg(CASE WHEN t.key = ?1 THEN ?2 \
        ELSE t.key END, t.value) AS text) FROM json_each(CAST(tombstone AS json)) AS t) WHERE tombstone IS NOT NULL \
        AND entity IN (\(sql.dialect.jsonTextValues("?3"))) \
        AND json_extract_path(CAST(tombstone AS json), ?1) IS NOT NULL
        """, [.text(from), .text(to), names])
      return
    }
    command(
      """
      UPDATE _history_change SET changed = (SELECT json_group_array(CASE value WHEN ?1 THEN ?2 ELSE value END) \
      FROM json_each(changed)) WHERE changed IS NOT NULL AND entity IN (SELECT value FROM json_each(?3)) \
      AND EXISTS (SELECT 1 FROM json_each(changed) WHERE value = ?1)
      """, [.text(from), .text(to), names])
    command(
      """
      UPDATE _history_change SET tombstone = json_set(json_remove(tombstone, '$.' || ?1), '$.' || ?2, \
      json(json_extract(tombstone, '$.' || ?1))) WHERE tombstone IS NOT NULL \
      AND entity IN (SELECT value FROM json_each(?3)) AND json_type(tombstone, '$.' || ?1) IS NOT NULL
      """, [.text(from), .text(to), names])
  }

  // MARK: - Helpers

  /// The attribute of the old entity that `attribute` continues: its `originalName`, or its name.
  func previousAttribute(of attribute: AttributeDescription, in source: EntityDescription) -> AttributeDescription? {
    let own = source.attributes.filter { $0.entityName == source.name }
    return [attribute.originalName, attribute.name].compactMap { $0 }.lazy.compactMap { name in
      own.first { $0.name == name }
    }.first
  }

  mutating func refuse(
    _ entity: String, _ attribute: String?, _ change: String, stage: MigrationError.StageKind = .custom
  ) {
    result.refusals.append(.notInferable(entity: entity, attribute: attribute, change: change, neededStage: stage))
  }

  mutating func note(
    _ kind: MigrationReport.Operation.Kind, _ entity: String, _ property: String?, _ detail: String, rows: Int? = nil
  ) {
    result.operations.append(
      MigrationReport.Operation(kind: kind, entity: entity, property: property, detail: detail, rowsAffected: rows))
  }

  mutating func command(_ sql: String, _ arguments: [PrimitiveValue] = []) {
    result.commands.append(MigrationCommand(sql: sql, arguments: arguments))
  }

  mutating func commands(_ statements: [String]) {
    for statement in statements { command(statement) }
  }

  /// `_entity IN (…)` of the codes in a JSON array bound to its one parameter.
  var entityIn: String { "_entity IN (\(sql.dialect.jsonIntegerValues))" }

  func count(_ text: String, _ arguments: [PrimitiveValue] = []) throws -> Int {
    let statement = try connection.statement(text)
    defer { statement.reset() }
    for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    guard try statement.step() else { return 0 }
    return Int(statement.int64(0))
  }
}
