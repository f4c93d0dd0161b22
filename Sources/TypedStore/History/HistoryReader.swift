import Foundation

/// Reads and deletes history. Reads run on a reader connection in one read transaction, so a
/// page is one consistent snapshot; deletion runs in the store's write path.
enum HistoryReader {
  // MARK: - Positions

  /// The number of the last transaction ever recorded (0 when none was).
  static func currentNumber(_ connection: SQLiteConnection) throws -> Int64 {
    try connection.scalarInt("SELECT seq FROM sqlite_sequence WHERE name = '_history_transaction'") ?? 0
  }

  /// The lowest transaction number still kept (history below it was deleted).
  static func horizon(_ connection: SQLiteConnection) throws -> Int64 {
    try connection.scalarText("SELECT value FROM _metadata WHERE key = 'history_horizon'").flatMap { Int64($0) } ?? 1
  }

  /// The latest commit time among deleted transactions, if any were deleted.
  static func horizonDate(_ connection: SQLiteConnection) throws -> Date? {
    try connection.scalarText("SELECT value FROM _metadata WHERE key = 'history_horizon_timestamp'")
      .flatMap { Double($0) }.map { Date(timeIntervalSinceReferenceDate: $0) }
  }

  // MARK: - Fetching

  static func fetch(
    _ request: HistoryRequest, storeIdentifier: UUID, model: ManagedObjectModel, connection: SQLiteConnection
  ) throws -> [HistoryTransaction] {
    if let limit = request.transactionLimit, limit < 0 {
      throw HistoryError.invalidRequest("transactionLimit must not be negative")
    }
    return try connection.readTransaction {
      let horizon = try horizon(connection)
      var conditions: [String] = []
      var arguments: [PrimitiveValue] = []
      switch request.start {
      case .beginning:
        guard horizon <= 1 else {
          throw HistoryError.tokenExpired(
            horizon: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: horizon - 1))
        }
      case .after(let token):
        guard token.storeIdentifier == storeIdentifier else {
          throw HistoryError.foreignStore(expected: storeIdentifier, found: token.storeIdentifier)
        }
        guard token.transactionNumber >= horizon - 1 else {
          throw HistoryError.tokenExpired(
            horizon: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: horizon - 1))
        }
        conditions.append("number > ?")
        arguments.append(.integer(token.transactionNumber))
      case .afterDate(let date):
        if let deleted = try horizonDate(connection), date < deleted {
          throw HistoryError.tokenExpired(
            horizon: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: horizon - 1))
        }
        conditions.append("timestamp > ?")
        arguments.append(.real(date.timeIntervalSinceReferenceDate))
      }
      if let end = request.end {
        guard end.storeIdentifier == storeIdentifier else {
          throw HistoryError.foreignStore(expected: storeIdentifier, found: end.storeIdentifier)
        }
        if case .after(let start) = request.start, end.transactionNumber < start.transactionNumber {
          throw HistoryError.invalidRequest("the end token comes before the start token")
        }
        conditions.append("number <= ?")
        arguments.append(.integer(end.transactionNumber))
      }
      if let authors = request.authors {
        conditions.append("author IN (SELECT value FROM json_each(?))")
        arguments.append(.text(HistorySchema.jsonArray(authors.sorted())))
      }
      if !request.excludedAuthors.isEmpty {
        conditions.append("(author IS NULL OR author NOT IN (SELECT value FROM json_each(?)))")
        arguments.append(.text(HistorySchema.jsonArray(request.excludedAuthors.sorted())))
      }
      var entityNames: String?
      if request.entities != nil || request.entityNames != nil {
        var selected = (request.entities ?? []).compactMap { model.entity(for: $0) }
        for name in request.entityNames ?? [] {
          guard let entity = model.entity(named: name) else {
            throw HistoryError.invalidRequest("the store has no entity named \(name)")
          }
          selected.append(entity)
        }
        let names = Array(Set(selected.flatMap(\.selfAndDescendantNames))).sorted()
        entityNames = HistorySchema.jsonArray(names)
        conditions.append(
          "EXISTS (SELECT 1 FROM _history_change c WHERE c.id BETWEEN first_change AND last_change AND c.entity IN (SELECT value FROM json_each(?)))"
        )
        arguments.append(.text(HistorySchema.jsonArray(names)))
      }
      var sql =
        "SELECT number, timestamp, author, context_name, process_id, first_change, last_change FROM _history_transaction"
      if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
      sql += " ORDER BY number"
      if let limit = request.transactionLimit { sql += " LIMIT \(limit)" }

      struct Header {
        var number: Int64
        var timestamp: Double
        var author: String?
        var contextName: String?
        var processID: Int64
        var firstChange: Int64
        var lastChange: Int64
      }
      var headers: [Header] = []
      let statement = try connection.statement(sql)
      defer { statement.reset() }
      for (index, argument) in arguments.enumerated() { statement.bind(argument, at: Int32(index + 1)) }
      while try statement.step() {
        headers.append(
          Header(
            number: statement.int64(0), timestamp: statement.double(1),
            author: statement.isNull(2) ? nil : statement.string(2),
            contextName: statement.isNull(3) ? nil : statement.string(3), processID: statement.int64(4),
            firstChange: statement.int64(5), lastChange: statement.int64(6)))
      }
      guard let first = headers.first, let last = headers.last else { return [] }

      var changeSQL =
        "SELECT transaction_number, kind, entity, pk, keys, changed, tombstone, last_pk FROM _history_change WHERE id BETWEEN ? AND ?"
      if entityNames != nil { changeSQL += " AND entity IN (SELECT value FROM json_each(?))" }
      changeSQL += " ORDER BY id"
      let changes = try connection.statement(changeSQL)
      defer { changes.reset() }
      // Change rows are in commit order, like the transactions: one rowid range covers them,
      // and one pass pairs them with their transactions (rows of transactions the request
      // left out, by author, are skipped). Each change is appended once: reading costs the
      // same per change whatever the shape of the history.
      changes.bind(first.firstChange, at: 1)
      changes.bind(last.lastChange, at: 2)
      if let entityNames { changes.bind(entityNames, at: 3) }
      var transactions: [HistoryTransaction] = []
      transactions.reserveCapacity(headers.count)
      var next = 0  // the first header not yet emitted
      var current: [HistoryChange] = []
      func emit(_ header: Header, _ changes: [HistoryChange]) {
        transactions.append(
          HistoryTransaction(
            number: header.number,
            token: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: header.number),
            timestamp: Date(timeIntervalSinceReferenceDate: header.timestamp), author: header.author,
            contextName: header.contextName, processID: Int32(truncatingIfNeeded: header.processID),
            changes: changes))
      }
      // Updates of one save share their list of attributes: decoded once per distinct text.
      var attributeLists: [String: [String]] = [:]
      var entity = ""
      while try changes.step() {
        let number = changes.int64(0)
        while next < headers.count && headers[next].number < number {
          emit(headers[next], current)
          current = []
          next += 1
        }
        guard next < headers.count, headers[next].number == number else { continue }
        if !changes.textEquals(2, entity) { entity = changes.string(2) }
        let kind = ChangeKind(rawValue: Int(changes.int64(1))) ?? .update
        var changed: [String] = []
        if !changes.isNull(5) {
          let text = changes.string(5)
          if let list = attributeLists[text] {
            changed = list
          } else {
            changed = try JSONDecoder().decode([String].self, from: Data(text.utf8))
            attributeLists[text] = changed
          }
        }
        let tombstone =
          changes.isNull(6)
          ? nil
          : HistoryTombstone(entityName: entity, json: changes.string(6), storeIdentifier: storeIdentifier)
        func append(_ key: Int64) {
          current.append(
            HistoryChange(
              kind: kind,
              objectID: AnyManagedID(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key)),
              changedAttributes: changed, tombstone: tombstone))
        }
        if !changes.isNull(4) {
          for key in HistorySchema.integers(fromJSONArray: changes.string(4)) { append(key) }
        } else if !changes.isNull(7), changes.int64(7) >= changes.int64(3) {
          for key in changes.int64(3)...changes.int64(7) { append(key) }
        } else {
          append(changes.int64(3))
        }
      }
      while next < headers.count {
        emit(headers[next], current)
        current = []
        next += 1
      }
      return transactions
    }
  }

  // MARK: - Deleting

  /// Deletes every transaction numbered below `number` and moves the horizon up to it.
  /// Runs inside a write transaction. Returns how many transactions were deleted.
  @discardableResult
  static func deleteHistory(before number: Int64, connection: SQLiteConnection) throws -> Int {
    let horizon = try horizon(connection)
    guard number > horizon else { return 0 }
    let latest = try connection.statement("SELECT max(timestamp) FROM _history_transaction WHERE number < ?")
    latest.bind(number, at: 1)
    let deletedUntil = try latest.step() && !latest.isNull(0) ? latest.double(0) : nil
    latest.reset()
    // Change rows are in commit order: everything below the first change of the oldest kept
    // transaction goes, as one rowid range.
    let changes = try connection.statement(
      "DELETE FROM _history_change WHERE id < coalesce((SELECT first_change FROM _history_transaction WHERE number >= ? ORDER BY number LIMIT 1), (SELECT max(id) + 1 FROM _history_change))"
    )
    changes.bind(number, at: 1)
    try changes.run()
    let transactions = try connection.statement("DELETE FROM _history_transaction WHERE number < ?")
    transactions.bind(number, at: 1)
    try transactions.run()
    let count = connection.changes
    let metadata = try connection.statement("INSERT OR REPLACE INTO _metadata (key, value) VALUES (?, ?)")
    metadata.bind("history_horizon", at: 1)
    metadata.bind(String(number), at: 2)
    try metadata.run()
    if let deletedUntil {
      metadata.reset()
      metadata.bind("history_horizon_timestamp", at: 1)
      metadata.bind(String(deletedUntil), at: 2)
      try metadata.run()
    }
    return count
  }

  /// The number of the first transaction committed after `date` (or the next number when
  /// none was), for deleting history before a date.
  static func firstNumber(after date: Date, connection: SQLiteConnection) throws -> Int64 {
    let statement = try connection.statement("SELECT min(number) FROM _history_transaction WHERE timestamp > ?")
    defer { statement.reset() }
    statement.bind(date.timeIntervalSinceReferenceDate, at: 1)
    if try statement.step(), !statement.isNull(0) { return statement.int64(0) }
    return try currentNumber(connection) + 1
  }
}
