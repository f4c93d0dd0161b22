import Foundation

// MARK: - Entities that move within their hierarchy
//
// Every entity of a hierarchy lives in its root's table, with a column for each attribute of
// each entity, empty in the rows of entities that do not have it. An entity that gets another
// superentity of the same root stays in that table with its primary keys, so its IDs, its
// history and every link to it keep meaning the same row. What changes is which columns its
// rows have: those of the ancestors it left are cleared in its rows (as for a removed
// attribute), and those of the ancestors it joined take their attribute's default (as for an
// added attribute: refused without a constant default while it has rows).
//
// Links are not moved: an entity that leaves an ancestor which declares relationships, or
// which other relationships point at, is refused (its rows would lose links, or stay linked as
// what they no longer are), and so is one that joins an ancestor with a required to-one. A
// move to another hierarchy (another table) needs a custom stage.

extension MigrationPlanner {
  /// The names (in the new model) of `entity`'s strict ancestors in the new model.
  func newAncestors(of entity: EntityDescription) -> Set<String> {
    var names = Set<String>()
    var current = entity.superentityName
    while let name = current, let ancestor = new.entity(named: name) {
      names.insert(name)
      current = ancestor.superentityName
    }
    return names
  }

  /// The names, mapped to the new model, of an old entity's strict ancestors in the old model
  /// (an ancestor that is gone keeps its old name, which no new entity has).
  func oldAncestors(of entity: EntityDescription) -> Set<String> {
    var names = Set<String>()
    var current = entity.superentityName
    while let name = current, let ancestor = old.entity(named: name) {
      names.insert(newName(of: name) ?? name)
      current = ancestor.superentityName
    }
    return names
  }

  /// The new entity that continues the old entity `name`, if one does.
  func newName(of name: String) -> String? {
    oldName.first { $0.value == name }?.key
  }

  /// Old entity codes of the rows that stop inheriting from `declaring` (`left`) and that start
  /// to (`joined`), because their entity moved within its hierarchy.
  func inheritanceChange(of declaring: String) -> (left: [Int64], joined: [Int64]) {
    var left: [Int64] = []
    var joined: [Int64] = []
    for entity in new.entities {
      guard let source = oldName[entity.name].flatMap(old.entity(named:)) else { continue }
      let before = oldAncestors(of: source)
      let after = newAncestors(of: entity)
      if before.contains(declaring) && !after.contains(declaring) { left.append(source.code) }
      if after.contains(declaring) && !before.contains(declaring) { joined.append(source.code) }
    }
    return (left.sorted(), joined.sorted())
  }

  /// An attribute column's source once moved entities' rows are cleared or filled.
  mutating func adjustingForMoves(
    _ source: ColumnSource, attribute: AttributeDescription, column: TableColumn
  ) throws -> ColumnSource? {
    let (left, joined) = inheritanceChange(of: attribute.entityName)
    guard !left.isEmpty || !joined.isEmpty else { return source }
    var cases: [String] = []
    var arguments: [PrimitiveValue] = []
    if !left.isEmpty {
      cases.append("WHEN \(entityIn) THEN \(sql.null(for: column))")
      arguments.append(.text(HistorySchema.jsonArray(left)))
    }
    if !joined.isEmpty {
      // As for an added attribute: the default, when it is the same for every object.
      let table = new.entity(named: attribute.entityName)?.rootName ?? column.entityName
      let rows = try count(
        "SELECT count(*) FROM \"\(oldName[table] ?? table)\" WHERE \(entityIn)",
        [.text(HistorySchema.jsonArray(joined))])
      if rows > 0 {
        guard let value = defaultValue(of: attribute) else {
          refuse(
            attribute.entityName, attribute.name,
            "is inherited by \(rows) rows of an entity moved under \(attribute.entityName), and it declares no "
              + "default that is the same for every object")
          return nil
        }
        if value != .null {
          cases.append("WHEN \(entityIn) THEN \(sql.parameter(for: column))")
          arguments += [.text(HistorySchema.jsonArray(joined)), value]
        }
      }
    }
    guard !cases.isEmpty else { return source }
    let (base, baseArguments) = expression(for: source, column: column)
    return .derived("CASE \(cases.joined(separator: " ")) ELSE \(base) END", arguments + baseArguments)
  }

  /// Refuses a moved entity whose links a move would break (see the top of this file).
  mutating func checkMoveLinks(_ entity: EntityDescription, from source: EntityDescription) {
    let left = oldAncestors(of: source).subtracting(newAncestors(of: entity))
    let joined = newAncestors(of: entity).subtracting(oldAncestors(of: source))
    for name in left {
      let oldAncestor = oldName[name] ?? name
      if !ownSchemaRelationships(of: oldAncestor).isEmpty {
        refuse(
          entity.name, nil,
          "moves out of \(oldAncestor), whose relationships its rows would leave with their links")
      }
      let pointing = old.schema.entities.flatMap { owner in
        (owner.relationships ?? []).filter { $0.destination == oldAncestor }.map { "\(owner.name).\($0.name)" }
      }
      if !pointing.isEmpty {
        refuse(
          entity.name, nil,
          "moves out of \(oldAncestor), which \(pointing.sorted().joined(separator: ", ")) may link its rows as")
      }
    }
    for name in joined {
      let required = new.entity(named: name)?.relationships.filter {
        $0.entityName == name && $0.kind == .toOne && $0.isRequired
      }
      if let first = required?.first {
        refuse(entity.name, first.name, "moves under \(name), whose required to-one its rows do not have")
      }
    }
  }
}
