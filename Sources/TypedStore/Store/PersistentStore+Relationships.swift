import Foundation

// Relationships in SQL: reading the keys a relationship holds, writing join-table links and
// positions, and applying delete rules to rows that no context has loaded. Every identifier
// comes from the validated model; every key list is bound as one JSON array.

/// One related row: the owner it belongs to, its key and its concrete entity.
struct RelatedRow {
  var owner: Int64
  var key: Int64
  var entity: EntityDescription
}

extension PersistentStore {
  // MARK: - Reading

  /// `relatedRows(of:owners:connection:)` on a context's reader, of either engine (SQLite's
  /// specialized).
  func relatedRows(of relationship: RelationshipDescription, owners: [Int64], reader: any DatabaseConnection)
    throws -> [RelatedRow]
  {
    if let sqlite = reader as? SQLiteConnection {
      return try relatedRows(of: relationship, owners: owners, connection: sqlite)
    }
    return try relatedRows(of: relationship, owners: owners, connection: reader)
  }

  /// The rows `relationship` relates to each of `owners`, grouped by owner in the
  /// relationship's order (key order for unordered ones): one query whatever the number of
  /// owners. For a to-one that holds its key, use the key itself instead.
  func relatedRows(
    of relationship: RelationshipDescription, owners: [Int64], connection: some DatabaseConnection
  ) throws
    -> [RelatedRow]
  {
    guard !owners.isEmpty, let destination = model.entity(named: relationship.destinationEntityName) else { return [] }
    let table = destination.tableName
    let withEntity = layout(of: destination).selectsEntity
    let sql: String
    switch relationship.storage {
    case .foreignKey:
      return []
    case .inverseForeignKey(let column, let orderColumn):
      let order = orderColumn.map { "\"\($0)\", " } ?? ""
      sql = """
        SELECT "\(column)", pk\(withEntity ? ", _entity" : "") FROM "\(table)" \
        WHERE "\(column)" IN (\(connection.dialect.jsonIntegerValues)) ORDER BY "\(column)", \(order)pk
        """
    case .joinTable(let join, let own, let other, let orderColumn, _):
      let order = orderColumn.map { "j.\($0), " } ?? ""
      sql =
        withEntity
        ? """
        SELECT j.\(own), j.\(other), d._entity FROM "\(join)" j JOIN "\(table)" d ON d.pk = j.\(other) \
        WHERE j.\(own) IN (\(connection.dialect.jsonIntegerValues)) ORDER BY j.\(own), \(order)j.\(other)
        """
        : """
        SELECT \(own), \(other) FROM "\(join)" j WHERE \(own) IN (\(connection.dialect.jsonIntegerValues)) \
        ORDER BY \(own), \(order)\(other)
        """
    }
    let tableLayout = layout(of: destination)
    return try connection.readTransaction {
      let statement = try connection.statement(sql)
      defer { statement.reset() }
      try statement.bind(HistorySchema.jsonArray(owners), at: 1)
      var rows: [RelatedRow] = []
      while try statement.step() {
        let entity = withEntity ? (tableLayout.entity(code: statement.int64(2)) ?? destination) : destination
        rows.append(RelatedRow(owner: statement.int64(0), key: statement.int64(1), entity: entity))
      }
      return rows
    }
  }

  // MARK: - Writing links

