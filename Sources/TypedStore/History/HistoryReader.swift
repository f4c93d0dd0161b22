import Foundation

/// Reads and deletes history. Reads run on a reader connection in one read transaction, so a
/// page is one consistent snapshot; deletion runs in the store's write path.
package enum HistoryReader {
  // MARK: - Positions

  /// The number of the last transaction ever recorded (0 when none was): the largest kept
  /// or, with none kept, the one before the horizon (see `HistorySchema`).
  package static func currentNumber<Connection: DatabaseConnection>(_ connection: Connection) throws -> Int64 {
    try connection.scalarInt(
      "SELECT coalesce((SELECT max(number) FROM _history_transaction), "
        + "(SELECT CAST(value AS INTEGER) - 1 FROM _metadata WHERE key = 'history_horizon'), 0)") ?? 0
  }

  /// The number of the first transaction kept: the horizon + 1 (the horizon, as users see it,
  /// is the token after which history is complete: the last transaction deleted, or 0). The
  /// metadata's `history_horizon` holds this number.
  static func firstKept<Connection: DatabaseConnection>(_ connection: Connection) throws -> Int64 {
    try connection.scalarText("SELECT value FROM _metadata WHERE key = 'history_horizon'").flatMap { Int64($0) } ?? 1
  }

  /// The latest commit time among deleted transactions, if any were deleted.
  static func horizonDate<Connection: DatabaseConnection>(_ connection: Connection) throws -> Date? {
    try connection.scalarText("SELECT value FROM _metadata WHERE key = 'history_horizon_timestamp'")
      .flatMap { Double($0) }.map { Date(timeIntervalSinceReferenceDate: $0) }
  }

  // MARK: - Fetching

  package static func fetch<Connection: DatabaseConnection>(
    _ request: HistoryRequest, storeIdentifier: UUID, model: ManagedObjectModel, connection: Connection
  ) throws -> [HistoryTransaction] {
    var collector = TransactionCollector(storeIdentifier: storeIdentifier)
    try visit(request, storeIdentifier: storeIdentifier, model: model, connection: connection, visitor: &collector)
    return collector.transactions
  }

  /// One transaction's row, as `visit` hands it over.
  struct Header {
    var number: Int64
    var timestamp: Double
    var author: String?
    var contextName: String?
    var processID: Int64
    var firstChange: Int64
    var lastChange: Int64
  }

  /// Reads the transactions the request selects, in order, in one read transaction, and
  /// hands each to `visitor` with its changes one by one: nothing is collected here, so a
  /// visitor that writes them out reads any amount of history in constant memory (one page of
  /// transaction rows at most).
  static func visit<Visitor: HistoryVisitor, Connection: DatabaseConnection>(
    _ request: HistoryRequest, storeIdentifier: UUID, model: ManagedObjectModel, connection: Connection,
    visitor: inout Visitor
  ) throws {
    if let limit = request.transactionLimit, limit < 0 {
      throw HistoryError.invalidRequest("transactionLimit must not be negative")
    }
    try connection.readTransaction {
      var filter = try Filter(
        request, storeIdentifier: storeIdentifier, firstKept: try Self.firstKept(connection), connection: connection)
      try filter.add(request, storeIdentifier: storeIdentifier, model: model)
      var sql =
        "SELECT number, timestamp, author, context_name, process_id, first_change, last_change "
        + "FROM _history_transaction"
      if !filter.conditions.isEmpty { sql += " WHERE " + filter.conditions.joined(separator: " AND ") }
      // Pages of transaction rows: a page's changes are one rowid range.
      var remaining = request.transactionLimit ?? Int.max
      let pageSize = 1_000
      let pageSQL = sql + (filter.conditions.isEmpty ? " WHERE" : " AND") + " number > ? ORDER BY number LIMIT ?"
      let statement = try connection.statement(pageSQL)
      defer { statement.reset() }
      // Every change row of the page, also those of entities the request does not select: a
      // change's index is its place among all of its transaction's changes (`HistoryChange.index`).
      let changes = try connection.statement(
        "SELECT transaction_number, kind, entity, pk, keys, changed, tombstone, last_pk "
          + "FROM _history_change WHERE id BETWEEN ? AND ? ORDER BY id")
      defer { changes.reset() }
      var reader = ChangeReader(entityNames: filter.entityNames)
      var after = filter.after
      while remaining > 0 {
        let headers = try Self.headers(
          statement, arguments: filter.arguments, after: after, limit: min(remaining, pageSize))
        guard let first = headers.first, let last = headers.last else { return }
        remaining -= headers.count
        after = last.number
        changes.reset()
        try changes.bind(first.firstChange, at: 1)
        try changes.bind(last.lastChange, at: 2)
        try reader.visit(headers, changes: changes, visitor: &visitor)
        if headers.count < pageSize { return }
      }
    }
  }

  /// One page of transaction rows after `after`.
  private static func headers<Statement: DatabaseStatement>(
    _ statement: Statement, arguments: [PrimitiveValue], after: Int64, limit: Int
  ) throws -> [Header] {
    statement.reset()
    for (index, argument) in arguments.enumerated() { try statement.bind(argument, at: Int32(index + 1)) }
    try statement.bind(.integer(after), at: Int32(arguments.count + 1))
    try statement.bind(.integer(Int64(limit)), at: Int32(arguments.count + 2))
    var headers: [Header] = []
    while try statement.step() {
      headers.append(
        Header(
          number: statement.int64(0), timestamp: statement.double(1),
          author: statement.isNull(2) ? nil : statement.string(2),
          contextName: statement.isNull(3) ? nil : statement.string(3), processID: statement.int64(4),
          firstChange: statement.int64(5), lastChange: statement.int64(6)))
    }
    return headers
  }

  /// The conditions on transaction rows a request makes, with their arguments.
  private struct Filter {
    var conditions: [String] = []
    var arguments: [PrimitiveValue] = []
    /// The number the first page of transactions starts after.
    var after = Int64.min
    /// The selected entities' names, when the request selects entities.
    var entityNames: Set<String>?

    /// The request's start, checked against the horizon.
    /// The SQL of the engine the request runs on.
    let dialect: SQLDialect

    init<Connection: DatabaseConnection>(
      _ request: HistoryRequest, storeIdentifier: UUID, firstKept: Int64, connection: Connection
    ) throws {
      dialect = connection.dialect
      let expired = HistoryError.tokenExpired(
        horizon: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: firstKept - 1))
      switch request.start {
      case .beginning:
        guard firstKept <= 1 else { throw expired }
      case .after(let token):
        guard token.storeIdentifier == storeIdentifier else {
          throw HistoryError.foreignStore(expected: storeIdentifier, found: token.storeIdentifier)
        }
        guard token.transactionNumber >= firstKept - 1 else { throw expired }
        // Not a condition of its own: the pages' `number > ?` starts at it (two rowid bounds
        // let SQLite seek by one and filter by the other, rescanning from the start per page).
        after = token.transactionNumber
      case .afterDate(let date):
        if let deleted = try HistoryReader.horizonDate(connection), date < deleted { throw expired }
        conditions.append("timestamp > ?")
        arguments.append(.real(date.timeIntervalSinceReferenceDate))
      }
    }

    /// The request's end, authors and entities.
    mutating func add(_ request: HistoryRequest, storeIdentifier: UUID, model: ManagedObjectModel) throws {
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
      if let endDate = request.endDate {
        conditions.append("timestamp <= ?")
        arguments.append(.real(endDate.timeIntervalSinceReferenceDate))
      }
      if let authors = request.authors {
        conditions.append("author IN (\(dialect.jsonTextValues("?")))")
        arguments.append(.text(HistorySchema.jsonArray(authors.sorted())))
      }
      if !request.excludedAuthors.isEmpty {
        conditions.append("(author IS NULL OR author NOT IN (\(dialect.jsonTextValues("?"))))")
        arguments.append(.text(HistorySchema.jsonArray(request.excludedAuthors.sorted())))
      }
      if request.entities != nil || request.entityNames != nil {
        let names = try Self.entityNames(request, model: model)
        entityNames = Set(names)
        conditions.append(
          "EXISTS (SELECT 1 FROM _history_change c WHERE c.id BETWEEN first_change AND last_change "
            + "AND c.entity IN (\(dialect.jsonTextValues("?"))))"
        )
        arguments.append(.text(HistorySchema.jsonArray(names)))
      }
    }

    /// The names of the entities the request selects, and of their subentities.
    private static func entityNames(_ request: HistoryRequest, model: ManagedObjectModel) throws -> [String] {
      var selected: [EntityDescription] = []
      for type in request.entities ?? [] {
        // Dropping it would narrow the request to nothing, silently.
        guard let entity = model.entity(for: type) else {
          throw HistoryError.invalidRequest("the store has no entity for the class \(type)")
        }
        selected.append(entity)
      }
      for name in request.entityNames ?? [] {
        guard let entity = model.entity(named: name) else {
          throw HistoryError.invalidRequest("the store has no entity named \(name)")
        }
        selected.append(entity)
      }
      return Array(Set(selected.flatMap(\.selfAndDescendantNames))).sorted()
    }
  }

  /// Pairs a page's change rows with its transactions and hands both to a visitor.
  ///
  /// Change rows are in commit order, like the transactions: one rowid range covers them, and
  /// one pass pairs them with their transactions (rows of transactions the request left out,
  /// by author, are skipped). Each change is handed over once: reading costs the same per
  /// change whatever the shape of the history.
  private struct ChangeReader {
    /// The entities whose changes are handed over; nil for all. The others are counted.
    let entityNames: Set<String>?
    /// Updates of one save share their list of attributes: decoded once per distinct text.
    private var attributeLists: [String: [String]] = [:]
    private var entity = ""
    /// The place of the next change in its transaction.
    private var index = 0

    init(entityNames: Set<String>?) {
      self.entityNames = entityNames
    }

    mutating func visit<Visitor: HistoryVisitor, Statement: DatabaseStatement>(
      _ headers: [Header], changes: Statement, visitor: inout Visitor
    ) throws {
      var next = 0  // the first header not begun yet
      var isOpen = false  // headers[next - 1] is begun and not ended
      func finish(before number: Int64) throws {
        if isOpen && headers[next - 1].number < number {
          try visitor.endTransaction()
          isOpen = false
        }
        while next < headers.count && headers[next].number < number {
          try visitor.beginTransaction(headers[next])
          try visitor.endTransaction()
          next += 1
        }
      }
      while try changes.step() {
        let number = changes.int64(0)
        if !(isOpen && headers[next - 1].number == number) {
          try finish(before: number)
          guard next < headers.count, headers[next].number == number else { continue }
          try visitor.beginTransaction(headers[next])
          next += 1
          isOpen = true
          index = 0
        }
        try visitChange(changes, visitor: &visitor)
      }
      try finish(before: .max)
    }

    /// Hands over the rows of the current change row (one, or a run or list of keys), each
    /// with its index; a row of an entity not selected is only counted.
    private mutating func visitChange<Visitor: HistoryVisitor, Statement: DatabaseStatement>(
      _ changes: Statement, visitor: inout Visitor
    ) throws {
      if !changes.textEquals(2, entity) { entity = changes.string(2) }
      let keys: [Int64]?  // nil: one key, or a run
      let run: ClosedRange<Int64>
      if !changes.isNull(4) {
        keys = HistorySchema.integers(fromJSONArray: changes.string(4))
        run = 0...0
      } else if !changes.isNull(7), changes.int64(7) >= changes.int64(3) {
        (keys, run) = (nil, changes.int64(3)...changes.int64(7))
      } else {
        (keys, run) = (nil, changes.int64(3)...changes.int64(3))
      }
      let count = keys?.count ?? run.count
      guard entityNames?.contains(entity) ?? true else {
        index += count
        return
      }
      let kind = HistoryChange.Kind(rawValue: Int(changes.int64(1))) ?? .update
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
      let tombstone = changes.isNull(6) ? nil : changes.string(6)
      if count > 1 { visitor.willVisit(changes: count) }
      if let keys {
        for key in keys {
          try visitor.change(kind, entity: entity, key: key, changed: changed, tombstone: tombstone, index: index)
          index += 1
        }
      } else {
        for key in run {
          try visitor.change(kind, entity: entity, key: key, changed: changed, tombstone: tombstone, index: index)
          index += 1
        }
      }
    }
  }

  // MARK: - Deleting

  /// Deletes every transaction numbered below `number` and moves the horizon up to it.
  /// Runs inside a write transaction. Returns how many transactions were deleted.
  @discardableResult
  static func deleteHistory<Connection: DatabaseConnection>(before number: Int64, connection: Connection) throws
    -> Int
  {
    // Not past the next transaction: the horizon never runs ahead of the numbers given, so the
    // next number stays one above the newest (as the writer's `WriterMemo` keeps it).
    let number = min(number, try currentNumber(connection) + 1)
    let firstKept = try Self.firstKept(connection)
    guard number > firstKept else { return 0 }
    let latest = try connection.statement("SELECT max(timestamp) FROM _history_transaction WHERE number < ?")
    try latest.bind(number, at: 1)
    let deletedUntil = try latest.step() && !latest.isNull(0) ? latest.double(0) : nil
    latest.reset()
    // Change rows are in commit order: everything below the first change of the oldest kept
    // transaction goes, as one rowid range.
    let changes = try connection.statement(
      "DELETE FROM _history_change WHERE id < coalesce("
        + "(SELECT first_change FROM _history_transaction WHERE number >= ? ORDER BY number LIMIT 1), "
        + "(SELECT max(id) + 1 FROM _history_change))"
    )
    try changes.bind(number, at: 1)
    try changes.run()
    let transactions = try connection.statement("DELETE FROM _history_transaction WHERE number < ?")
    try transactions.bind(number, at: 1)
    try transactions.run()
    let count = connection.changes
    let metadata = try connection.statement(
      "INSERT INTO _metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    try metadata.bind("history_horizon", at: 1)
    try metadata.bind(String(number), at: 2)
    try metadata.run()
    if let deletedUntil {
      metadata.reset()
      try metadata.bind("history_horizon_timestamp", at: 1)
      try metadata.bind(String(deletedUntil), at: 2)
      try metadata.run()
    }
    return count
  }

  /// The number of the first transaction committed after `date` (or the next number when
  /// none was), for deleting history before a date.
  static func firstNumber<Connection: DatabaseConnection>(notBefore date: Date, connection: Connection) throws
    -> Int64
  {
    let statement = try connection.statement("SELECT min(number) FROM _history_transaction WHERE timestamp >= ?")
    defer { statement.reset() }
    try statement.bind(date.timeIntervalSinceReferenceDate, at: 1)
    if try statement.step(), !statement.isNull(0) { return statement.int64(0) }
    return try currentNumber(connection) + 1
  }
}

