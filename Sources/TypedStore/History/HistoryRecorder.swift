import Foundation

/// Records one write transaction's history, inside that transaction (step 3 of the write
/// path, see `StoreWriter`).
///
/// Change rows are written set-based: one change row per entity and kind holds the keys of all
/// its rows, whatever their number (see `HistorySchema`). A delete that keeps a tombstone is
/// recorded with one `INSERT ... SELECT` that reads each row's preserved values by SQL before
/// the rows go, using the same selection as the statement that deletes them. The transaction's
/// number is taken with its first change, and its row is inserted when the transaction
/// finishes, with the range of its change rows: a write that changes nothing leaves no
/// history (and no gap in the numbers), and a save writes its transaction row once, not
/// inserts and then updates it.
final class HistoryRecorder {
  private let connection: SQLiteConnection
  private let info: TransactionInfo
  private let isEnabled: Bool
  private let timestamp = Date()
  private var number: Int64?
  /// The rowids of the transaction's first and last change rows.
  private var changeRange: ClosedRange<Int64>?
  private var changes: [RecordedChanges.Group] = []
  /// What the writer knows without asking the database; nil inside a migration, and after
  /// `reset()`: then everything is asked.
  var memo: WriterMemo?

  init(connection: SQLiteConnection, info: TransactionInfo, isEnabled: Bool) {
    self.connection = connection
    self.info = info
    self.isEnabled = isEnabled
  }

  /// Records that the selected rows are about to be deleted, keeping their tombstones; call
  /// before deleting them. `groups` are the same rows' keys by entity, for the notification.
  func willDelete(_ rows: HistoryRows, groups: [(entity: EntityDescription, primaryKeys: [Int64])]) throws {
    let groups = groups.filter { !$0.primaryKeys.isEmpty }
    guard !groups.isEmpty else { return }
    for group in groups {
      changes.append(
        .init(kind: .delete, entityName: group.entity.name, primaryKeys: group.primaryKeys, changedAttributes: []))
    }
    guard isEnabled else { return }
    let tombstone = Self.tombstoneSQL(for: groups.map(\.entity))
    if tombstone == "NULL" {
      // Nothing to read from the rows: one change row per entity holds their keys.
      for group in groups { try insertChanges(.delete, group.entity, primaryKeys: group.primaryKeys, changed: nil) }
    } else {
      try insertTombstones(rows, entityName: Self.entityNameSQL(for: groups.map(\.entity)), tombstone: tombstone)
    }
  }

  /// Records that rows are about to get new values for `changedAttributes`, by entity.
  func willUpdate(changedAttributes: [String], groups: [(entity: EntityDescription, primaryKeys: [Int64])]) throws {
    for group in groups {
      try record(.update, group.entity, primaryKeys: group.primaryKeys, changedAttributes: changedAttributes)
    }
  }

  /// Records inserted rows of `entity`.
  func didInsert(_ entity: EntityDescription, primaryKeys: [Int64]) throws {
    try record(.insert, entity, primaryKeys: primaryKeys, changedAttributes: [])
  }

  /// Records updated rows of `entity` whose `changedAttributes` changed.
  func didUpdate(_ entity: EntityDescription, primaryKeys: [Int64], changedAttributes: [String]) throws {
    try record(.update, entity, primaryKeys: primaryKeys, changedAttributes: changedAttributes)
  }

  /// One `INSERT ... SELECT` of a delete change row, with its tombstone, per selected row, in
  /// primary key order.
  private func insertTombstones(_ rows: HistoryRows, entityName: String, tombstone: String) throws {
    let statement = try connection.statement(
      """
      INSERT INTO _history_change (transaction_number, kind, entity, pk, tombstone)
      SELECT ?, \(HistoryChange.Kind.delete.rawValue), \(entityName), pk, \(tombstone)
      FROM "\(rows.table)"\(rows.whereClause) ORDER BY pk
      """)
    statement.bind(try transactionNumber(), at: 1)
    for (index, argument) in rows.arguments.enumerated() { statement.bind(argument, at: Int32(index + 2)) }
    try statement.run()
    noteInsertedChanges()
  }

