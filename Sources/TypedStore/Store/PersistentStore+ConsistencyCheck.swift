import Foundation

extension PersistentStore {
  /// What ``PersistentStore/checkConsistency()`` checked and found.
  ///
  /// ```swift
  /// let report = try store.checkConsistency()
  /// if !report.passed { for problem in report.problems { print(problem) } }
  /// ```
  public struct ConsistencyReport: Sendable, Equatable {
    /// One thing `checkConsistency()` found wrong.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
      /// Which family of check found it.
      public enum Kind: String, Sendable, Codable {
        /// SQLite's own `PRAGMA integrity_check`; on PostgreSQL, the history counter and the
        /// schema's indexes.
        case integrity
        /// The store's metadata: UUID, format, model, entity codes, horizon.
        case metadata
        /// Data rows against their history, and history against itself.
        case history
        /// Consumers' checkpoints.
        case consumer
        /// Relationships: key columns and join rows that name rows which do not exist.
        case relationships
      }

      /// Which family of check found it.
      public var kind: Kind
      /// What is wrong, in a sentence.
      public var message: String

      /// The kind and the message: `history: Note 3 is missing, ...`.
      public var description: String { "\(kind.rawValue): \(message)" }
    }

    /// Everything found wrong; empty when the store passed.
    public var problems: [Problem]
    /// Data rows compared with their history.
    public var rowsChecked: Int
    /// Transactions of history read.
    public var transactionsChecked: Int
    /// Whether nothing was found wrong.
    public var passed: Bool { problems.isEmpty }
  }

  /// Checks the store in one read snapshot: SQLite's `PRAGMA integrity_check`, then
  /// TypedStore's own invariants, and reports every problem found (it stops at none):
  ///
  /// - integrity: a file's pages (`PRAGMA integrity_check`); a PostgreSQL store's history
  ///   counter, which must be at the newest transaction and change row (the next numbers are
  ///   taken from it), and its schema's indexes, which must all be valid (a failed
  ///   `CREATE INDEX CONCURRENTLY` leaves one that is not). The server's pages are the
  ///   server's to check: `pg_amcheck`;
  /// - metadata: the kept model decodes and hashes to the kept hash, the newest recorded model
  ///   version is it, every table and column it stores in exists (and no other column), entity
  ///   codes match it,
  ///   the horizon lies within the transactions ever recorded, no row's key exceeds its
  ///   table's key counter;
  /// - history: every change belongs to its transaction's range; every data row's last change
  ///   in history is an insert or update of that row's entity (a row history does not mention
  ///   is allowed only below a horizon, where its history may have been pruned), and no row
  ///   whose last change is a delete still exists;
  /// - consumers: every checkpoint belongs to this store, lies within its transactions, and was
  ///   not pruned past (its unread history is still kept).
  ///
  /// ```swift
  /// let report = try store.checkConsistency()
  /// for problem in report.problems { print(problem) }
  /// ```
  public func checkConsistency() throws -> ConsistencyReport {
    // A connection of its own: a check reads every row and all history, and holds no lock
    // other history readers of this store wait for.
    try checkConsistency(on: makeReader())
  }

  private func checkConsistency<Connection: DatabaseConnection>(on connection: Connection) throws
    -> ConsistencyReport
  {
    try connection.readTransaction {
      var check = try ConsistencyCheck(store: self, connection: connection)
      try check.integrity()
      try check.metadata()
      try check.historyRanges()
      try check.rowsAgainstHistory()
      try check.relationships()
      try check.consumers()
      return ConsistencyReport(
        problems: check.problems, rowsChecked: check.rowsChecked, transactionsChecked: check.transactionsChecked)
    }
  }
}

/// One run of `checkConsistency()`: one function per check, each adding what it finds.
private struct ConsistencyCheck<Connection: DatabaseConnection> {
  typealias Problem = PersistentStore.ConsistencyReport.Problem

  let store: PersistentStore
  let connection: Connection
  let firstKept: Int64
  let current: Int64
  var problems: [Problem] = []
  var rowsChecked = 0
  var transactionsChecked = 0

  init(store: PersistentStore, connection: Connection) throws {
    self.store = store
    self.connection = connection
    firstKept = try HistoryReader.firstKept(connection)
    current = try HistoryReader.currentNumber(connection)
  }

  private mutating func problem(_ kind: Problem.Kind, _ message: String) {
    problems.append(Problem(kind: kind, message: message))
  }

  /// SQLite's `PRAGMA integrity_check`, or a PostgreSQL store's counter and indexes.
  mutating func integrity() throws {
    guard connection.dialect == .sqlite else { return try serverIntegrity() }
    let integrity = try connection.statement("PRAGMA integrity_check")
    defer { integrity.reset() }
    while try integrity.step() {
      let line = integrity.string(0)
      if line != "ok" { problem(.integrity, line) }
    }
  }

