import Foundation

extension PersistentStore {
  /// The position after the last transaction recorded in the store's history.
  ///
  /// ```swift
  /// let token = try store.currentHistoryToken()
  /// ```
  public func currentHistoryToken() throws -> HistoryToken {
    try withHistoryReader { connection in
      HistoryToken(storeIdentifier: identifier, transactionNumber: try HistoryReader.currentNumber(connection))
    }
  }

  /// The oldest position history can still be read from: history after it is complete.
  ///
  /// ```swift
  /// let everything = try store.fetchHistory(HistoryRequest(after: try store.historyHorizon()))
  /// ```
  public func historyHorizon() throws -> HistoryToken {
    try withHistoryReader { connection in
      HistoryToken(storeIdentifier: identifier, transactionNumber: try HistoryReader.firstKept(connection) - 1)
    }
  }

  /// The transactions the request selects, in transaction order.
  ///
  /// ```swift
  /// var request = HistoryRequest(after: token)
  /// request.transactionLimit = 500
  /// for transaction in try store.fetchHistory(request) {
  ///   for change in transaction.changes where change.changeType == .delete { print(change.objectID) }
  /// }
  /// ```
  ///
  /// - Throws: `HistoryError.tokenExpired` when history after the start was deleted,
  ///   `HistoryError.foreignStore` for a token of another store.
  public func fetchHistory(_ request: HistoryRequest) throws -> [HistoryTransaction] {
    try withHistoryReader { connection in
      if let sqlite = connection as? SQLiteConnection {  // specialized
        return try HistoryReader.fetch(request, storeIdentifier: identifier, model: model, connection: sqlite)
      }
      return try HistoryReader.fetch(request, storeIdentifier: identifier, model: model, connection: connection)
    }
  }

  /// Writes the transactions the request selects in the library's JSON form (see
  /// `HistoryTransaction.jsonData()`), in one read transaction, in constant memory: `write`
  /// receives chunks of at most about 64 KiB as they fill, so any amount of history, a
  /// transaction of a million changes included, is never held at once.
  ///
  /// ```swift
  /// let handle = try FileHandle(forWritingTo: url)
  /// let summary = try store.exportHistory(HistoryRequest(after: token)) { chunk in
  ///   try handle.write(contentsOf: chunk)
  /// }
  /// print(summary.transactions, summary.lastToken?.stringRepresentation ?? "nothing new")
  /// ```
  ///
  /// - Throws: as `fetchHistory(_:)`, or what `write` throws (the export stops there).
  @discardableResult
  public func exportHistory(
    _ request: HistoryRequest, format: HistoryExportFormat = .ndjson,
    to write: (UnsafeRawBufferPointer) throws -> Void
  ) throws -> HistoryExportSummary {
    // A connection of its own: an export may take long, and `write` may read history of
    // this store itself; the shared history reader is held by neither.
    let connection = try makeReader()
    return try withoutActuallyEscaping(write) { write in
      var exporter = HistoryJSONExporter(
        writer: HistoryJSONWriter(storeIdentifier: identifier, sink: write), format: format)
      if let sqlite = connection as? SQLiteConnection {  // specialized
        try HistoryReader.visit(
          request, storeIdentifier: identifier, model: model, connection: sqlite, visitor: &exporter)
      } else {
        try HistoryReader.visit(
          request, storeIdentifier: identifier, model: model, connection: connection, visitor: &exporter)
      }
      try exporter.finish()
      return exporter.summary
    }
  }

  /// Deletes the history before `token`; the token's own transaction is kept, so history
  /// after the token stays readable. Returns the number of transactions deleted. It does not
  /// look at consumers' checkpoints: ``HistoryPruner`` does.
  ///
  /// ```swift
  /// try store.deleteHistory(before: try store.currentHistoryToken())
  /// ```
  @discardableResult
  public func deleteHistory(before token: HistoryToken) throws -> Int {
    guard token.storeIdentifier == identifier else {
      throw HistoryError.foreignStore(expected: identifier, found: token.storeIdentifier)
    }
    return try writeWithoutHistory { connection in
      try HistoryReader.deleteHistory(before: token.transactionNumber, connection: connection)
    }
  }

  /// Deletes the history committed before `date`; a transaction committed at exactly `date`
  /// is kept (Core Data's rule: "before" is strictly before, for dates and tokens alike).
  /// Returns the number of transactions deleted.
  ///
  /// ```swift
  /// try store.deleteHistory(before: Date().addingTimeInterval(-30 * 86_400))
  /// ```
  @discardableResult
  public func deleteHistory(before date: Date) throws -> Int {
    try writeWithoutHistory { connection in
      let first = try HistoryReader.firstNumber(notBefore: date, connection: connection)
      return try HistoryReader.deleteHistory(before: first, connection: connection)
    }
  }

