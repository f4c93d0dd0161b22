import Foundation

// MARK: - Relationships
//
// A relationship keeps its links where its pair's storage says (`RelationshipStorage`): a key
// column in the to-one side's table (with an order column there when the to-many side is
// ordered), or a join table owned by the side whose names sort first. Inference keeps every
// link through these changes of kind:
//
// - a to-many side made ordered or unordered: the order column is filled with each list's
//   order by primary key (the order an unordered list reads in), or cleared;
// - one-to-many ↔ many-to-many (the to-one side becomes to-many, or back): the links move
//   from the key column into a new join table, or back from the join table into a key column,
//   which is refused while a row has more than one link (it would lose all but one).
//
// Any other change of kind or destination needs a custom stage.

/// How a relationship's kind changes from the stored model to the new one.
enum RelationshipKindChange: Equatable {
  case none
  /// A to-many side made ordered (`true`) or unordered (`false`).
  case ordering(toOrdered: Bool)
  /// A to-one whose inverse is to-many made to-many: key column → join table.
  case toMany
  /// A to-many whose inverse is to-many made to-one: join table → key column.
  case toOne
}

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
          "SELECT count(*) FROM \"\(previousEntity.rootName)\" WHERE \(entityIn)",
          [.text(HistorySchema.jsonArray(codes))])
        if rows > 0 {
          refuse(entity.name, relationship.name, "is a required to-one added while \(rows) rows exist with none")
          return nil
        }
      }
      return .null
    }
    guard case .success(let change) = kindChange(relationship, previous) else { return nil }  // refused later
    if change == .toOne { return try joinedKeySource(column, relationship, previous) }
    switch (column.role, previous.column, previous.orderColumn) {
    case (.foreignKey, let name?, _): return .copy(name)
    case (.order, _?, let order?): return .copy(order)
    case (.order, let key?, nil):
      // The to-many side became ordered: each list in the order it read in, by primary key.
      return .derived(
        "CASE WHEN \"\(key)\" IS NULL THEN NULL ELSE row_number() OVER (PARTITION BY \"\(key)\" ORDER BY pk) - 1 END")
    case (.foreignKey, nil, _):
      refuse(
        entity.name, relationship.name,
        "moves its key column to the other side of the relationship (the pair's names sort differently now)")
      return nil
    default: return nil
    }
  }

  /// A many-to-many side made to-one: its key column (and the order column of its ordered
  /// inverse) read from the old join table; refused while a row has several links.
  private mutating func joinedKeySource(
    _ column: TableColumn, _ relationship: RelationshipDescription, _ previous: ModelSchema.Relationship
  ) throws -> ColumnSource? {
    guard let table = previous.joinTable, let own = previous.joinColumn else { return nil }
    let other = own == "source" ? "target" : "source"
    let link = "(SELECT \(other) FROM \"\(table)\" WHERE \(own) = pk)"
    switch column.role {
    case .foreignKey:
      let crowded = try count(
        "SELECT count(*) FROM (SELECT \(own) FROM \"\(table)\" GROUP BY \(own) HAVING count(*) > 1) AS crowded")
      guard crowded == 0 else {
        refuse(
          relationship.entityName, relationship.name,
          "becomes to-one while \(crowded) rows have more than one link (all but one would be lost)")
        return nil
      }
      if relationship.isRequired, let owner = old.entity(named: oldName[relationship.entityName] ?? "") {
        let codes = owner.selfAndDescendantNames.compactMap { old.entity(named: $0)?.code }
        let unlinked = try count(
          "SELECT count(*) FROM \"\(owner.rootName)\" WHERE \(entityIn) "
            + "AND pk NOT IN (SELECT \(own) FROM \"\(table)\")", [.text(HistorySchema.jsonArray(codes))])
        guard unlinked == 0 else {
          refuse(
            relationship.entityName, relationship.name,
            "becomes a required to-one while \(unlinked) rows have no link")
          return nil
        }
      }
      return .derived(link)
    case .order:
      // The inverse's list order: kept from the join table where it was ordered.
      if let inverseOrder = oldInverse(of: previous)?.orderColumn {
        return .derived("(SELECT \(inverseOrder) FROM \"\(table)\" WHERE \(own) = pk)")
      }
      return .derived(
        "CASE WHEN \(link) IS NULL THEN NULL ELSE row_number() OVER (PARTITION BY \(link) ORDER BY pk) - 1 END")
    case .attribute: return nil
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

  /// The stored inverse of an old relationship: declared by its destination or an ancestor.
  func oldInverse(of previous: ModelSchema.Relationship) -> ModelSchema.Relationship? {
    var entity = old.entity(named: previous.destination)
    while let current = entity {
      if let found = ownSchemaRelationships(of: current.name).first(where: { $0.name == previous.inverse }) {
        return found
      }
      entity = current.superentityName.flatMap(old.entity(named:))
    }
    return nil
  }

  /// How `relationship`'s kind changes from `previous`, or why inference cannot make it.
  func kindChange(_ relationship: RelationshipDescription, _ previous: ModelSchema.Relationship)
    -> Result<RelationshipKindChange, KindChangeRefusal>
  {
    let change = "changes from \(previous.kind) to \(previous.destination) into \(relationship.kind) to "
    guard oldName[relationship.destinationEntityName] == previous.destination else {
      return .failure(KindChangeRefusal(change + relationship.destinationEntityName))
    }
    if relationship.kind == previous.kind { return .success(.none) }
    if relationship.kind.isToMany && previous.kind.isToMany {
      return .success(.ordering(toOrdered: relationship.kind == .ordered))
    }
    let newInverse = new.entity(named: relationship.destinationEntityName)?.relationships.first {
      $0.name == relationship.inverseName
    }
    guard newInverse?.kind.isToMany == true, oldInverse(of: previous)?.kind.isToMany == true else {
      return .failure(
        KindChangeRefusal(
          change + relationship.destinationEntityName + " where its inverse is not to-many on both sides"))
    }
    return .success(relationship.kind.isToMany ? .toMany : .toOne)
  }

  // MARK: - Join tables

  /// Added and removed relationships, refused changes of kind or destination, and the join
  /// tables of many-to-manys: kept, renamed, made (filled from a key column when a to-one
  /// side became to-many), dropped, or rebuilt when the other side now owns the table (its
  /// `source` and `target` columns swap).
  mutating func migrateRelationships() {
    var keptJoinTables = Set<String>()
    for entity in new.entities {
      let previousEntity = oldName[entity.name].flatMap(old.entity(named:))
      for relationship in entity.relationships where relationship.entityName == entity.name {
        let previous = previousEntity.flatMap { previousRelationship(of: relationship, in: $0) }
        var change = RelationshipKindChange.none
        if let previous {
          switch kindChange(relationship, previous) {
          case .failure(let refusal):
            refuse(entity.name, relationship.name, refusal.change)
            continue
          case .success(let found): change = found
          }
          noteKindChange(change, entity.name, relationship.name, previous)
          // A relationship that becomes its own inverse (or stops being one) keeps its links one
          // way only: each link is stored once for a pair, twice for its own inverse.
          let wasOwnInverse = previous.inverse == previous.name && previous.destination == previousEntity?.name
          let isOwnInverse =
            relationship.inverseName == relationship.name
            && relationship.destinationEntityName == entity.name
          if wasOwnInverse != isOwnInverse {
            refuse(
              entity.name, relationship.name,
              isOwnInverse
                ? "becomes its own inverse: its links are stored one way and would be read one way"
                : "stops being its own inverse: its links are stored both ways")
            continue
          }
        }
        if previous == nil && previousEntity != nil { note(.addRelationship, entity.name, relationship.name, "") }
        if let previous, previous.name != relationship.name {
          note(.renameRelationship, entity.name, relationship.name, "was \(previous.name)")
        }
        guard case .joinTable(let table, _, _, _, true) = relationship.storage else { continue }
        if let previous, let oldTable = previous.joinTable {
          keptJoinTables.insert(oldTable)
          moveJoinTable(from: oldTable, to: table, swapped: previous.joinColumn != "source", entity: entity.name)
          reorderJoinTable(table, relationship, previous)
        } else {
          createJoinTable(table, filledFor: relationship, previous: previous, entity: entity.name)
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
        command("DROP TABLE \"\(table)\"")  // gone with its relationship, or its links moved to a key column
      }
    }
  }

  private mutating func noteKindChange(
    _ change: RelationshipKindChange, _ entity: String, _ name: String, _ previous: ModelSchema.Relationship
  ) {
    switch change {
    case .none: break
    case .ordering(true): note(.makeOrdered, entity, name, "each list in primary-key order")
    case .ordering(false): note(.makeUnordered, entity, name, "the lists' order is dropped")
    case .toMany: note(.moveLinksToJoinTable, entity, name, "its key column's links move into a join table")
    case .toOne:
      note(.moveLinksToKeyColumn, entity, name, "its join table's links move into a key column (one per row)")
    }
  }

  /// A new join table, for a new many-to-many or one whose to-one side became to-many. In the
  /// second case its links are copied from the old key column before any table of the
  /// migration changes (so its commands go first, naming the old table and column).
  private mutating func createJoinTable(
    _ table: String, filledFor relationship: RelationshipDescription, previous: ModelSchema.Relationship?,
    entity: String
  ) {
    guard
      let (holder, key, holderOwns) = keyColumnLinks(relationship, previous),
      let holderEntity = old.entity(named: holder.entity)
    else {
      commands(sql.joinTableWithIndex(named: table))
      return
    }
    // The holder's list is to-one before: one link each, position 0. The other side's list
    // keeps the order column it had, or takes primary-key order.
    let holderOrder = "0"
    let otherOrder =
      holder.relationship.orderColumn.map { "\"\($0)\"" }
      ?? "row_number() OVER (PARTITION BY \"\(key)\" ORDER BY pk) - 1"
    let (source, target) = holderOwns ? ("pk", "\"\(key)\"") : ("\"\(key)\"", "pk")
    let (sourceOrder, targetOrder) = holderOwns ? (holderOrder, otherOrder) : (otherOrder, holderOrder)
    let copy =
      "INSERT INTO \"\(table)\" (source, target, source_order, target_order) SELECT \(source), \(target), "
      + "\(sourceOrder), \(targetOrder) FROM \"\(holderEntity.rootName)\" WHERE \"\(key)\" IS NOT NULL"
    let commands = (sql.joinTableWithIndex(named: table) + [copy]).map { MigrationCommand(sql: $0) }
    result.commands.insert(contentsOf: commands, at: 0)
    let rows = (try? count("SELECT count(*) FROM \"\(holderEntity.rootName)\" WHERE \"\(key)\" IS NOT NULL")) ?? 0
    note(.moveLinksToJoinTable, entity, relationship.name, "links copied from \(holder.entity).\(key)", rows: rows)
  }

  /// For a pair that was one-to-many and is now many-to-many: the old entity whose key column
  /// held the links (with its old relationship, whose order column is the other side's list
  /// order), that column, and whether that entity's side owns the new join table.
  private func keyColumnLinks(_ relationship: RelationshipDescription, _ previous: ModelSchema.Relationship?)
    -> (holder: (entity: String, relationship: ModelSchema.Relationship), key: String, holderOwns: Bool)?
  {
    // This side held the key (it was the to-one)…
    if let previous, let key = previous.column,
      let holder = old.schema.entities.first(where: { ($0.relationships ?? []).contains(previous) })
    {
      return ((holder.name, previous), key, true)
    }
    // …or the inverse did.
    guard
      let inverse = new.entity(named: relationship.destinationEntityName)?.relationships.first(where: {
        $0.name == relationship.inverseName
      }),
      let inverseEntity = oldName[inverse.entityName].flatMap(old.entity(named:)),
      let oldInverse = previousRelationship(of: inverse, in: inverseEntity), let key = oldInverse.column
    else { return nil }
    return ((inverseEntity.name, oldInverse), key, false)
  }

  /// Sets or clears the order columns of a kept join table whose sides changed ordering.
  private mutating func reorderJoinTable(
    _ table: String, _ relationship: RelationshipDescription, _ previous: ModelSchema.Relationship
  ) {
    let inverse = new.entity(named: relationship.destinationEntityName)?.relationships.first {
      $0.name == relationship.inverseName
    }
    let sides = [
      (relationship.kind, previous.kind, "source", "target"),
      (inverse?.kind, oldInverse(of: previous)?.kind, "target", "source"),
    ]
    for (kind, before, own, other) in sides where kind != before {
      if kind == .ordered {
        command(
          "UPDATE \"\(table)\" SET \(own)_order = ranked.position FROM (SELECT \(own) AS o, \(other) AS t, "
            + "row_number() OVER (PARTITION BY \(own) ORDER BY \(other)) - 1 AS position FROM \"\(table)\") "
            + "AS ranked WHERE \(own) = ranked.o AND \(other) = ranked.t")
      } else if before == .ordered {
        command("UPDATE \"\(table)\" SET \(own)_order = NULL")
      }
    }
  }

  private mutating func moveJoinTable(from oldTable: String, to table: String, swapped: Bool, entity: String) {
    guard oldTable != table || swapped else { return }
    let index = StoredTable.joinObjects(table)[1]
    if !swapped {
      command(sql.dropIndex(named: StoredTable.joinObjects(oldTable)[1].name))
      command("ALTER TABLE \"\(oldTable)\" RENAME TO \"\(table)\"")
      commands(sql.create(index))
      return
    }
    let temporary = "_migrating_\(table)"
    command(sql.joinTable(named: temporary))
    command(
      "INSERT INTO \"\(temporary)\" (source, target, source_order, target_order) "
        + "SELECT target, source, target_order, source_order FROM \"\(oldTable)\"")
    command("DROP TABLE \"\(oldTable)\"")
    command("ALTER TABLE \"\(temporary)\" RENAME TO \"\(table)\"")
    commands(sql.create(index))
    note(.rebuildTable, table, nil, "join table of \(entity), its columns swapped (was \(oldTable))")
  }
}

/// Why inference cannot change a relationship's kind: the change, in words.
struct KindChangeRefusal: Error {
  let change: String
  init(_ change: String) { self.change = change }
}