  /// A PostgreSQL store's history counter, from which the next transaction takes its number
  /// and its change rows their IDs: at the newest transaction (behind, it would give a number
  /// again; ahead, it has left a gap) and at or above the newest change row. Then the schema's
  /// indexes: an index left invalid is not used, and a unique one does not refuse duplicates
  /// (one being built concurrently is not valid yet either, and is reported the same way).
  private mutating func serverIntegrity() throws {
    let counter = try connection.statement("SELECT last, last_change FROM _history_counter WHERE id = 1")
    defer { counter.reset() }
    if try counter.step() {
      let (last, lastChange) = (counter.int64(0), counter.int64(1))
      if last != current {
        problem(
          .integrity,
          "the history counter is at transaction \(last), but the newest is \(current): "
            + (last < current ? "the next would take a number already taken" : "numbers were skipped"))
      }
      let newestChange = try connection.scalarInt("SELECT max(id) FROM _history_change") ?? 0
      if lastChange < newestChange {
        problem(
          .integrity,
          "the history counter's last change row is \(lastChange), below \(newestChange): the next would repeat IDs")
      }
    } else {
      problem(.integrity, "the history counter row is missing: no transaction can be recorded")
    }
    let invalid = try connection.statement(
      """
      SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND NOT (i.indisvalid AND i.indisready)
      ORDER BY c.relname
      """)
    defer { invalid.reset() }
    while try invalid.step() {
      problem(
        .integrity,
        "the index \(invalid.string(0)) is not valid: a CREATE INDEX CONCURRENTLY failed (drop it) or is still running")
    }
  }

  /// The kept metadata and model, the entity codes, the horizon.
  mutating func metadata() throws {
    let path = store.url.path
    if let stored = try PersistentStore.readMetadata(connection) {
      do {
        let metadata = try PersistentStore.decode(stored, path: path)
        if metadata.storeIdentifier != store.identifier {
          problem(.metadata, "the store's UUID changed while it was open")
        }
        if SHA256.hex(of: metadata.modelJSON) != metadata.modelHash {
          problem(.metadata, "the kept model does not hash to the kept model hash")
        }
        let stamp = try PersistentStore.stampProblems(
          connection, schema: metadata.schema, stampedHash: metadata.modelHash)
        for message in stamp { problem(.metadata, message) }
      } catch {
        problem(.metadata, "\(error)")
      }
    } else {
      problem(.metadata, "the metadata table is missing")
    }
    do {
      try PersistentStore.checkEntityCodes(connection: connection, path: path, model: store.model)
    } catch {
      problem(.metadata, "\(error)")
    }
    if firstKept < 1 || firstKept > current + 1 {
      problem(.metadata, "the history horizon \(firstKept - 1) lies outside the transactions recorded (0…\(current))")
    }
    if let lowest = try connection.scalarInt("SELECT min(number) FROM _history_transaction"), lowest < firstKept {
      problem(.metadata, "transaction \(lowest) is kept below the history horizon \(firstKept - 1)")
    }
  }

  /// History against itself: every change row within its transaction's range.
  mutating func historyRanges() throws {
    let misplaced =
      try connection.scalarInt(
        """
        SELECT count(*) FROM _history_change c LEFT JOIN _history_transaction t ON t.number = c.transaction_number
        WHERE t.number IS NULL OR c.id NOT BETWEEN t.first_change AND t.last_change
        """) ?? 0
    if misplaced > 0 {
      problem(.history, "\(misplaced) change row(s) lie outside their transaction's range, or have no transaction")
    }
  }

  /// Data rows against history: the last change of each key, by table.
  mutating func rowsAgainstHistory() throws {
    let identifier = store.identifier
    var visitor = LastChangeVisitor(model: store.model)
    try HistoryReader.visit(
      HistoryRequest(
        after: HistoryToken(storeIdentifier: identifier, transactionNumber: max(0, min(firstKept, current + 1) - 1))),
      storeIdentifier: identifier, model: store.model, connection: connection, visitor: &visitor)
    transactionsChecked = visitor.transactions
    for root in store.model.entities where root.isRoot {
      try check(root, against: visitor.lastChanges[root.name] ?? [:])
    }
  }

  /// The rows of one root table against the last changes history has of its keys; at most
  /// 20 problems listed per table.
  private mutating func check(_ root: EntityDescription, against lastChanges: [Int64: LastChangeVisitor.LastChange])
    throws
  {
    var lastChanges = lastChanges
    let table = store.layout(of: root)
    let rows = try connection.statement("SELECT pk, _entity FROM \"\(root.name)\" ORDER BY pk")
    defer { rows.reset() }
    var found: [String] = []
    var largest: Int64 = 0
    while try rows.step() {
      rowsChecked += 1
      let key = rows.int64(0)
      largest = key
      let entity = table.entity(code: rows.int64(1))?.name ?? "?"
      if let message = rowProblem(entity, key, last: lastChanges.removeValue(forKey: key)) { found.append(message) }
    }
    // The next key is one above the largest key and the floor: a deleted key above both
    // would be given again.
    let floor = try keyFloor(of: root)
    if floor == nil { problem(.metadata, "\(root.name) has no row in _primary_key: its inserts would fail") }
    let next = max(largest, floor ?? 0) + 1
    for (key, last) in lastChanges.sorted(by: { $0.key < $1.key }) {
      if last.kind != .delete {
        found.append(
          "\(last.entity) \(key) is missing, "
            + "but history's last change of it is an \(last.kind) (transaction \(last.number))")
      } else if key >= next {
        found.append(
          "\(last.entity) \(key) was deleted (transaction \(last.number)), "
            + "but its table's key floor is below it: the key would be given again")
      }
    }
    for message in found.prefix(20) { problem(.history, message) }
    if found.count > 20 { problem(.history, "\(found.count - 20) more problem(s) of \(root.name) rows not listed") }
  }