  /// Writes the links and positions of each changed relationship side: join-table rows for
  /// the owning side, then positions for ordered sides. Runs after the change set's inserts,
  /// so every key exists.
  ///
  /// A side whose `original` is known changes only by what the context changed: links the
  /// context did not read (another writer saved them meanwhile) stay, and links it read and
  /// another writer removed stay removed. Ordered positions follow the context's list, then
  /// the links it did not know, in their stored order.
  func writeLinks(_ writes: [RowWrites.LinkWrite], connection: some DatabaseConnection) throws {
    let ordered = writes.sorted { lhs, rhs in isOwner(lhs) && !isOwner(rhs) }
    for write in ordered {
      let relationship = model.entities[Int(write.entityIndex)].relationships[Int(write.relationshipIndex)]
      switch relationship.storage {
      case .foreignKey:
        continue
      case .inverseForeignKey(let column, let orderColumn):
        guard let orderColumn, let destination = model.entity(named: relationship.destinationEntityName) else {
          continue
        }
        // Only rows that name this owner now: another writer may have moved one of the
        // context's objects to another owner, whose order is not this list's to change.
        let stored = try integers(
          "SELECT pk FROM \"\(destination.tableName)\" WHERE \"\(column)\" = ? ORDER BY \"\(orderColumn)\", pk",
          [.integer(write.owner)], connection)
        try writePositions(
          "UPDATE \"\(destination.tableName)\" SET \"\(orderColumn)\" = ? WHERE pk = ?",
          of: listedFirst(write.targets, linked: stored), connection)
      case .joinTable(let table, let own, let other, let orderColumn, let owns):
        // An owner another process deleted meanwhile keeps no links.
        let ownerTable = model.entities[Int(write.entityIndex)]
        guard try !existingKeys(of: ownerTable, [write.owner], connection: connection).isEmpty else { continue }
        let order = orderColumn.map { " ORDER BY \($0), \(other)" } ?? ""
        var stored = try integers(
          "SELECT \(other) FROM \"\(table)\" WHERE \(own) = ?\(order)", [.integer(write.owner)], connection)
        if owns {
          let wanted = Set(write.targets)
          let read = write.original.map(Set.init)
          // Removed: what the context read and no longer holds (or, not knowing what it read,
          // every stored link it does not hold).
          let removed = Set(stored.filter { !wanted.contains($0) && (read?.contains($0) ?? true) })
          if !removed.isEmpty {
            let statement = try connection.statement(
              "DELETE FROM \"\(table)\" WHERE \(own) = ? AND \(other) IN (\(connection.dialect.jsonIntegerValues))")
            defer { statement.reset() }
            try statement.bind(write.owner, at: 1)
            try statement.bind(HistorySchema.jsonArray(removed.sorted()), at: 2)
            try statement.run()
            stored.removeAll { removed.contains($0) }
          }
          // Added: what the context holds and did not read; a link it read that another
          // writer removed is not written again.
          let present = Set(stored)
          let added = write.targets.filter { !present.contains($0) && !(read?.contains($0) ?? false) }
          let insert = try connection.statement(
            "INSERT INTO \"\(table)\" (\(own), \(other)) VALUES (?, ?) ON CONFLICT DO NOTHING")
          defer { insert.reset() }
          for target in added {
            insert.rewind()
            try insert.bind(write.owner, at: 1)
            try insert.bind(target, at: 2)
            try insert.run()
          }
          stored += added
        }
        guard let orderColumn else { continue }
        try writePositions(
          "UPDATE \"\(table)\" SET \(orderColumn) = ? WHERE \(other) = ? AND \(own) = ?",
          of: listedFirst(write.targets, linked: stored), owner: write.owner, connection)
      }
    }
  }

  /// The order an ordered side is stored in: the context's list, as far as the stored links
  /// hold it, then the links it did not know, in their stored order.
  private func listedFirst(_ targets: [Int64], linked stored: [Int64]) -> [Int64] {
    let linked = Set(stored)
    let listed = targets.filter { linked.contains($0) }
    let inList = Set(listed)
    return listed + stored.filter { !inList.contains($0) }
  }

  /// Gives each target its position in a list with `sql`, whose parameters are the position,
  /// the target's key and, when given, the owner's key.
  private func writePositions(
    _ sql: String, of targets: [Int64], owner: Int64? = nil, _ connection: some DatabaseConnection
  ) throws {
    let statement = try connection.statement(sql)
    defer { statement.reset() }
    for (position, target) in targets.enumerated() {
      statement.rewind()  // every parameter is bound again
      try statement.bind(Int64(position), at: 1)
      try statement.bind(target, at: 2)
      if let owner { try statement.bind(owner, at: 3) }
      try statement.run()
    }
  }

  private func isOwner(_ write: RowWrites.LinkWrite) -> Bool {
    let relationship = model.entities[Int(write.entityIndex)].relationships[Int(write.relationshipIndex)]
    if case .joinTable(_, _, _, _, true) = relationship.storage { return true }
    return false
  }

  // MARK: - Referential integrity