  /// SQL for the tombstone of a row of any of `entities`: a JSON object of its attributes
  /// marked `preservedOnDeletion`, chosen by the row's `_entity`.
  private static func tombstoneSQL(for entities: [EntityDescription]) -> String {
    let cases = entities.compactMap { entity -> String? in
      let preserved = entity.attributes.filter(\.isPreservedOnDeletion)
      guard !preserved.isEmpty else { return nil }
      let object =
        "json_object("
        + preserved.map { "'\($0.name)', \(taggedValue(column: $0.columnName))" }.joined(separator: ", ") + ")"
      return "WHEN \(entity.code) THEN \(object)"
    }
    return cases.isEmpty ? "NULL" : "CASE _entity \(cases.joined(separator: " ")) END"
  }

  /// SQL for the entity name of a row of any of `entities`, from its `_entity` code. Entity
  /// names are validated identifiers: safe as SQL string literals.
  private static func entityNameSQL(for entities: [EntityDescription]) -> String {
    "CASE _entity " + entities.map { "WHEN \($0.code) THEN '\($0.name)'" }.joined(separator: " ") + " END"
  }

  /// Forgets what was recorded, after the caller undid the rows and their history
  /// (`SQLiteConnection.undoWrites()`).
  func reset() {
    memo = nil  // the transaction began again: others may have committed in between
    number = nil
    changeRange = nil
    changes = []
  }

  /// Completes the transaction's history row and returns what the transaction changed, once
  /// all its rows are applied; nil when it changed nothing.
  func finish(storeIdentifier: UUID) throws -> RecordedChanges? {
    guard !changes.isEmpty else { return nil }
    if let number {
      let statement = try connection.statement(prepared: Self.insertTransactionSQL)
      statement.bind(number, at: 1)
      statement.bind(timestamp.timeIntervalSinceReferenceDate, at: 2)
      if let author = info.author { statement.bind(author, at: 3) } else { statement.bindNull(3) }
      if let name = info.contextName { statement.bind(name, at: 4) } else { statement.bindNull(4) }
      statement.bind(Self.processIdentifier, at: 5)
      statement.bind(changeRange?.lowerBound ?? 0, at: 6)  // 0, 0: no change row (see `HistorySchema`)
      statement.bind(changeRange?.upperBound ?? 0, at: 7)
      try statement.run()
    }
    return RecordedChanges(
      storeIdentifier: storeIdentifier, number: number, timestamp: timestamp, author: info.author,
      contextName: info.contextName, groups: changes, origin: info.origin)
  }

  // MARK: - Helpers

  private func record(
    _ kind: HistoryChange.Kind, _ entity: EntityDescription, primaryKeys: [Int64], changedAttributes: [String]
  ) throws {
    guard !primaryKeys.isEmpty else { return }
    changes.append(
      .init(kind: kind, entityName: entity.name, primaryKeys: primaryKeys, changedAttributes: changedAttributes))
    guard isEnabled else { return }
    try insertChanges(
      kind, entity, primaryKeys: primaryKeys,
      changed: kind == .update ? HistorySchema.jsonArray(changedAttributes) : nil)
  }

  /// One change row for a group of rows of one entity: its key, the first and last of a run
  /// of consecutive keys, or its keys as a JSON array.
  private func insertChanges(
    _ kind: HistoryChange.Kind, _ entity: EntityDescription, primaryKeys: [Int64], changed: String?
  )
    throws
  {
    let number = try transactionNumber()
    let statement = try connection.statement(prepared: Self.insertChangeSQL)
    statement.bind(number, at: 1)
    statement.bind(Int64(kind.rawValue), at: 2)
    statement.bind(entity.name, at: 3)
    if primaryKeys.count == 1 {
      statement.bind(primaryKeys[0], at: 4)
    } else if let first = primaryKeys.first, let last = primaryKeys.last, Self.isRun(primaryKeys) {
      statement.bind(first, at: 4)
      statement.bind(last, at: 5)
    } else {
      statement.bind(HistorySchema.jsonArray(primaryKeys), at: 6)
    }
    if let changed { statement.bind(changed, at: 7) }
    try statement.run()
    noteInsertedChanges()
  }

