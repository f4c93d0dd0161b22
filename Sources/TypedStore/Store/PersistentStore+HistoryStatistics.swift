import Foundation

extension PersistentStore {
  /// What a store's history holds, counted in SQL without reading it.
  ///
  /// ```swift
  /// let stats = try store.historyStatistics()
  /// print(stats.transactions, stats.changesByEntity["Note"]?.deletes ?? 0, stats.horizon)
  /// ```
  public struct HistoryStatistics: Sendable, Equatable {
    /// How many changes of each kind history holds for one entity.
    public struct ChangeCounts: Sendable, Equatable, Codable {
      /// Inserted rows.
      public var inserts = 0
      /// Updated rows.
      public var updates = 0
      /// Deleted rows.
      public var deletes = 0
      /// All three together.
      public var total: Int { inserts + updates + deletes }

      /// Counts of each kind.
      public init(inserts: Int = 0, updates: Int = 0, deletes: Int = 0) {
        self.inserts = inserts
        self.updates = updates
        self.deletes = deletes
      }
    }

    /// Transactions kept.
    public var transactions: Int
    /// Changed rows kept (a change row standing for many rows counts each).
    public var changes: Int
    /// Changes by concrete entity name.
    public var changesByEntity: [String: ChangeCounts]
    /// Transactions by author; those without one are under `unattributedTransactions`.
    public var transactionsByAuthor: [String: Int]
    /// Transactions whose author was nil.
    public var unattributedTransactions: Int
    /// The horizon: history after it is complete.
    public var horizon: HistoryToken
    /// The token after the newest transaction.
    public var currentToken: HistoryToken
    /// When the oldest kept transaction committed (nil when none is kept).
    public var oldestTimestamp: Date?
    /// When the newest kept transaction committed (nil when none is kept).
    public var newestTimestamp: Date?
    /// Bytes of the store file's pages that hold history (its tables and their indexes), or nil
    /// when this SQLite cannot tell (it was built without the `dbstat` table).
    public var bytesOnDisk: Int?
  }

  /// Counts what history holds: transactions, changes by entity and kind, authors, its span
  /// and its size on disk. One read transaction; nothing is decoded per change.
  ///
  /// ```swift
  /// let stats = try store.historyStatistics()
  /// print(stats.transactions, stats.transactionsByAuthor, stats.bytesOnDisk ?? 0)
  /// ```
  public func historyStatistics() throws -> HistoryStatistics {
    try withHistoryReader { connection in
      try connection.readTransaction {
        let firstKept = try HistoryReader.firstKept(connection)
        let current = try HistoryReader.currentNumber(connection)
        var statistics = HistoryStatistics(
          transactions: 0, changes: 0, changesByEntity: [:], transactionsByAuthor: [:], unattributedTransactions: 0,
          horizon: HistoryToken(storeIdentifier: identifier, transactionNumber: firstKept - 1),
          currentToken: HistoryToken(storeIdentifier: identifier, transactionNumber: current))
        try Self.countTransactions(into: &statistics, connection: connection)
        try Self.countChanges(into: &statistics, connection: connection)
        statistics.bytesOnDisk = try? connection.scalarInt(connection.dialect.historyBytesSQL).map { Int($0) }
        return statistics
      }
    }
  }

  /// Transactions by author, and the span of their timestamps.
  private static func countTransactions(
    into statistics: inout HistoryStatistics, connection: some DatabaseConnection
  ) throws {
    let authors = try connection.statement(
      "SELECT author, count(*), min(timestamp), max(timestamp) FROM _history_transaction GROUP BY author")
    defer { authors.reset() }
    var oldest = Double.infinity
    var newest = -Double.infinity
    while try authors.step() {
      let count = Int(authors.int64(1))
      statistics.transactions += count
      if authors.isNull(0) {
        statistics.unattributedTransactions += count
      } else {
        statistics.transactionsByAuthor[authors.string(0)] = count
      }
      oldest = min(oldest, authors.double(2))
      newest = max(newest, authors.double(3))
    }
    if statistics.transactions > 0 {
      statistics.oldestTimestamp = Date(timeIntervalSinceReferenceDate: oldest)
      statistics.newestTimestamp = Date(timeIntervalSinceReferenceDate: newest)
    }
  }

  /// Changed rows by entity and kind (a change row standing for many rows counts each).
  private static func countChanges(
    into statistics: inout HistoryStatistics, connection: some DatabaseConnection
  ) throws {
    let changes = try connection.statement(
      """
      SELECT entity, kind, sum(CASE WHEN keys IS NOT NULL THEN \(connection.dialect.jsonArrayLength("keys"))
        WHEN last_pk IS NOT NULL AND last_pk >= pk THEN last_pk - pk + 1 ELSE 1 END)
      FROM _history_change GROUP BY entity, kind
      """)
    defer { changes.reset() }
    while try changes.step() {
      let count = Int(changes.int64(2))
      var counts = statistics.changesByEntity[changes.string(0), default: HistoryStatistics.ChangeCounts()]
      switch HistoryChange.Kind(rawValue: Int(changes.int64(1))) {
      case .insert: counts.inserts += count
      case .update: counts.updates += count
      case .delete: counts.deletes += count
      case nil: continue
      }
      statistics.changesByEntity[changes.string(0)] = counts
      statistics.changes += count
    }
  }
}
