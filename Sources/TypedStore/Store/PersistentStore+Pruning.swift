import Foundation

// A prune is a store write: it goes through the one write path (`StoreWriter.write`), like a
// save. `HistoryPruner` and `AutomaticHistoryPruning` both call `pruneHistory`.
extension PersistentStore {
  /// Deletes the history `policy` selects, capped at the consumers' checkpoints, in one write
  /// transaction (a dry run: one read transaction, deleting nothing).
  func pruneHistory(
    _ policy: HistoryPruningPolicy, includingStale: Bool, authors: Set<String>? = nil, dryRun: Bool,
    archive: (@Sendable (HistoryTransaction) throws -> Void)?,
    willDelete: (@Sendable (HistoryPruningReport) throws -> Void)? = nil
  ) throws -> HistoryPruningReport {
    // A prune is one write transaction; a dry run reads the same in one read transaction,
    // which sees one snapshot as consistent, and so runs on a store opened read-only too.
    let (identifier, model) = (identifier, model)
    let plan: @Sendable (any DatabaseConnection) throws -> HistoryPruningReport = { connection in
      try Self.pruneHistory(
        policy, includingStale: includingStale, authors: authors, dryRun: dryRun, archive: archive,
        willDelete: willDelete, store: identifier, model: model, connection: connection)
    }
    if dryRun {
      if engine != nil {
        // A connection of its own, as SQLite's dry run reads on the writer's: the archive's
        // callbacks may read this store's history through its shared reader.
        let connection = try makeReader()
        return try connection.readTransaction { try plan(connection) }
      }
      return try writer.withConnection { connection in try connection.readTransaction { try plan(connection) } }
    }
    return try writeWithoutHistory(plan)
  }

  /// `pruneHistory` on `connection`, inside the caller's write transaction (or, for a dry run,
  /// read transaction), on either engine: the bounds, the archive, the report, the deletion.
  package static func pruneHistory<Connection: DatabaseConnection>(
    _ policy: HistoryPruningPolicy, includingStale: Bool, authors: Set<String>?, dryRun: Bool,
    archive: ((HistoryTransaction) throws -> Void)?, willDelete: ((HistoryPruningReport) throws -> Void)?,
    store identifier: UUID, model: ManagedObjectModel, connection: Connection
  ) throws -> HistoryPruningReport {
    let bounds = try pruneBounds(
      policy, includingStale: includingStale, authors: authors, store: identifier, connection: connection)
    let deleted = try archiveHistory(bounds, archive: archive, store: identifier, model: model, connection: connection)
    let report = HistoryPruningReport(
      deletedTransactions: deleted,
      horizon: HistoryToken(storeIdentifier: identifier, transactionNumber: max(bounds.firstKept, bounds.target) - 1),
      heldBackBy: bounds.heldBackBy.sorted(), staleConsumers: bounds.stale,
      prunedPastStale: bounds.prunedPastStale, isDryRun: dryRun, heldBackByTransaction: bounds.heldBackByTransaction)
    try willDelete?(report)
    if !dryRun && bounds.target > bounds.firstKept {
      try HistoryReader.deleteHistory(before: bounds.target, connection: connection)
    }
    return report
  }

  /// Where a prune stops, and who stopped it.
  private struct PruneBounds {
    /// The first transaction the store keeps now.
    var firstKept: Int64
    /// The first transaction to keep after the prune.
    var target: Int64
    var heldBackBy: [String]
    var stale: [String]
    var prunedPastStale: [String]
    var heldBackByTransaction: HistoryPruningReport.HeldBackTransaction?
  }