  /// The table's key floor (`_primary_key`): with its largest key, the next key is one above.
  /// Nil when the table has no row there.
  private func keyFloor(of root: EntityDescription) throws -> Int64? {
    let maximum = try connection.statement("SELECT key_floor FROM _primary_key WHERE entity = ?")
    defer { maximum.reset() }
    try maximum.bind(root.name, at: 1)
    return try maximum.step() ? maximum.int64(0) : nil
  }

  /// What is wrong with an existing row, given history's last change of its key.
  private func rowProblem(_ entity: String, _ key: Int64, last: LastChangeVisitor.LastChange?) -> String? {
    guard let last else {
      guard firstKept <= 1 else { return nil }  // history was pruned: the row's may be gone
      return
        "\(entity) \(key) has no change in history, which was never pruned "
        + "(written with recordsHistory off, or its history was lost)"
    }
    if last.kind == .delete {
      return "\(entity) \(key) exists, but history's last change of it is a delete (transaction \(last.number))"
    } else if last.entity != entity {
      return "\(entity) \(key) is recorded in history as a \(last.entity) (transaction \(last.number))"
    }
    return nil
  }

  /// Relationships, from the schema the store keeps (so a tool without the classes checks
  /// them too): every key column and join row must name an existing row.
  mutating func relationships() throws {
    let tables = Dictionary(uniqueKeysWithValues: store.model.schema.entities.map { ($0.name, $0.table) })
    for entity in store.model.schema.entities {
      for relationship in entity.relationships ?? [] {
        guard let destination = tables[relationship.destination] else { continue }
        if let column = relationship.column {
          let dangling =
            try connection.scalarInt(
              "SELECT count(*) FROM \"\(entity.table)\" WHERE \"\(column)\" IS NOT NULL "
                + "AND \"\(column)\" NOT IN (SELECT pk FROM \"\(destination)\")") ?? 0
          if dangling > 0 {
            problem(
              .relationships,
              "\(dangling) \(entity.name) row(s) name a missing \(relationship.destination) in \(relationship.name)")
          }
        }
        if let join = relationship.ownedJoinTable {
          let orphans =
            try connection.scalarInt(
              "SELECT count(*) FROM \"\(join)\" WHERE source NOT IN (SELECT pk FROM \"\(entity.table)\") "
                + "OR target NOT IN (SELECT pk FROM \"\(destination)\")") ?? 0
          if orphans > 0 {
            problem(.relationships, "\(orphans) link(s) of \(entity.name).\(relationship.name) name a missing row")
          }
        }
      }
    }
  }

  /// Consumers' checkpoints: of this store, within its transactions, not pruned past.
  mutating func consumers() throws {
    let identifier = store.identifier
    for consumer in try HistoryConsumers.all(storeIdentifier: identifier, connection: connection) {
      let number = consumer.checkpoint.transactionNumber
      if consumer.checkpoint.storeIdentifier != identifier {
        problem(.consumer, "\(consumer.name)'s checkpoint belongs to store \(consumer.checkpoint.storeIdentifier)")
      } else if number < 0 || number > current {
        problem(
          .consumer, "\(consumer.name)'s checkpoint \(number) lies outside the transactions recorded (0…\(current))")
      } else if number < firstKept - 1 {
        problem(
          .consumer, "\(consumer.name) has not read transactions \(number + 1)…\(firstKept - 1), which were pruned")
      }
    }
  }
}

/// The last change of every key that history mentions, by root table: what the consistency
/// check compares each table with.
private struct LastChangeVisitor: HistoryVisitor {
  struct LastChange {
    var kind: HistoryChange.Kind
    var entity: String
    var number: Int64
  }

  let model: ManagedObjectModel
  var lastChanges: [String: [Int64: LastChange]] = [:]
  var transactions = 0
  private var number: Int64 = 0
  private var roots: [String: String] = [:]

  init(model: ManagedObjectModel) {
    self.model = model
    for entity in model.entities { roots[entity.name] = entity.rootName }
  }

  mutating func beginTransaction(_ header: HistoryReader.Header) {
    number = header.number
    transactions += 1
  }

  mutating func change(
    _ kind: HistoryChange.Kind, entity: String, key: Int64, changed: [String], tombstone: String?, index: Int
  ) {
    let root = roots[entity] ?? entity
    lastChanges[root, default: [:]][key] = LastChange(kind: kind, entity: entity, number: number)
  }

  mutating func endTransaction() {}
}
