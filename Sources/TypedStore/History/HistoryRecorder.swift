import Foundation

/// Records one write transaction's history, inside that transaction (step 3 of the write
/// path, see `StoreWriter`), on either engine.
///
/// Change rows are written set-based: one change row per entity and kind holds the keys of all
/// its rows, whatever their number (see `HistorySchema`). A delete that keeps a tombstone is
/// recorded with one `INSERT ... SELECT` that reads each row's preserved values by SQL before
/// the rows go, using the same selection as the statement that deletes them. The transaction's
/// number is taken with its first change, and its row is inserted when the transaction
/// finishes, with the range of its change rows: a write that changes nothing leaves no
/// history (and no gap in the numbers), and a save writes its transaction row once, not
/// inserts and then updates it.
///
/// The recorder gives change rows their IDs itself, consecutive from the next one, so that a
/// transaction's rows are one range on both engines. Both the number and the first ID are read
/// under the store's write lock, which the transaction holds from its start (SQLite's
/// `BEGIN IMMEDIATE`; on PostgreSQL the counter row's lock, taken first): on SQLite one above
/// the largest kept (`HistorySchema`), on PostgreSQL one above the counter row's, which
/// `finish` moves in the transaction's last statements (`docs/file-format.md`).
package final class HistoryRecorder<Connection: DatabaseConnection> {
  private let connection: Connection
  private let info: TransactionInfo
  private let isEnabled: Bool
  private let timestamp = Date()
  private var number: Int64?
  /// The IDs of the transaction's first and last change rows.
  private var changeRange: ClosedRange<Int64>?
  /// The ID the next change row gets, once known.
  private var nextChangeID: Int64?
  private var changes: [RecordedChanges.Group] = []
  /// PostgreSQL: change rows whose IDs are given but which are not inserted yet: `finish`
  /// writes them with the transaction's row, the counter and the notification, in one round
  /// trip (a delete's tombstone rows are inserted at once, read from the rows before they go).
  private var pendingRows: [PendingChangeRow] = []
  /// What the writer knows without asking the database; nil inside a migration, and after
  /// `reset()`: then everything is asked.
  var memo: WriterMemo?

  package init(connection: Connection, info: TransactionInfo, isEnabled: Bool) {
    self.connection = connection
    self.info = info
    self.isEnabled = isEnabled
  }

  /// Tells the recorder what the engine read when it took the store's write lock (PostgreSQL's
  /// history counter row: the last number and change row ID given out), so that the
  /// transaction's number and first change ID follow with no query of their own.
  package func follows(lastNumber: Int64, lastChangeID: Int64) {
    var known = memo ?? WriterMemo()
    known.nextNumber = lastNumber + 1
    known.nextChangeID = lastChangeID + 1
    memo = known
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
    let tombstone = Self.tombstoneSQL(for: groups.map(\.entity), dialect: connection.dialect)
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
      INSERT INTO _history_change (id, transaction_number, kind, entity, pk, tombstone)
      SELECT ? + row_number() OVER (ORDER BY pk) - 1, ?, \(HistoryChange.Kind.delete.rawValue), \(entityName), pk, \
      \(tombstone)
      FROM "\(rows.table)"\(rows.whereClause) ORDER BY pk
      """)
    defer { statement.reset() }
    let first = try changeID()
    try statement.bind(first, at: 1)
    try statement.bind(try transactionNumber(), at: 2)
    for (index, argument) in rows.arguments.enumerated() { try statement.bind(argument, at: Int32(index + 3)) }
    try statement.run()
    noteInsertedChanges(from: first)
  }

  /// SQL for the tombstone of a row of any of `entities`: a JSON object of its attributes
  /// marked `preservedOnDeletion`, chosen by the row's `_entity`.
  private static func tombstoneSQL(for entities: [EntityDescription], dialect: SQLDialect) -> String {
    let cases = entities.compactMap { entity -> String? in
      let preserved = entity.attributes.filter(\.isPreservedOnDeletion)
      guard !preserved.isEmpty else { return nil }
      let members = preserved.map { "'\($0.name)', \(taggedValue(of: $0, dialect: dialect))" }.joined(separator: ", ")
      let object =
        switch dialect {
        case .sqlite: "json_object(\(members))"
        case .postgreSQL: "CAST(json_build_object(\(members)) AS text)"
        }
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
  /// (`DatabaseConnection.undoWrites()`).
  func reset() {
    memo = nil  // the transaction began again: others may have committed in between
    number = nil
    changeRange = nil
    nextChangeID = nil
    changes = []
    pendingRows = []
  }

  /// Completes the transaction's history row and returns what the transaction changed, once
  /// all its rows are applied; nil when it changed nothing.
  package func finish(storeIdentifier: UUID) throws -> RecordedChanges? {
    guard !changes.isEmpty else { return nil }
    if let number, connection.dialect == .postgreSQL {
      try finishOnPostgreSQL(number)
    } else if let number {
      let statement = try connection.statement(prepared: RecordingSQL.insertTransactionSQL)
      defer { statement.reset() }
      try bindTransactionRow(number, to: statement)
      try statement.run()
    }
    if let nextChangeID { memo?.nextChangeID = nextChangeID }
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
    let id = try changeID()
    if connection.dialect == .postgreSQL {
      pendingRows.append(PendingChangeRow(id: id, kind: kind, entity: entity.name, keys: primaryKeys, changed: changed))
      nextChangeID = id + 1
      changeRange = changeRange.map { min($0.lowerBound, id)...max($0.upperBound, id) } ?? id...id
      return
    }
    let statement = try connection.statement(prepared: RecordingSQL.insertChangeSQL)
    defer { statement.reset() }
    try statement.bind(id, at: 1)
    try statement.bind(number, at: 2)
    try statement.bind(Int64(kind.rawValue), at: 3)
    try statement.bind(entity.name, at: 4)
    if primaryKeys.count == 1 {
      try statement.bind(primaryKeys[0], at: 5)
    } else if let first = primaryKeys.first, let last = primaryKeys.last, isConsecutiveRun(primaryKeys) {
      try statement.bind(first, at: 5)
      try statement.bind(last, at: 6)
    } else {
      try statement.bind(HistorySchema.jsonArray(primaryKeys), at: 7)
    }
    if let changed { try statement.bind(changed, at: 8) }
    try statement.run()
    noteInsertedChanges(from: id)
  }

  /// Extends the transaction's change range by the rows the last statement inserted, with
  /// consecutive IDs from `first`.
  private func noteInsertedChanges(from first: Int64) {
    let count = Int64(connection.changes)
    guard count > 0 else { return }
    let last = first + count - 1
    nextChangeID = last + 1
    changeRange = changeRange.map { min($0.lowerBound, first)...max($0.upperBound, last) } ?? first...last
  }

  /// The ID of the next change row: one above the largest on SQLite, one above the counter
  /// row's on PostgreSQL (read under the write lock), or what the memo knows.
  private func changeID() throws -> Int64 {
    if let nextChangeID { return nextChangeID }
    let id =
      try memo?.nextChangeID
      ?? integer(RecordingSQL.nextChangeIDSQL, RecordingSQL.nextChangeIDSQLPostgreSQL, "no next history change ID")
    nextChangeID = id
    return id
  }

  /// The integer the engine's statement reads (`sqlite` or `postgreSQL`, prepared once per
  /// connection); throws `MissingCatalogRow` with `missing` when it reads no row.
  private func integer(_ sqlite: PreparedSQL, _ postgreSQL: PreparedSQL, _ missing: String) throws -> Int64 {
    let statement = try connection.statement(prepared: connection.dialect == .postgreSQL ? postgreSQL : sqlite)
    defer { statement.reset() }
    guard try statement.step() else { throw MissingCatalogRow(missing) }
    return statement.int64(0)
  }

  /// PostgreSQL, in one statement: the transaction's row, its pending change rows, the counter
  /// row moved to its number and last change ID, and the notification listeners wait for
  /// (`pg_notify`, delivered at commit, in commit order, on the channel of the schema).
  private func finishOnPostgreSQL(_ number: Int64) throws {
    let statement = try connection.statement(prepared: RecordingSQL.finishSQLPostgreSQL)
    defer { statement.reset() }
    try bindTransactionRow(number, to: statement)
    let rows = pendingRows
    let columns: [[String?]] = [
      rows.map { String($0.id) }, rows.map { String($0.kind.rawValue) }, rows.map(\.entity),
      rows.map { $0.run.map { String($0.first) } }, rows.map { $0.run?.last.map(String.init) },
      rows.map { $0.run == nil ? HistorySchema.jsonArray($0.keys) : nil }, rows.map(\.changed),
    ]
    for (index, column) in columns.enumerated() {
      try statement.bind(PendingChangeRow.arrayLiteral(column), at: Int32(index + 8))
    }
    guard try statement.step() else { throw MissingCatalogRow("the history counter row is missing") }
    pendingRows = []
  }

  /// The transaction row's values, parameters 1 through 7 of either engine's statement: its
  /// number, time, author, context name, process, and the range of its change rows (with no
  /// change row, a tombstone insert that found its rows gone: the empty range where the next
  /// would go, or 0, 0 when that is not known, see `HistorySchema`).
  private func bindTransactionRow(_ number: Int64, to statement: Connection.PreparedStatement) throws {
    try statement.bind(number, at: 1)
    try statement.bind(timestamp.timeIntervalSinceReferenceDate, at: 2)
    if let author = info.author { try statement.bind(author, at: 3) } else { try statement.bindNull(3) }
    if let name = info.contextName { try statement.bind(name, at: 4) } else { try statement.bindNull(4) }
    try statement.bind(RecordingSQL.processIdentifier, at: 5)
    let range = changeRange.map { ($0.lowerBound, $0.upperBound) } ?? nextChangeID.map { ($0, $0 - 1) } ?? (0, 0)
    try statement.bind(range.0, at: 6)
    try statement.bind(range.1, at: 7)
  }

  private func transactionNumber() throws -> Int64 {
    if let number { return number }
    let number =
      try memo?.nextNumber
      ?? integer(
        RecordingSQL.nextNumberSQL, RecordingSQL.nextNumberSQLPostgreSQL, "no next history transaction number")
    self.number = number
    memo?.nextNumber = number + 1
    return number
  }

  /// SQL for an attribute's value in a tombstone: `{"integer": 1}`, `{"real": 1.5}`,
  /// `{"text": "..."}`, `{"blob": "<hex>"}`, or null; exact for every storage class. On SQLite
  /// the tag is the value's storage class, and a finite real is written with 17 significant
  /// digits (SQLite's `json_object` writes 15, which loses the last bits of most doubles) and
  /// an infinite one as the string `"Infinity"` or `"-Infinity"`, as PostgreSQL writes it
  /// (SQLite's `Inf` is not JSON); on PostgreSQL, whose columns have the attribute's
  /// type, it is the class the SQLite store keeps that type in, so both engines' tombstones
  /// read back as the same values.
  private static func taggedValue(of attribute: AttributeDescription, dialect: SQLDialect) -> String {
    let c = "\"\(attribute.columnName)\""
    switch dialect {
    case .sqlite:
      return """
        CASE typeof(\(c)) WHEN 'integer' THEN json_object('integer', \(c)) WHEN 'real' THEN json_object('real', \
        CASE WHEN abs(\(c)) <= 1.7976931348623157e308 THEN json(printf('%!.17g', \(c))) \
        WHEN \(c) > 0 THEN 'Infinity' ELSE '-Infinity' END) \
        WHEN 'text' THEN json_object('text', \(c)) WHEN 'blob' THEN json_object('blob', hex(\(c))) END
        """
    case .postgreSQL:
      let tagged =
        switch attribute.attributeType {
        case .boolean: "json_build_object('integer', CAST(\(c) AS integer))"
        case .integer16, .integer32, .integer64: "json_build_object('integer', \(c))"
        case .double, .float, .date: "json_build_object('real', CAST(\(c) AS double precision))"
        case .string, .uri, .codable, .decimal: "json_build_object('text', CAST(\(c) AS text))"
        case .binaryData: "json_build_object('blob', upper(encode(\(c), 'hex')))"
        case .uuid: "json_build_object('blob', upper(replace(CAST(\(c) AS text), '-', '')))"
        }
      return "CASE WHEN \(c) IS NULL THEN NULL ELSE \(tagged) END"
    }
  }
}

/// Whether `keys` are consecutive ascending integers (one change row's `pk` through `last_pk`).
private func isConsecutiveRun(_ keys: [Int64]) -> Bool {
  guard let first = keys.first, let last = keys.last, last &- first == Int64(keys.count - 1) else { return false }
  for (offset, key) in keys.enumerated() where key != first &+ Int64(offset) { return false }
  return true
}

/// A change row `HistoryRecorder` writes later (PostgreSQL).
private struct PendingChangeRow {
  let id: Int64
  let kind: HistoryChange.Kind
  let entity: String
  let keys: [Int64]
  let changed: String?

  init(id: Int64, kind: HistoryChange.Kind, entity: String, keys: [Int64], changed: String?) {
    self.id = id
    self.kind = kind
    self.entity = entity
    self.keys = keys
    self.changed = changed
  }

  /// The first and last key when the keys are one key or a run of consecutive keys (`pk` and
  /// `last_pk`, NULL for one key); nil for other lists (a JSON array in `keys`).
  var run: (first: Int64, last: Int64?)? {
    guard let first = keys.first, let last = keys.last, isConsecutiveRun(keys) else { return nil }
    return (first, keys.count == 1 ? nil : last)
  }

  /// `values` as a PostgreSQL array literal (NULL for nil), bound as text and cast in SQL.
  static func arrayLiteral(_ values: [String?]) -> String {
    "{"
      + values.map { value in
        guard let value else { return "NULL" }
        return "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
          + "\""
      }.joined(separator: ",") + "}"
  }
}

/// The recorder's statements, prepared once per connection.
private enum RecordingSQL {
  /// This process's ID, read once: `ProcessInfo` asks the kernel on every call.
  static let processIdentifier = Int64(getpid())

  /// One above the largest number kept, or the horizon when none is (see `HistorySchema`).
  static let nextNumberSQL = PreparedSQL("SELECT " + HistorySchema.nextNumberSQL)

  /// One above the counter row's, which pruning never lowers.
  static let nextNumberSQLPostgreSQL = PreparedSQL("SELECT last + 1 FROM _history_counter WHERE id = 1")

  static let nextChangeIDSQL = PreparedSQL("SELECT coalesce(max(id), 0) + 1 FROM _history_change")

  static let nextChangeIDSQLPostgreSQL = PreparedSQL(
    "SELECT last_change + 1 FROM _history_counter WHERE id = 1")

  static let insertTransactionSQL = PreparedSQL(
    "INSERT INTO _history_transaction (number, timestamp, author, context_name, process_id, first_change, "
      + "last_change, recorded_by) VALUES (?, ?, ?, ?, ?, ?, ?, \(HistorySchema.recordingFormatVersion))")

  /// PostgreSQL's `finish`: the transaction row, the change rows (as arrays), the counter and
  /// the notification, in one statement; its data-modifying parts run whatever it selects.
  static let finishSQLPostgreSQL = PreparedSQL(
    """
    WITH t AS (INSERT INTO _history_transaction (number, timestamp, author, context_name, process_id, first_change, \
    last_change, recorded_by, xid) VALUES (CAST(?1 AS bigint), ?2, ?3, ?4, ?5, ?6, ?7, \
    \(HistorySchema.recordingFormatVersion), pg_current_xact_id())), \
    c AS (INSERT INTO _history_change (id, transaction_number, kind, entity, pk, last_pk, keys, changed) \
    SELECT x.id, CAST(?1 AS bigint), x.kind, x.entity, x.pk, x.last_pk, x.keys, x.changed FROM unnest(\
    CAST(?8 AS bigint[]), CAST(?9 AS bigint[]), CAST(?10 AS text[]), CAST(?11 AS bigint[]), CAST(?12 AS bigint[]), \
    CAST(?13 AS text[]), CAST(?14 AS text[])) AS x(id, kind, entity, pk, last_pk, keys, changed)), \
    n AS (UPDATE _history_counter SET last = CAST(?1 AS bigint), last_change = greatest(last_change, ?7) \
    WHERE id = 1 RETURNING last) \
    SELECT pg_notify('typedstore_' || current_schema(), CAST(last AS text)) FROM n
    """)

  static let insertChangeSQL = PreparedSQL(
    "INSERT INTO _history_change (id, transaction_number, kind, entity, pk, last_pk, keys, changed, tombstone) "
      + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)")
}

/// The write path found a catalog table of the store without the row it reads (the next
/// history number or change ID, the history counter, a table's key floor): a store damaged by
/// hand. The store's writer reports it as `StoreError.corrupt`.
package struct MissingCatalogRow: Error, CustomStringConvertible {
  package var description: String
  init(_ description: String) { self.description = description }
}

/// What one committed write transaction changed, as the recorder recorded it, for the
/// publisher (recorder → publisher): the source of its `StoreChanges`, and
/// (when history is on) identical to the history rows it wrote.
package struct RecordedChanges: Sendable {
  struct Group: Sendable {
    var kind: HistoryChange.Kind
    var entityName: String
    var primaryKeys: [Int64]
    var changedAttributes: [String]
  }

  var storeIdentifier: UUID
  /// The history transaction number; nil when history is off.
  package var number: Int64?
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
package struct TransactionInfo: Sendable {
  var author: String?
  var contextName: String?
  /// The context whose save or request this is.
  var origin: ObjectIdentifier?
  /// A consumer's checkpoint that moves in the same transaction: a `HistoryMerger`'s
  /// transactional hooks save their effects and the consumer's progress together.
  var checkpoint: ConsumerCheckpoint?
}

extension TransactionInfo {
  /// Who writes a transaction, for the PostgreSQL engine's writer.
  package init(author: String?, contextName: String? = nil) {
    self.init(author: author, contextName: contextName, origin: nil, checkpoint: nil)
  }
}