  /// Throws `StoreError.danglingReference` when a key column or join row the change set
  /// writes names a row that does not exist (another process deleted it after the context
  /// read it): one query per relationship, over the distinct keys written.
  func checkReferences(_ changes: RowWrites, insertedKeys: [Int64], connection: some DatabaseConnection) throws {
    // "Entity.relationship" → each key written → an owner that writes it
    var written: [String: (entity: EntityDescription, relationship: RelationshipDescription, keys: [Int64: Int64])] =
      [:]
    func note(_ entity: EntityDescription, _ relationship: RelationshipDescription, key: Int64, owner: Int64) {
      let id = "\(entity.name).\(relationship.name)"
      if written[id] == nil { written[id] = (entity, relationship, [:]) }
      if written[id]?.keys[key] == nil { written[id]?.keys[key] = owner }
    }
    func noteColumn(_ entity: EntityDescription, slot: Int, value: PrimitiveValue, owner: Int64) {
      guard case .integer(let key) = value, let name = entity.storedAttributes[slot].foreignKeyOf,
        let relationship = entity.relationship(named: name)
      else { return }
      note(entity, relationship, key: key, owner: owner)
    }
    for (insert, owner) in zip(changes.inserts, insertedKeys) {
      let entity = model.entities[Int(insert.entityIndex)]
      guard entity.storedAttributes.count != entity.attributes.count else { continue }  // no key column
      for (slot, value) in insert.values.enumerated() { noteColumn(entity, slot: slot, value: value, owner: owner) }
    }
    for update in changes.updates {
      let entity = model.entities[Int(update.entityIndex)]
      for (slot, value) in zip(update.slots, update.values) {
        noteColumn(entity, slot: Int(slot), value: value, owner: update.primaryKey)
      }
    }
    for write in changes.links {
      let entity = model.entities[Int(write.entityIndex)]
      let relationship = entity.relationships[Int(write.relationshipIndex)]
      for target in write.targets { note(entity, relationship, key: target, owner: write.owner) }
    }
    for (_, group) in written.sorted(by: { $0.key < $1.key }) {
      guard let destination = model.entity(named: group.relationship.destinationEntityName) else { continue }
      let missing = try integers(
        "SELECT k.value FROM (\(connection.dialect.jsonIntegerValues)) AS k WHERE NOT EXISTS (SELECT 1 FROM \""
          + destination.tableName + "\" d WHERE d.pk = k.value) ORDER BY k.value LIMIT 1",
        [.text(HistorySchema.jsonArray(group.keys.keys.sorted()))], connection)
      if let key = missing.first, let owner = group.keys[key] {
        throw StoreError.danglingReference(
          objectID: AnyManagedID(storeIdentifier: identifier, entityName: group.entity.name, key: .permanent(owner)),
          relationship: group.relationship.name,
          relatedID: AnyManagedID(storeIdentifier: identifier, entityName: destination.name, key: .permanent(key)))
      }
    }
  }

  // MARK: - Delete rules

