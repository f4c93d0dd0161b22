import Foundation

extension MigrationPlanner {
  /// Where a to-one's key column or order column of the new table takes its values from.
  mutating func relationshipSource(
    _ column: TableColumn, entity: EntityDescription, previousEntity: EntityDescription?, codes: [Int64]
  ) throws -> ColumnSource? {
    guard let relationship = entity.relationship(named: column.property) else { return nil }
    guard let previousEntity else { return .null }
    guard let previous = previousRelationship(of: relationship, in: previousEntity) else {
      if column.role == .foreignKey && relationship.isRequired {
        let rows = try count(
          "SELECT count(*) FROM \"\(previousEntity.rootName)\" WHERE _entity IN (SELECT value FROM json_each(?))",
          [.text(HistorySchema.jsonArray(codes))])
        if rows > 0 {
          refuse(entity.name, relationship.name, "is a required to-one added while \(rows) rows exist with none")
          return nil
        }
      }
      return .null
    }
    guard isSameShape(relationship, previous) else { return nil }  // refused by `migrateRelationships`
    switch (column.role, previous.column, previous.orderColumn) {
    case (.foreignKey, let name?, _): return .copy(name)
    case (.order, _?, let order?): return .copy(order)
    case (.foreignKey, nil, _):
      refuse(
        entity.name, relationship.name,
        "moves its key column to the other side of the relationship (the pair's names sort differently now)")
      return nil
    default: return nil
    }
  }

  /// The old entity's own relationship that `relationship` continues: its `originalName`, or
  /// its name. Old relationships come from the stored schema, which says where their links
  /// are (a model without classes has no relationship descriptions).
  func previousRelationship(of relationship: RelationshipDescription, in source: EntityDescription)
    -> ModelSchema.Relationship?
  {
    let own = ownSchemaRelationships(of: source.name)
    return [relationship.originalName, relationship.name].compactMap { $0 }.lazy.compactMap { name in
      own.first { $0.name == name }
    }.first
  }

  /// The relationships the stored schema gives an old entity itself.
  func ownSchemaRelationships(of entity: String) -> [ModelSchema.Relationship] {
    old.schema.entities.first { $0.name == entity }?.relationships ?? []
  }

  /// Same kind, and the destination continues the old destination.
  func isSameShape(_ relationship: RelationshipDescription, _ previous: ModelSchema.Relationship) -> Bool {
    relationship.kind == previous.kind && oldName[relationship.destinationEntityName] == previous.destination
  }

  /// Added and removed relationships, refused changes of kind or destination, and the join
  /// tables of many-to-manys: kept, renamed, made, dropped, or rebuilt when the other side now
  /// owns the table (its `source` and `target` columns swap).
  mutating func migrateRelationships() {
    var keptJoinTables = Set<String>()
    for entity in new.entities {
      let previousEntity = oldName[entity.name].flatMap(old.entity(named:))
      for relationship in entity.relationships where relationship.entityName == entity.name {
        let previous = previousEntity.flatMap { previousRelationship(of: relationship, in: $0) }
        if let previous, !isSameShape(relationship, previous) {
          refuse(
            entity.name, relationship.name,
            "changes from \(previous.kind) to \(previous.destination) into \(relationship.kind) to "
              + relationship.destinationEntityName)
          continue
        }
        if previous == nil && previousEntity != nil { note(.addRelationship, entity.name, relationship.name, "") }
        if let previous, previous.name != relationship.name {
          note(.renameRelationship, entity.name, relationship.name, "was \(previous.name)")
        }
        guard case .joinTable(let table, _, _, _, true) = relationship.storage else { continue }
        if let previous, let oldTable = previous.joinTable {
          keptJoinTables.insert(oldTable)
          moveJoinTable(from: oldTable, to: table, swapped: previous.joinColumn != "source", entity: entity.name)
        } else {
          command(
            "CREATE TABLE \"\(table)\" (source INTEGER NOT NULL, target INTEGER NOT NULL, "
              + "source_order INTEGER, target_order INTEGER, PRIMARY KEY (source, target)) WITHOUT ROWID")
          command("CREATE INDEX \"_index_\(table)_target\" ON \"\(table)\"(target, source)")
        }
      }
    }
    for entity in old.entities {
      let continued = new.entities.first { oldName[$0.name] == entity.name }
      for relationship in ownSchemaRelationships(of: entity.name) {
        let kept =
          continued?.relationships.contains {
            $0.entityName == continued?.name && previousRelationship(of: $0, in: entity)?.name == relationship.name
          } ?? false
        if let continued, !kept {
          note(.removeRelationship, continued.name, relationship.name, "its links are dropped")
        }
        guard let table = relationship.ownedJoinTable, !keptJoinTables.contains(table) else { continue }
        command("DROP TABLE \"\(table)\"")  // gone with its relationship
      }
    }
  }

  private mutating func moveJoinTable(from oldTable: String, to table: String, swapped: Bool, entity: String) {
    guard oldTable != table || swapped else { return }
    if !swapped {
      command("DROP INDEX \"_index_\(oldTable)_target\"")
      command("ALTER TABLE \"\(oldTable)\" RENAME TO \"\(table)\"")
      command("CREATE INDEX \"_index_\(table)_target\" ON \"\(table)\"(target, source)")
      return
    }
    let temporary = "_migrating_\(table)"
    command(
      "CREATE TABLE \"\(temporary)\" (source INTEGER NOT NULL, target INTEGER NOT NULL, "
        + "source_order INTEGER, target_order INTEGER, PRIMARY KEY (source, target)) WITHOUT ROWID")
    command(
      "INSERT INTO \"\(temporary)\" (source, target, source_order, target_order) "
        + "SELECT target, source, target_order, source_order FROM \"\(oldTable)\"")
    command("DROP TABLE \"\(oldTable)\"")
    command("ALTER TABLE \"\(temporary)\" RENAME TO \"\(table)\"")
    command("CREATE INDEX \"_index_\(table)_target\" ON \"\(table)\"(target, source)")
    note(.rebuildTable, table, nil, "join table of \(entity), its columns swapped (was \(oldTable))")
  }
}
