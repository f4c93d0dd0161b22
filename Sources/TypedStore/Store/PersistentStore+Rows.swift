import Foundation

// Reading and writing entity rows. Reads run on a context's own connection, each in a read
// transaction (or the caller's), whose first step checks that no other process migrated the
// store (`ModelStamp`); writes run in the writer's transaction (see `StoreWriter`).

/// Updates of one entity that change the same attributes share one statement.
private struct UpdateShape: Hashable {
  var entityIndex: Int32
  var slots: [Int32]
  var relationshipNames: [String]
}

/// The current row of a statement that selects `TableLayout.selectSQL`'s columns.
struct Row {
  /// The statement, as SQLite's own type where the engine is SQLite, so that its rows are read
  /// with the specialized code of `RowReader` (one switch a row, not a witness call a column).
  enum Source {
    case sqlite(Statement)
    case engine(any DatabaseStatement)

    init<S: DatabaseStatement>(_ statement: S) {
      if let sqlite = statement as? Statement { self = .sqlite(sqlite) } else { self = .engine(statement) }
    }

    @inline(__always)
    func int64(_ column: Int32) -> Int64 {
      switch self {
      case .sqlite(let statement): statement.int64(column)
      case .engine(let statement): statement.int64(column)
      }
    }

    func step() throws -> Bool {
      switch self {
      case .sqlite(let statement): try statement.step()
      case .engine(let statement): try statement.step()
      }
    }
  }

  let source: Source
  let layout: TableLayout

  var primaryKey: Int64 { source.int64(0) }
  var version: Int64 { source.int64(1) }
  var entityName: String {
    layout.selectsEntity ? (layout.entity(code: source.int64(2))?.name ?? "") : layout.root.name
  }

  /// Whether the row's entity is `entity`.
  func isEntity(_ entity: EntityDescription) -> Bool {
    layout.selectsEntity ? source.int64(2) == entity.code : entity === layout.root
  }

  /// Decodes the row's attribute values into `object`, whose entity is the row's; with
  /// `assigningSlots`, also gives each field its slot (a new object).
  func decode(into object: ManagedObject, entity: EntityDescription, assigningSlots: Bool = false) throws {
    try decode(into: object, reader: layout.reader(for: entity), assigningSlots: assigningSlots)
  }

  /// `decode(into:entity:assigningSlots:)` with the reader of the object's entity, for loops
  /// that look it up once.
  func decode(into object: ManagedObject, reader: RowReader, assigningSlots: Bool) throws {
    switch source {
    case .sqlite(let statement): try reader.read(statement, into: object, assigningSlots: assigningSlots)
    case .engine(let statement): try reader.read(values: statement, into: object, assigningSlots: assigningSlots)
    }
    object.rowVersion = version
    if assigningSlots { return }  // a new object: no committed values to clear, not a fault
    if !object.committedValues.isEmpty { object.committedValues.removeAll() }
    if object.isFault { object.isFault = false }
  }
}

/// The rows of a running SELECT (see `PersistentStore.withRows`).
struct RowCursor {
  /// The current row: one view of the statement, valid after `next()` returned true (made
  /// once, so that stepping through the rows retains nothing per row).
  let row: Row

  /// Steps to the next row; false when there are no more.
  mutating func next() throws -> Bool {
    try row.source.step()
  }
}

// Each reading function takes a connection of either engine (a context's reader) and runs
// its generic body with SQLite's connection as its concrete type where it is one, so that
// SQLite's reads are specialized as before the seam; another engine's run the same code
// through the protocols.
extension PersistentStore {
  // MARK: - Reading