  /// Applies the delete rules of rows deleted in this transaction to every row still related
  /// to them, loaded anywhere or not: `.cascade` deletes them (recording their tombstones, and
  /// applying their own rules in turn), `.nullify` clears their side (recording an update of
  /// that relationship), `.deny` throws `StoreError.deleteDenied` and so rolls the whole
  /// transaction back. `deleted` are the rows deleted already, by concrete entity.
  func propagateDeletes<C: DatabaseConnection>(
    _ deleted: [(entity: EntityDescription, primaryKeys: [Int64])], connection: C,
    history: HistoryRecorder<C>
  ) throws -> DeletePropagation {
    var outcome = DeletePropagation()
    var queue = deleted.filter { !$0.entity.relationships.isEmpty && !$0.primaryKeys.isEmpty }
    var denials: [DeleteDenial] = []
    /// Deletes related rows by the rules of a cascade: tombstones first, then the rows, which
    /// then apply their own rules.
    func cascade(
      _ groups: [(entity: EntityDescription, primaryKeys: [Int64])], from table: String, _ selection: String,
      _ arguments: [PrimitiveValue]
    ) throws {
      try willDelete(
        HistoryRows(table: table, whereClause: selection, arguments: arguments),
        groups: groups.map { ($0.entity, $0.primaryKeys) }, connection: connection, history: history)
      try run("DELETE FROM \"\(table)\"\(selection)", arguments, connection)
      outcome.deleted += groups.map { ($0.entity.name, $0.primaryKeys) }
      queue += groups.filter { !$0.entity.relationships.isEmpty }
    }
    /// Records that related rows no longer point at the deleted ones through `inverseName`.
    func nullified(_ groups: [(entity: EntityDescription, primaryKeys: [Int64])], _ inverseName: String) throws {
      for group in groups {
        try history.didUpdate(group.entity, primaryKeys: group.primaryKeys, changedAttributes: [inverseName])
      }
      outcome.updated += groups.map { ($0.entity.name, $0.primaryKeys) }
    }
    while let (entity, keys) = queue.popLast() {
      let keyList = PrimitiveValue.text(HistorySchema.jsonArray(keys))
      for relationship in entity.relationships {
        guard let destination = model.entity(named: relationship.destinationEntityName) else { continue }
        switch relationship.storage {
        case .foreignKey:
          continue  // the deleted rows held the key: no other row refers to them through it
        case .inverseForeignKey(let column, let orderColumn):
          let selection = " WHERE \"\(column)\" IN (\(connection.dialect.jsonIntegerValues))"
          // One read of the related rows: their keys, owners and concrete entities.
          let rows = try relatedRows(of: relationship, owners: keys, connection: connection)
          guard !rows.isEmpty else { continue }
          let groups = Self.grouped(rows)
          switch relationship.deleteRule {
          case .deny:
            denials += denialList(entity, relationship, destination, rows.map { ($0.owner, $0.key) })
          case .cascade:
            try cascade(groups, from: destination.tableName, selection, [keyList])
          case .nullify:
            try nullified(groups, relationship.inverseName)
            let order = orderColumn.map { ", \"\($0)\" = NULL" } ?? ""
            try run(
              "UPDATE \"\(destination.tableName)\" SET \"\(column)\" = NULL\(order), "
                + "_version = _version + 1\(selection)",
              [keyList], connection)
          }
        case .joinTable(let table, let own, let other, _, _):
          try propagate(
            deletedKeys: keys, of: entity, through: relationship, to: destination,
            joinTable: (table, own, other), denials: &denials, connection: connection, cascade: cascade,
            nullified: nullified)
        }
      }
    }
    if !denials.isEmpty { throw StoreError.deleteDenied(denials) }
    return outcome
  }

  /// Applies `relationship`'s delete rule through its join table to the rows related to the
  /// deleted `keys` of `entity`.
  private func propagate(
    deletedKeys keys: [Int64], of entity: EntityDescription, through relationship: RelationshipDescription,
    to destination: EntityDescription, joinTable: (table: String, own: String, other: String),
    denials: inout [DeleteDenial], connection: some DatabaseConnection,
    cascade: ([(entity: EntityDescription, primaryKeys: [Int64])], String, String, [PrimitiveValue]) throws -> Void,
    nullified: ([(entity: EntityDescription, primaryKeys: [Int64])], String) throws -> Void
  ) throws {
    let (table, own, other) = joinTable
    let keyList = PrimitiveValue.text(HistorySchema.jsonArray(keys))
    let isSelfInverse =
      relationship.inverseName == relationship.name
      && relationship.destinationEntityName == relationship.entityName
    let selection =
      " WHERE \(own) IN (\(connection.dialect.jsonIntegerValues))"
      + (isSelfInverse ? " OR \(other) IN (\(connection.dialect.jsonIntegerValues))" : "")
    let arguments = isSelfInverse ? [keyList, keyList] : [keyList]
    let pairs = try keyPairs("SELECT \(own), \(other) FROM \"\(table)\"\(selection)", arguments, connection)
    guard !pairs.isEmpty else { return }
    // Rows of the same table deleted in this round are not related rows to act on.
    let deletedKeys = destination.tableName == entity.tableName ? Set(keys) : []
    let related = Array(Set(pairs.map(\.1)).subtracting(deletedKeys)).sorted()
    if relationship.deleteRule == .deny {
      denials += denialList(entity, relationship, destination, pairs.filter { !deletedKeys.contains($0.1) })
      return
    }
    try run("DELETE FROM \"\(table)\"\(selection)", arguments, connection)
    guard !related.isEmpty else { return }
    let groups = try keysByEntity(destination, related, connection)
    if relationship.deleteRule == .cascade {
      try cascade(
        groups, destination.tableName, " WHERE pk IN (\(connection.dialect.jsonIntegerValues))",
        [.text(HistorySchema.jsonArray(related))])
    } else {
      try nullified(groups, relationship.inverseName)
    }
  }