  // MARK: - Consumers

  /// The durable consumers (`HistoryMerger`s) registered in the store, by name.
  ///
  /// ```swift
  /// let stale = try store.historyConsumers().filter { $0.isStale() }
  /// ```
  public func historyConsumers() throws -> [HistoryConsumer] {
    try withHistoryReader { connection in
      try connection.readTransaction { try HistoryConsumers.all(storeIdentifier: identifier, connection: connection) }
    }
  }

  /// Forgets a consumer, so that its checkpoint no longer holds history back.
  ///
  /// ```swift
  /// for consumer in try store.historyConsumers() where consumer.isStale() {
  ///   try store.removeHistoryConsumer(named: consumer.name)
  /// }
  /// ```
  ///
  /// - Throws: `HistoryError.unknownConsumer` when there is none of that name.
  public func removeHistoryConsumer(named name: String) throws {
    let removed = try writeWithoutHistory { connection in
      try HistoryConsumers.remove(name: name, connection: connection)
    }
    guard removed else { throw HistoryError.unknownConsumer(name) }
  }

  /// Declares a consumer before it first runs, so that history it has not read is kept for
  /// it from now on, as for a running one: a prune never deletes past its checkpoint (while it
  /// is within its lease; past it, the pruner reports it stale, and prunes past it only when
  /// told to). A `HistoryMerger` of that name goes on from the checkpoint when it starts. A
  /// consumer that exists already is returned as it is.
  ///
  /// ```swift
  /// // At install time, before the exporter service runs for the first time:
  /// try store.registerHistoryConsumer(name: "exporter", startingAt: .beginning)
  /// ```
  ///
  /// - Throws: `HistoryError.invalidConsumerName`, `.invalidLease`, `.foreignStore` for a
  ///   token of another store, `.tokenExpired` for a token older than the horizon (or
  ///   `.beginning` of a store whose history was deleted), and
  ///   `.invalidRequest` for a token after the newest transaction; the store is unchanged.
  @discardableResult
  public func registerHistoryConsumer(
    name: String, startingAt start: HistoryConsumer.Start = .now, lease: Duration = .seconds(3600)
  ) throws -> HistoryConsumer {
    guard !name.isEmpty, name.count <= 200 else { throw HistoryError.invalidConsumerName(name) }
    guard lease > .zero else { throw HistoryError.invalidLease(lease) }
    if case .after(let token) = start, token.storeIdentifier != identifier {
      throw HistoryError.foreignStore(expected: identifier, found: token.storeIdentifier)
    }
    let identifier = identifier
    return try writeWithoutHistory { connection in
      if let existing = try HistoryConsumers.all(storeIdentifier: identifier, connection: connection)
        .first(where: { $0.name == name })
      {
        return existing
      }
      let number: Int64
      switch start {
      case .now: number = try HistoryReader.currentNumber(connection)
      case .beginning: number = try Self.beginning(connection, identifier: identifier)
      case .after(let token):
        let (firstKept, newest) = (try HistoryReader.firstKept(connection), try HistoryReader.currentNumber(connection))
        guard token.transactionNumber >= firstKept - 1 else {
          throw HistoryError.tokenExpired(
            horizon: HistoryToken(storeIdentifier: identifier, transactionNumber: firstKept - 1))
        }
        guard token.transactionNumber <= newest else {
          throw HistoryError.invalidRequest("transaction \(token.transactionNumber) is after the newest, \(newest)")
        }
        number = token.transactionNumber
      }
      try HistoryConsumers.write(
        name: name, storeIdentifier: identifier, number: number, lease: lease, advanced: true, connection: connection)
      return try HistoryConsumers.all(storeIdentifier: identifier, connection: connection).first { $0.name == name }
        ?? HistoryConsumer(
          name: name, checkpoint: HistoryToken(storeIdentifier: identifier, transactionNumber: number),
          advancedAt: Date(), seenAt: Date(), lease: lease)
    }
  }

  /// The checkpoint of a consumer that starts at the beginning: 0, before the first
  /// transaction. When history was deleted there is no such start: `tokenExpired`, never a
  /// start at the horizon that would pass over the deleted transactions without a word.
  static func beginning(_ connection: some DatabaseConnection, identifier: UUID) throws -> Int64 {
    let horizon = try HistoryReader.firstKept(connection) - 1
    guard horizon == 0 else {
      throw HistoryError.tokenExpired(horizon: HistoryToken(storeIdentifier: identifier, transactionNumber: horizon))
    }
    return 0
  }