  /// Runs a SELECT over `entity`'s table and hands `body` a cursor over its rows, for loops
  /// that want the rows in their own body rather than a closure called per row (a generic
  /// caller then resolves its types once, not once a row).
  func withRows<Result>(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue],
    connection: any DatabaseConnection, _ body: (inout RowCursor) throws -> Result
  ) throws -> Result {
    if let sqlite = connection as? SQLiteConnection {
      return try withRows(of: entity, clauses: clauses, arguments: arguments, on: sqlite, body)
    }
    return try withRows(of: entity, clauses: clauses, arguments: arguments, on: connection, body)
  }

  private func withRows<C: DatabaseConnection, Result>(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue],
    on connection: C, _ body: (inout RowCursor) throws -> Result
  ) throws -> Result {
    let layout = layout(of: entity)
    return try connection.readTransaction {
      let statement = try Self.bound(layout.selectSQL + clauses, arguments, connection)
      defer { statement.reset() }
      var cursor = RowCursor(row: Row(source: Row.Source(statement), layout: layout))
      return try body(&cursor)
    }
  }

  /// The statement of `sql` with `arguments` bound to its parameters.
  private static func bound<C: DatabaseConnection>(_ sql: String, _ arguments: [PrimitiveValue], _ connection: C)
    throws -> C.PreparedStatement
  {
    let statement = try connection.statement(sql)
    do {
      for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    } catch {
      statement.reset()
      throw error
    }
    return statement
  }

  /// The primary keys a select returns, in its order, without reading the rows' values.
  func selectKeys(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue], connection: any DatabaseConnection
  ) throws -> [Int64] {
    let sql = "SELECT pk FROM \"\(entity.tableName)\"" + clauses
    if let sqlite = connection as? SQLiteConnection { return try selectKeys(sql, arguments, on: sqlite) }
    return try selectKeys(sql, arguments, on: connection)
  }

  private func selectKeys<C: DatabaseConnection>(_ sql: String, _ arguments: [PrimitiveValue], on connection: C)
    throws -> [Int64]
  {
    try connection.readTransaction {
      let statement = try Self.bound(sql, arguments, connection)
      defer { statement.reset() }
      var keys: [Int64] = []
      while try statement.step() { keys.append(statement.int64(0)) }
      return keys
    }
  }

  /// The primary keys and concrete entities a select returns, in its order, without reading
  /// the rows' values (the entity is read from `_entity` only where the table holds several).
  func selectKeysAndEntities(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue], connection: any DatabaseConnection
  ) throws -> [(key: Int64, entity: EntityDescription)] {
    let table = layout(of: entity)
    guard table.selectsEntity else {
      return try selectKeys(of: entity, clauses: clauses, arguments: arguments, connection: connection).map {
        ($0, entity)
      }
    }
    let rows = try selectRows(
      "SELECT pk, _entity FROM \"\(entity.tableName)\"" + clauses, arguments: arguments, connection: connection)
    return rows.map { row in
      guard case .integer(let key) = row[0], case .integer(let code) = row[1] else { return (0, entity) }
      return (key, table.entity(code: code) ?? entity)
    }
  }

  /// Runs a query built by the query layer from the validated model (an aggregate, with its
  /// group keys); its values are bound. Each row's columns, in order.
  func selectRows(_ sql: String, arguments: [PrimitiveValue], connection: any DatabaseConnection) throws
    -> [[PrimitiveValue]]
  {
    if let sqlite = connection as? SQLiteConnection { return try selectRows(sql, arguments, on: sqlite) }
    return try selectRows(sql, arguments, on: connection)
  }

  private func selectRows<C: DatabaseConnection>(_ sql: String, _ arguments: [PrimitiveValue], on connection: C)
    throws -> [[PrimitiveValue]]
  {
    try connection.readTransaction {
      let statement = try Self.bound(sql, arguments, connection)
      defer { statement.reset() }
      var rows: [[PrimitiveValue]] = []
      while try statement.step() {
        let count = statement.columnCount
        rows.append(try (0..<count).map { try statement.value($0) })
      }
      return rows
    }
  }

  /// Runs a query that returns one integer (a count).
  func selectCount(
    of entity: EntityDescription, clauses: String, arguments: [PrimitiveValue], connection: any DatabaseConnection
  ) throws -> Int {
    let sql = "SELECT count(*) FROM \"\(entity.tableName)\"" + clauses
    let rows = try selectRows(sql, arguments: arguments, connection: connection)
    guard let first = rows.first?.first, case .integer(let count) = first else { return 0 }
    return Int(count)
  }

  /// `WHERE` clause text restricting a select to `entity` (and its subentities, when asked),
  /// with its arguments; empty for a root entity whose subentities are included.
  func entityRestriction(for entity: EntityDescription, includesSubentities: Bool) -> (String, [PrimitiveValue]) {
    let names = includesSubentities ? entity.selfAndDescendantNames : [entity.name]
    if entity.isRoot && includesSubentities { return ("", []) }
    let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
    return ("_entity IN (\(marks))", names.compactMap { model.entity(named: $0).map { .integer($0.code) } })
  }

  /// Loads the row with `primaryKey` into `object`. Returns false when there is no such row
  /// of `entity` or one of its subentities.
  func loadRow(
    primaryKey: Int64, into object: ManagedObject, entity: EntityDescription, connection: any DatabaseConnection
  ) throws -> Bool {
    try withRows(of: entity, clauses: " WHERE pk = ?", arguments: [.integer(primaryKey)], connection: connection) {
      rows in
      guard try rows.next(), rows.row.isEntity(entity) else { return false }
      try rows.row.decode(into: object, entity: entity)
      return true
    }
  }

  /// The concrete entity of the row with `primaryKey` in `entity`'s table, if the row exists
  /// and is `entity` or one of its subentities.
  func entityOfRow(primaryKey: Int64, in entity: EntityDescription, connection: any DatabaseConnection) throws
    -> EntityDescription?
  {
    let rows = try selectRows(
      "SELECT _entity FROM \"\(entity.tableName)\" WHERE pk = ?", arguments: [.integer(primaryKey)],
      connection: connection)
    guard let first = rows.first?.first, case .integer(let code) = first,
      let found = layout(of: entity).entity(code: code), entity.selfAndDescendantNames.contains(found.name)
    else { return nil }
    return found
  }

  // MARK: - Writing

  /// Writes a change set in one transaction: deletes, then updates, then inserts (so a unique
  /// value freed by a delete can be reused by an insert of the same save). `transaction` is a
  /// migration stage's open transaction (see `StoreWriter`).
  func commit(_ changes: RowWrites, info: TransactionInfo, in transaction: (any DatabaseConnection)? = nil) throws
    -> AppliedChanges
  {
    for insert in changes.inserts {
      try checkStorable(insert.values, entityIndex: insert.entityIndex, slots: nil)
    }
    for update in changes.updates {
      try checkStorable(update.values, entityIndex: update.entityIndex, slots: update.slots)
    }
    do {
      return try perform(ChangeSetWork(store: self, changes: changes, info: info), info: info, in: transaction)
    } catch let error as SQLiteError where error.isUniqueConstraint || error.isPrimaryKeyConstraint {
      // SQLite says "UNIQUE constraint failed: Table.column".
      let table = error.message.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) }
      throw StoreError.uniqueConstraintViolation(
        entity: table.flatMap { $0.split(separator: ".").first.map(String.init) } ?? "", message: error.message)
    } catch let error as SQLiteError {
      throw StoreError.sqlite(error)
    }
  }

  /// Applies a change set, and the consumer checkpoint that goes with it, inside a write
  /// transaction the caller began and holds the store's write lock in, on either engine:
  /// `commit(_:info:in:)` runs it in the store writer's transaction.
  package func write<C: DatabaseConnection>(
    _ changes: RowWrites, info: TransactionInfo, connection: C, history: HistoryRecorder<C>
  ) throws -> AppliedChanges {
    let applied = try applyResolving(changes, connection: connection, history: history)
    if let checkpoint = info.checkpoint {
      // A consumer's effects and its progress past the transaction they are for: one
      // commit (`HistoryMerger.addTransactionalHook(_:)`).
      try HistoryConsumers.advance(
        name: checkpoint.name, from: checkpoint.first, to: checkpoint.number, lease: checkpoint.lease,
        connection: connection)
    }
    return applied
  }

  /// Applies a change set inside the write transaction: the fast path, where every update
  /// and delete checks its row version as it writes; on a conflict or a unique index's
  /// refusal, the writes are undone and the resolved change set is applied instead.
  private func applyResolving<C: DatabaseConnection>(_ changes: RowWrites, connection: C, history: HistoryRecorder<C>)
    throws
    -> AppliedChanges
  {
    do {
      // The fast path: every update and delete checks its row version as it writes.
      return try self.apply(changes, connection: connection, history: history)
    } catch is VersionMismatch {
      // Another writer changed a row: undo, resolve every conflict by the policy (under the
      // write lock), and write the resolved change set.
      try connection.undoWrites()
      history.reset()
      let (resolved, outcomes) = try self.resolveConflicts(changes, connection: connection)
      var applied = try self.apply(resolved, connection: connection, history: history)
      applied.insertedKeys = Array(applied.insertedKeys.prefix(changes.inserts.count))
      applied.resolved = outcomes
      return applied
    } catch  where self.model.hasUniqueness && connection.isUniqueViolation(error) {
      // A unique index refused a row: undo, find every conflict, and merge or report them.
      try connection.undoWrites()
      history.reset()
      let resolved = try self.resolveUniqueness(changes, connection: connection)
      return try self.apply(resolved, connection: connection, history: history)
    }
  }

  /// Throws `StoreError.invalidValue` for a value SQLite would not store as given: NaN, which
  /// SQLite turns into NULL (so a non-optional attribute fails with a bare constraint error,
  /// and an optional one reads back as nil); on PostgreSQL, text with a NUL character, which
  /// its text cannot hold. `values` are an entity's attributes in order, or those of `slots`.
  func checkStorable(_ values: [PrimitiveValue], entityIndex: Int32, slots: [Int32]?) throws {
    if dialect == .postgreSQL {
      for (index, value) in values.enumerated() {
        guard case .text(let text) = value, text.utf8.contains(0) else { continue }
        let entity = model.entities[Int(entityIndex)]
        let slot = slots.map { Int($0[index]) } ?? index
        throw StoreError.invalidValue(
          entity: entity.name, attribute: entity.storedAttributes[slot].name,
          reason: "PostgreSQL text cannot hold a NUL character")
      }
    }
    for (index, value) in values.enumerated() {
      guard case .real(let real) = value, real.isNaN else { continue }
      let entity = model.entities[Int(entityIndex)]
      let slot = slots.map { Int($0[index]) } ?? index
      throw StoreError.invalidValue(
        entity: entity.name, attribute: entity.storedAttributes[slot].name,
        reason: "NaN is not a number SQLite can store (it would be read back as nil)")
    }
  }

  /// Reserves `count` primary keys for `root`'s table, for objects given permanent IDs
  /// before they are saved.
  func reservePrimaryKeys(count: Int, root: EntityDescription, in transaction: (any DatabaseConnection)? = nil) throws
    -> ClosedRange<Int64>
  {
    try perform(KeyReservation(store: self, count: count, root: root), info: TransactionInfo(), in: transaction)
  }

  /// `reservePrimaryKeys(count:root:in:)`'s work in the write transaction.
  private struct KeyReservation: StoreWork {
    let store: PersistentStore
    let count: Int
    let root: EntityDescription

    func apply<C: DatabaseConnection>(connection: C, history: HistoryRecorder<C>) throws -> ClosedRange<Int64> {
      let first =
        try history.memo?.nextKey(root: root.rootIndex)
        ?? PersistentStore.nextPrimaryKey(of: store.layout(of: root), connection: connection)
      let keys = first...(first + Int64(count) - 1)
      // Not inserted yet: the floor keeps them from being given again meanwhile.
      try PersistentStore.raiseKeyFloor(of: root.tableName, to: keys.upperBound, connection: connection)
      history.memo?.setNextKey(keys.upperBound + 1, root: root.rootIndex)
      return keys
    }
  }

  /// The next primary key of `table`: one above both its largest key and its key floor in
  /// `_primary_key` (docs/file-format.md, "Reserved tables").
  ///
  /// An insert writes only its row: the floor is raised only by what would otherwise let a
  /// key be given twice, a delete of the table's largest keys (`willDelete`) and keys handed
  /// out before their rows exist (`reservePrimaryKeys`). Raising it with every insert, as
  /// Core Data's `Z_MAX` does, wrote one more page into the WAL with every save.
  fileprivate static func nextPrimaryKey(of layout: TableLayout, connection: some DatabaseConnection) throws -> Int64 {
    let statement = try connection.statement(prepared: layout.nextKeySQL)
    defer { statement.reset() }
    try statement.bind(layout.root.name, at: 1)
    guard try statement.step(), !statement.isNull(1) else {
      throw MissingCatalogRow("no primary key sequence for table \(layout.root.name)")
    }
    return max(statement.int64(0), statement.int64(1)) + 1
  }

  /// Raises `table`'s key floor to `key` when it is lower and, with `onlyAboveRows`, when
  /// no row of the table has a larger key (one that does keeps `key` from coming back);
  /// writes nothing otherwise.
  private static func raiseKeyFloor(
    of table: String, to key: Int64, onlyAboveRows: Bool = false, connection: some DatabaseConnection
  ) throws {
    let statement = try connection.statement(
      "UPDATE _primary_key SET key_floor = ?1 WHERE entity = ?2 AND key_floor < ?1"
        + (onlyAboveRows ? " AND ?1 >= coalesce((SELECT max(pk) FROM \"\(table)\"), 0)" : ""))
    defer { statement.reset() }
    try statement.bind(key, at: 1)
    try statement.bind(table, at: 2)
    try statement.run()
  }

  /// Records that the rows of `groups`, selected by `rows`, are about to be deleted: their
  /// history (tombstones first) and, when one of them holds its table's largest key, the key
  /// floor, so that no key is given again. Every delete of object rows goes through here.
  func willDelete<C: DatabaseConnection>(
    _ rows: HistoryRows, groups: [(entity: EntityDescription, primaryKeys: [Int64])], connection: C,
    history: HistoryRecorder<C>
  ) throws {
    var largest: [String: Int64] = [:]
    for group in groups {
      guard let key = group.primaryKeys.max() else { continue }
      largest[group.entity.tableName] = max(largest[group.entity.tableName] ?? key, key)
    }
    for (table, key) in largest.sorted(by: { $0.key < $1.key }) {
      try Self.raiseKeyFloor(of: table, to: key, onlyAboveRows: true, connection: connection)
    }
    try history.willDelete(rows, groups: groups)
  }

  private func apply<C: DatabaseConnection>(_ changes: RowWrites, connection: C, history: HistoryRecorder<C>)
    throws
    -> AppliedChanges
  {
    try applyDeletes(changes, connection: connection, history: history)
    try applyUpdates(changes, connection: connection, history: history)
    var (applied, insertedByEntity) = try applyInserts(changes, connection: connection, history: history)
    for (entityIndex, keys) in insertedByEntity.sorted(by: { $0.key < $1.key }) {
      try history.didInsert(model.entities[Int(entityIndex)], primaryKeys: keys)
    }
    if !changes.links.isEmpty { try writeLinks(changes.links, connection: connection) }
    if model.hasRelationships {
      try checkReferences(changes, insertedKeys: applied.insertedKeys, connection: connection)
    }
    // Delete rules reach the rows no context loaded, once every row of the change set is
    // written (so an object moved away in this save is not cascaded).
    if model.hasRelationships && !changes.deletes.isEmpty {
      let deleted = grouped(changes.deletes, by: { $0.entityIndex }).map {
        (entity: model.entities[Int($0.key)], primaryKeys: $0.rows.map(\.primaryKey))
      }
      applied.propagation = try propagateDeletes(deleted, connection: connection, history: history)
    }
    return applied
  }

  /// Deletes the change set's rows, each at the version the context read, tombstones first.
  private func applyDeletes<C: DatabaseConnection>(_ changes: RowWrites, connection: C, history: HistoryRecorder<C>)
    throws
  {
    for group in grouped(changes.deletes, by: { $0.entityIndex }) {
      let entity = model.entities[Int(group.key)]
      let keys = group.rows.map(\.primaryKey)
      try willDelete(
        HistoryRows(
          table: entity.tableName,
          whereClause: " WHERE _entity = ? AND pk IN (" + connection.dialect.jsonIntegerValues + ")",
          arguments: [.integer(entity.code), .text(HistorySchema.jsonArray(keys))]),
        groups: [(entity, keys)], connection: connection, history: history)
      let statement = try connection.statement(prepared: layout(of: entity).deleteSQL)
      for delete in group.rows {
        statement.rewind()  // both parameters are bound again
        try statement.bind(delete.primaryKey, at: 1)
        try statement.bind(delete.version, at: 2)
        try statement.run()
        guard connection.changes == 1 else { throw VersionMismatch() }
      }
    }
  }

  /// Updates the change set's rows, grouped by the attributes they write, each at the version
  /// the context read.
  private func applyUpdates<C: DatabaseConnection>(_ changes: RowWrites, connection: C, history: HistoryRecorder<C>)
    throws
  {
    for group in grouped(
      changes.updates,
      by: { UpdateShape(entityIndex: $0.entityIndex, slots: $0.slots, relationshipNames: $0.relationshipNames) })
    {
      let entity = model.entities[Int(group.key.entityIndex)]
      let changedNames = group.key.slots.map { entity.storedAttributes[Int($0)].name } + group.key.relationshipNames
      guard !group.key.slots.isEmpty else {
        // Only relationships whose links other rows hold: history, no row to write. A row
        // another process deleted meanwhile has nothing left to record.
        let keys = try existingKeys(of: entity, group.rows.map(\.primaryKey), connection: connection)
        try history.didUpdate(entity, primaryKeys: keys, changedAttributes: changedNames)
        continue
      }
      let statement = try connection.statement(layout(of: entity).updateSQL(entity: entity, slots: group.key.slots))
      for update in group.rows {
        statement.rewind()  // every parameter is bound again
        for (index, value) in update.values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
        let next = Int32(update.values.count + 1)
        try statement.bind(update.primaryKey, at: next)
        try statement.bind(update.version, at: next + 1)
        try statement.run()
        guard connection.changes == 1 else { throw VersionMismatch() }
      }
      try history.didUpdate(entity, primaryKeys: group.rows.map(\.primaryKey), changedAttributes: changedNames)
    }
  }

  /// Inserts the change set's rows, with keys reserved per table for those that have none;
  /// returns the keys, and the inserted ones by entity for history.
  private func applyInserts<C: DatabaseConnection>(_ changes: RowWrites, connection: C, history: HistoryRecorder<C>)
    throws
    -> (AppliedChanges, [Int32: [Int64]])
  {
    // The first new key per table, for the inserts that have none yet (deletes of this save,
    // written before, have raised the key floor already).
    // By the root's index; 0 until looked up.
    var nextKey = [Int64](repeating: 0, count: model.entities.count)
    for insert in changes.inserts where insert.primaryKey == nil {
      let entity = model.entities[Int(insert.entityIndex)]
      if nextKey[Int(entity.rootIndex)] == 0 {
        nextKey[Int(entity.rootIndex)] =
          try history.memo?.nextKey(root: entity.rootIndex)
          ?? Self.nextPrimaryKey(of: layout(of: entity), connection: connection)
      }
    }
    var applied = AppliedChanges()
    applied.insertedKeys.reserveCapacity(changes.inserts.count)
    var insertedByEntity: [Int32: [Int64]] = [:]
    // Runs of inserts of one entity share their statement: looking it up per row would hash
    // its SQL text for every row.
    var runStart = 0
    while runStart < changes.inserts.count {
      let entityIndex = changes.inserts[runStart].entityIndex
      var runEnd = runStart
      while runEnd < changes.inserts.count && changes.inserts[runEnd].entityIndex == entityIndex { runEnd += 1 }
      let entity = model.entities[Int(entityIndex)]
      guard let sql = layout(of: entity).insertSQL[Int(entity.index)] else { break }
      let statement = try connection.statement(prepared: sql)
      let knowsNext = nextKey[Int(entity.rootIndex)] > 0  // some insert of the run needs a key
      var next = max(nextKey[Int(entity.rootIndex)], 1)
      var keys: [Int64] = []
      keys.reserveCapacity(runEnd - runStart)
      for (offset, insert) in changes.inserts[runStart..<runEnd].enumerated() {
        if let stored = insert.mergedInto {
          // Merged into a stored row (constraint merging): written over, or left as it is.
          if insert.writesOver { try overwrite(stored, of: entity, with: insert.values, connection, history) }
          keys.append(stored)
          applied.mergedInserts.insert(runStart + offset)
          continue
        }
        let primaryKey: Int64
        if let given = insert.primaryKey {
          primaryKey = given
        } else {
          primaryKey = next
          next += 1
        }
        statement.rewind()  // every parameter is bound again
        try statement.bind(primaryKey, at: 1)
        try statement.bind(entity.code, at: 2)
        for (index, value) in insert.values.enumerated() { try statement.bind(value, at: Int32(index + 3)) }
        try statement.run()
        keys.append(primaryKey)
      }
      if knowsNext {
        nextKey[Int(entity.rootIndex)] = next
        history.memo?.setNextKey(next, root: entity.rootIndex)
      }
      applied.insertedKeys += keys
      insertedByEntity[entityIndex, default: []] += zip(changes.inserts[runStart..<runEnd], keys).filter {
        $0.0.mergedInto == nil
      }.map(\.1)
      runStart = runEnd
    }
    return (applied, insertedByEntity)
  }

  /// Writes every stored value of an insert over a stored row (constraint merging with the
  /// object's values winning), recorded as an update of every attribute.
  private func overwrite<C: DatabaseConnection>(
    _ primaryKey: Int64, of entity: EntityDescription, with values: [PrimitiveValue], _ connection: C,
    _ history: HistoryRecorder<C>
  ) throws {
    let slots = entity.storedAttributes.indices.map(Int32.init)
    let statement = try connection.statement(
      layout(of: entity).updateSQL(entity: entity, slots: slots).replacingOccurrences(
        of: " AND _version = ?", with: ""))
    defer { statement.reset() }
    for (index, value) in values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
    try statement.bind(primaryKey, at: Int32(values.count + 1))
    try statement.run()
    try history.didUpdate(entity, primaryKeys: [primaryKey], changedAttributes: entity.storedAttributes.map(\.name))
  }

  /// Rows with the same key, keys in order of first appearance.
  private func grouped<Row, Key: Hashable>(_ rows: [Row], by key: (Row) -> Key) -> [(key: Key, rows: [Row])] {
    // Most saves have one group: then the rows are the group, with no copy of each row (a
    // copy of an update retains its arrays, and a large save's copies cost fresh pages).
    guard let first = rows.first else { return [] }
    let firstKey = key(first)
    if rows.allSatisfy({ key($0) == firstKey }) { return [(firstKey, rows)] }
    var order: [Key] = []
    var groups: [Key: [Row]] = [:]
    // Rows of one save usually share their key: collect runs before touching the dictionary.
    var runKey: Key?
    var run: [Row] = []
    func flush() {
      guard let runKey else { return }
      if groups[runKey] == nil { order.append(runKey) }
      groups[runKey, default: []] += run
      run.removeAll(keepingCapacity: true)
    }
    for row in rows {
      let rowKey = key(row)
      if rowKey != runKey {
        flush()
        runKey = rowKey
      }
      run.append(row)
    }
    flush()
    return order.map { ($0, groups[$0] ?? []) }
  }
}