  /// Whether `keys` are consecutive ascending integers.
  private static func isRun(_ keys: [Int64]) -> Bool {
    guard let first = keys.first, let last = keys.last, last &- first == Int64(keys.count - 1) else { return false }
    for (offset, key) in keys.enumerated() where key != first &+ Int64(offset) { return false }
    return true
  }

  /// Extends the transaction's change range by the rows the last statement inserted: they
  /// have consecutive rowids, the last one being `lastInsertRowID`.
  private func noteInsertedChanges() {
    let count = Int64(connection.changes)
    guard count > 0 else { return }
    let last = connection.lastInsertRowID
    let first = last - count + 1
    changeRange = changeRange.map { min($0.lowerBound, first)...max($0.upperBound, last) } ?? first...last
  }

  /// This process's ID, read once: `ProcessInfo` asks the kernel on every call.
  private static let processIdentifier = Int64(getpid())

  private func transactionNumber() throws -> Int64 {
    if let number { return number }
    let number: Int64
    if let known = memo?.nextNumber {
      number = known
    } else {
      let statement = try connection.statement(prepared: Self.nextNumberSQL)
      defer { statement.reset() }
      guard try statement.step() else { throw SQLiteError.generic("no next history transaction number") }
      number = statement.int64(0)
    }
    self.number = number
    memo?.nextNumber = number + 1
    return number
  }

  /// One above the largest number kept, or the horizon when none is (see `HistorySchema`).
  private static let nextNumberSQL = PreparedSQL("SELECT " + HistorySchema.nextNumberSQL)

  private static let insertTransactionSQL = PreparedSQL(
    "INSERT INTO _history_transaction (number, timestamp, author, context_name, process_id, first_change, "
      + "last_change, recorded_by) VALUES (?, ?, ?, ?, ?, ?, ?, \(HistorySchema.recordingFormatVersion))")

  private static let insertChangeSQL = PreparedSQL(
    "INSERT INTO _history_change (transaction_number, kind, entity, pk, last_pk, keys, changed, tombstone) "
      + "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)")

  /// SQL for a column's value in a tombstone: `{"integer": 1}`, `{"real": 1.5}`,
  /// `{"text": "..."}`, `{"blob": "<hex>"}`, or null; exact for every storage class.
  private static func taggedValue(column: String) -> String {
    let c = "\"\(column)\""
    return """
      CASE typeof(\(c)) WHEN 'integer' THEN json_object('integer', \(c)) WHEN 'real' THEN json_object('real', \(c)) \
      WHEN 'text' THEN json_object('text', \(c)) WHEN 'blob' THEN json_object('blob', hex(\(c))) END
      """
  }
}

/// What one committed write transaction changed, as the recorder recorded it, for the
/// publisher (recorder → publisher): the source of its `StoreChanges`, and
/// (when history is on) identical to the history rows it wrote.
struct RecordedChanges: Sendable {
  struct Group: Sendable {
    var kind: HistoryChange.Kind
    var entityName: String
    var primaryKeys: [Int64]
    var changedAttributes: [String]
  }

  var storeIdentifier: UUID
  /// The history transaction number; nil when history is off.
  var number: Int64?
  var timestamp: Date
  var author: String?
  var contextName: String?
  var groups: [Group]
  /// The context that saved it, if one did (a batch request or a save); automatic merging
  /// leaves a context's own saves out.
  var origin: ObjectIdentifier?
}

/// The rows of one table that a change covers, as SQL: those `whereClause` selects (the
/// clause starts with " WHERE", or is empty for every row), with its arguments.
struct HistoryRows {
  var table: String
  var whereClause: String
  var arguments: [PrimitiveValue]
}

/// Who wrote a transaction; recorded with it in history.
struct TransactionInfo: Sendable {
  var author: String?
  var contextName: String?
  /// The context whose save or request this is.
  var origin: ObjectIdentifier?
  /// A consumer's checkpoint that moves in the same transaction: a `HistoryMerger`'s
  /// transactional hooks save their effects and the consumer's progress together.
  var checkpoint: ConsumerCheckpoint?
}