/// What `HistoryReader.visit` hands transactions to: each transaction's row, then its changes
/// one row at a time, then its end.
protocol HistoryVisitor {
  mutating func beginTransaction(_ header: HistoryReader.Header) throws
  /// One changed row. `tombstone` is the stored JSON text of a delete's tombstone.
  /// `index` is the change's place among all of its transaction's changes
  /// (`HistoryChange.index`).
  mutating func change(
    _ kind: HistoryChange.Kind, entity: String, key: Int64, changed: [String], tombstone: String?, index: Int
  ) throws
  mutating func endTransaction() throws
  /// The next `count` changes are of one change row (a group of rows): room can be made for
  /// them at once.
  mutating func willVisit(changes count: Int)
}

extension HistoryVisitor {
  mutating func willVisit(changes count: Int) {}
}

/// Collects `HistoryTransaction` values: what `fetchHistory` returns.
struct TransactionCollector: HistoryVisitor {
  let storeIdentifier: UUID
  var transactions: [HistoryTransaction] = []
  private var header: HistoryReader.Header?
  private var changes: [HistoryChange] = []

  init(storeIdentifier: UUID) {
    self.storeIdentifier = storeIdentifier
  }

  mutating func beginTransaction(_ header: HistoryReader.Header) {
    self.header = header
  }

  /// Room for a large group's changes at once: appending a million one at a time copied the
  /// array some twenty times as it grew.
  mutating func willVisit(changes count: Int) {
    let needed = changes.count + count
    // At least doubling, as appending would: many small groups must not copy at each one.
    if needed > changes.capacity { changes.reserveCapacity(max(needed, changes.capacity * 2)) }
  }

  mutating func change(
    _ kind: HistoryChange.Kind, entity: String, key: Int64, changed: [String], tombstone: String?, index: Int
  ) {
    changes.append(
      HistoryChange(
        changeType: kind,
        objectID: AnyManagedID(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key)),
        updatedProperties: changed,
        tombstone: tombstone.map { HistoryTombstone(entityName: entity, json: $0, storeIdentifier: storeIdentifier) },
        index: index))
  }

  mutating func endTransaction() {
    guard let header else { return }
    transactions.append(
      HistoryTransaction(
        transactionNumber: header.number,
        token: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: header.number),
        timestamp: Date(timeIntervalSinceReferenceDate: header.timestamp), author: header.author,
        contextName: header.contextName, processID: Int32(truncatingIfNeeded: header.processID),
        changes: changes))
    changes = []
    self.header = nil
  }
}