  // MARK: - Helpers

  /// Those of `keys` whose rows exist in `entity`'s table, in the order given.
  func existingKeys(of entity: EntityDescription, _ keys: [Int64], connection: some DatabaseConnection) throws
    -> [Int64]
  {
    guard !keys.isEmpty else { return [] }
    let present = Set(
      try integers(
        "SELECT pk FROM \"\(entity.tableName)\" WHERE pk IN (\(connection.dialect.jsonIntegerValues))",
        [.text(HistorySchema.jsonArray(keys))], connection))
    return keys.filter(present.contains)
  }

  /// Related rows' keys by concrete entity, each group in key order.
  private static func grouped(_ rows: [RelatedRow]) -> [(entity: EntityDescription, primaryKeys: [Int64])] {
    var order: [ObjectIdentifier] = []
    var groups: [ObjectIdentifier: (entity: EntityDescription, primaryKeys: [Int64])] = [:]
    for row in rows {
      let id = ObjectIdentifier(row.entity)
      if groups[id] == nil {
        order.append(id)
        groups[id] = (row.entity, [])
      }
      groups[id]?.primaryKeys.append(row.key)
    }
    return order.compactMap { id in groups[id].map { ($0.entity, $0.primaryKeys.sorted()) } }
  }

  private func denialList(
    _ entity: EntityDescription, _ relationship: RelationshipDescription, _ destination: EntityDescription,
    _ pairs: [(Int64, Int64)]
  ) -> [DeleteDenial] {
    var byOwner: [Int64: [Int64]] = [:]
    for (owner, related) in pairs { byOwner[owner, default: []].append(related) }
    return byOwner.keys.sorted().map { owner in
      DeleteDenial(
        objectID: AnyManagedID(storeIdentifier: identifier, entityName: entity.name, key: .permanent(owner)),
        relationship: relationship.name,
        relatedIDs: (byOwner[owner] ?? []).sorted().map {
          AnyManagedID(storeIdentifier: identifier, entityName: destination.name, key: .permanent($0))
        })
    }
  }

  /// Those of `keys` whose rows exist in `entity`'s table, grouped by concrete entity, in key
  /// order.
  func keysByEntity(_ entity: EntityDescription, _ keys: [Int64], _ connection: some DatabaseConnection) throws
    -> [(entity: EntityDescription, primaryKeys: [Int64])]
  {
    let sorted = keys.sorted()
    let tableLayout = layout(of: entity)
    let pairs = try keyPairs(
      "SELECT pk, _entity FROM \"\(entity.tableName)\" WHERE pk IN (\(connection.dialect.jsonIntegerValues)) ORDER BY pk",
      [.text(HistorySchema.jsonArray(sorted))], connection)
    var groups: [Int64: [Int64]] = [:]
    for (key, code) in pairs { groups[code, default: []].append(key) }
    return groups.keys.sorted().compactMap { code in
      tableLayout.entity(code: code).map { ($0, groups[code] ?? []) }
    }
  }

  private func keyPairs(_ sql: String, _ arguments: [PrimitiveValue], _ connection: some DatabaseConnection) throws
    -> [(Int64, Int64)]
  {
    let statement = try connection.statement(sql)
    defer { statement.reset() }
    for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    var pairs: [(Int64, Int64)] = []
    while try statement.step() { pairs.append((statement.int64(0), statement.int64(1))) }
    return pairs
  }

  private func integers(_ sql: String, _ arguments: [PrimitiveValue], _ connection: some DatabaseConnection) throws
    -> [Int64]
  {
    let statement = try connection.statement(sql)
    defer { statement.reset() }
    for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    var values: [Int64] = []
    while try statement.step() { values.append(statement.int64(0)) }
    return values
  }

  private func run(_ sql: String, _ arguments: [PrimitiveValue], _ connection: some DatabaseConnection) throws {
    let statement = try connection.statement(sql)
    defer { statement.reset() }
    for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    try statement.run()
  }
}