  /// Registers a consumer, or finds its row, in one write transaction — so that a prune
  /// (also one write transaction) either sees the row or happened before the position was
  /// taken. A new consumer starts after the newest transaction, or with `fromBeginning` before
  /// the first (`tokenExpired` if history was deleted, and nothing is written; with
  /// `acceptsHorizon`, at the horizon, which `tookHorizon` says). Returns the consumer as
  /// stored (a row of another store is returned unchanged, for the caller to refuse).
  func registerHistoryConsumer(_ name: String, fromBeginning: Bool, acceptsHorizon: Bool, lease: Duration) throws
    -> (consumer: HistoryConsumer, tookHorizon: Bool)
  {
    let identifier = identifier
    return try writeWithoutHistory { connection in
      let existing = try HistoryConsumers.all(storeIdentifier: identifier, connection: connection)
        .first { $0.name == name }
      if let existing, existing.checkpoint.storeIdentifier != identifier { return (existing, false) }
      var tookHorizon = false
      let start = { () throws -> Int64 in
        guard fromBeginning else { return try HistoryReader.currentNumber(connection) }
        let horizon = try HistoryReader.firstKept(connection) - 1
        guard acceptsHorizon else { return try Self.beginning(connection, identifier: identifier) }
        tookHorizon = horizon > 0
        return horizon
      }
      let number = try existing?.checkpoint.transactionNumber ?? start()
      try HistoryConsumers.write(
        name: name, storeIdentifier: identifier, number: number, lease: lease, advanced: existing == nil,
        connection: connection)
      let consumer =
        try HistoryConsumers.all(storeIdentifier: identifier, connection: connection).first { $0.name == name }
        ?? HistoryConsumer(
          name: name, checkpoint: HistoryToken(storeIdentifier: identifier, transactionNumber: number),
          advancedAt: Date(), seenAt: Date(), lease: lease)
      return (consumer, tookHorizon)
    }
  }

  /// Records what stopped a consumer (`HistoryConsumer.failure`), without history of its own;
  /// the consumer's next checkpoint past it clears it.
  func recordConsumerFailure(consumer: String, message: String, transactionNumber: Int64) throws {
    let failure = HistoryConsumer.Failure(message: message, transactionNumber: transactionNumber, date: Date())
    try writeWithoutHistory { connection in
      try HistoryConsumers.recordFailure(failure, name: consumer, connection: connection)
    }
  }

  /// Writes a consumer's checkpoint row, without history of its own.
  func writeCheckpoint(consumer: String, number: Int64, lease: Duration, advanced: Bool) throws {
    let identifier = identifier
    try writeWithoutHistory { connection in
      try HistoryConsumers.write(
        name: consumer, storeIdentifier: identifier, number: number, lease: lease, advanced: advanced,
        connection: connection)
    }
  }

  /// Runs `body` on the store's own reader (of its engine), in a read transaction.
  func withHistoryReader<Result: Sendable>(_ body: @Sendable (any DatabaseConnection) throws -> Result) throws
    -> Result
  {
    if engine != nil {
      return try engineReader.withLock { reader in
        if reader == nil { reader = try makeReader() }
        guard let connection = reader else { throw StoreError.notATypedStore(path: url.absoluteString) }
        return try connection.readTransaction { try body(connection) }
      }
    }
    return try historyReader.withLock { reader in
      if reader == nil { reader = try makeReadConnection() }
      guard let connection = reader else { throw StoreError.notATypedStore(path: url.path) }
      // In a read transaction, whose first step is the check against a migration (`ModelStamp`).
      let begins = !connection.isInTransaction
      if begins { try connection.beginReadTransaction() }
      defer { if begins { connection.endReadTransaction() } }
      return try body(connection)
    }
  }

  /// Runs `body` in one write transaction of the store's engine that records no history of its
  /// own (a consumer's checkpoint, a deletion of history).
  func writeWithoutHistory<Result: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> Result)
    throws -> Result
  {
    if let engine {
      guard !options.isReadOnly else { throw StoreError.readOnly(path: url.absoluteString) }
      return try engine.write(ConnectionWork(body: body), info: TransactionInfo(), committed: publishCommitted)
    }
    return try writer.write(TransactionInfo()) { connection, _ in try body(connection) }
  }
}

/// Work on the write transaction's connection alone, through the seam's protocols.
private struct ConnectionWork<Result: Sendable>: StoreWork {
  let body: @Sendable (any DatabaseConnection) throws -> Result

  func apply<C: DatabaseConnection>(connection: C, history: HistoryRecorder<C>) throws -> Result {
    try body(connection)
  }
}