  /// The first transaction to keep, as the policy asks, then capped at the checkpoints.
  private static func pruneBounds<Connection: DatabaseConnection>(
    _ policy: HistoryPruningPolicy, includingStale: Bool, authors: Set<String>?, store identifier: UUID,
    connection: Connection
  ) throws -> PruneBounds {
    let firstKept = try HistoryReader.firstKept(connection)
    let current = try HistoryReader.currentNumber(connection)
    var target = try policyTarget(
      policy, firstKept: firstKept, current: current, store: identifier, connection: connection)
    let consumers = try HistoryConsumers.all(storeIdentifier: identifier, connection: connection)
    let now = Date()
    let stale = consumers.filter { $0.isStale(at: now) }.map(\.name)
    let holding = consumers.filter { includingStale ? !$0.isStale(at: now) : true }
    // Strictly before the lowest checkpoint: the last transaction a consumer read is kept, as
    // `.before(token)` keeps the token's (the checkpoint is a token), and nothing after it goes.
    if case .consumed = policy, let lowest = holding.map(\.checkpoint.transactionNumber).min() {
      target = lowest
    }
    var heldBackBy: [String] = []
    for consumer in holding where consumer.checkpoint.transactionNumber < target {
      heldBackBy.append(consumer.name)
    }
    if let lowest = holding.map(\.checkpoint.transactionNumber).min() { target = min(target, lowest) }
    target = min(max(target, firstKept), current + 1)
    var heldBackByTransaction: HistoryPruningReport.HeldBackTransaction?
    if let authors, let other = try Self.firstTransaction(notBy: authors, from: firstKept, connection: connection),
      other.transactionNumber < target
    {
      target = other.transactionNumber
      heldBackByTransaction = other
    }
    let prunedPastStale =
      includingStale
      ? consumers.filter { $0.isStale(at: now) && $0.checkpoint.transactionNumber + 1 < target }.map(\.name) : []
    return PruneBounds(
      firstKept: firstKept, target: target, heldBackBy: heldBackBy, stale: stale, prunedPastStale: prunedPastStale,
      heldBackByTransaction: heldBackByTransaction)
  }

  /// The first transaction at or after `first` whose author is not one of `authors` (or that
  /// has no author): a prune limited to those authors keeps it and everything after it, so
  /// that history stays complete after its horizon. Nil when there is none.
  private static func firstTransaction<Connection: DatabaseConnection>(
    notBy authors: Set<String>, from first: Int64, connection: Connection
  ) throws -> HistoryPruningReport.HeldBackTransaction? {
    let statement = try connection.statement(
      "SELECT number, author FROM _history_transaction WHERE number >= ? "
        + "AND (author IS NULL OR author NOT IN (\(connection.dialect.jsonTextValues("?")))) ORDER BY number LIMIT 1")
    defer { statement.reset() }
    try statement.bind(first, at: 1)
    let list = try JSONEncoder().encode(authors.sorted())
    try statement.bind(String(decoding: list, as: UTF8.self), at: 2)
    guard try statement.step() else { return nil }
    return HistoryPruningReport.HeldBackTransaction(
      transactionNumber: statement.int64(0), author: statement.isNull(1) ? nil : statement.string(1))
  }

  /// The first transaction to keep as `policy` alone asks.
  private static func policyTarget<Connection: DatabaseConnection>(
    _ policy: HistoryPruningPolicy, firstKept: Int64, current: Int64, store identifier: UUID, connection: Connection
  ) throws -> Int64 {
    switch policy {
    case .consumed:
      return firstKept  // raised to the consumers' checkpoints; nothing without consumers
    case .olderThan(let age):
      return try HistoryReader.firstNumber(
        notBefore: Date().addingTimeInterval(-age.inSeconds), connection: connection)
    case .keepLast(let count):
      guard count >= 0 else { throw HistoryError.invalidRequest("keepLast needs a count of 0 or more") }
      return current - Int64(count) + 1
    case .before(let token):
      guard token.storeIdentifier == identifier else {
        throw HistoryError.foreignStore(expected: identifier, found: token.storeIdentifier)
      }
      return token.transactionNumber
    }
  }

  /// Hands everything about to go to `archive`, a page at a time; returns how many
  /// transactions go.
  private static func archiveHistory<Connection: DatabaseConnection>(
    _ bounds: PruneBounds, archive: ((HistoryTransaction) throws -> Void)?, store identifier: UUID,
    model: ManagedObjectModel, connection: Connection
  ) throws -> Int {
    guard bounds.target > bounds.firstKept else { return 0 }
    var deleted = 0
    var position = bounds.firstKept - 1
    while position < bounds.target - 1 {
      var request = HistoryRequest(after: HistoryToken(storeIdentifier: identifier, transactionNumber: position))
      request.end = HistoryToken(storeIdentifier: identifier, transactionNumber: bounds.target - 1)
      request.transactionLimit = 1000
      let page = try HistoryReader.fetch(request, storeIdentifier: identifier, model: model, connection: connection)
      guard let last = page.last else { break }
      if let archive { for transaction in page { try archive(transaction) } }
      deleted += page.count
      position = last.transactionNumber
    }
    return deleted
  }
}
