import Foundation

/// Deletes history that every live consumer has read.
///
/// ```swift
/// let pruner = HistoryPruner(container: container)
/// let report = try pruner.prune(.olderThan(.seconds(7 * 86_400)))
/// print(report.deletedTransactions, report.horizon, report.heldBackBy)
/// ```
///
/// Whatever the policy asks, the pruner never deletes a transaction a live consumer (a
/// `HistoryMerger`'s checkpoint row, seen within its lease) has not processed: the target is
/// capped at the lowest live checkpoint. A stale consumer (not seen within its lease) holds
/// history back too, and is reported by name, unless the caller passes `includingStale`. The
/// whole prune — reading the checkpoints, handing each transaction to `archive`, deleting —
/// is one write transaction, so no consumer can register or move in between, and an
/// `archive` that throws leaves everything as it was.
public struct HistoryPruner: Sendable {
  /// What to delete, before the cap of the consumers' checkpoints.
  public typealias Policy = HistoryPruningPolicy

  /// What a prune did (or, for a dry run, would do).
  public struct Report: Sendable, Equatable {
    /// Transactions deleted (or that would be).
    public var deletedTransactions: Int
    /// The horizon after the prune: history after it is kept.
    public var horizon: HistoryToken
    /// Live consumers whose checkpoints stopped the prune short of what the policy asked.
    public var heldBackBy: [String]
    /// Consumers not seen within their lease.
    public var staleConsumers: [String]
    /// Stale consumers whose unread history was deleted (only with `includingStale`).
    public var prunedPastStale: [String]
    /// Whether nothing was deleted because this was a dry run.
    public var isDryRun: Bool
  }

  public let store: PersistentStore

  /// A pruner of the container's store.
  public init(container: PersistentContainer) {
    store = container.persistentStore
  }

  /// A pruner of a store.
  public init(store: PersistentStore) {
    self.store = store
  }

  /// The store's consumers, by name.
  public func consumers() throws -> [HistoryConsumer] {
    try store.historyConsumers()
  }

  /// Forgets a consumer, so that its checkpoint no longer holds history back.
  ///
  /// - Throws: `HistoryError.unknownConsumer` when there is none of that name.
  public func removeConsumer(named name: String) throws {
    try store.removeHistoryConsumer(named: name)
  }

  /// Deletes the history `policy` selects, capped at the lowest checkpoint of the live
  /// consumers (and of the stale ones, unless `includingStale`).
  ///
  /// ```swift
  /// try pruner.prune(.consumed, archive: { transaction in try archive.write(transaction) })
  /// ```
  ///
  /// - Parameters:
  ///   - dryRun: report what would go, delete nothing: the store is only read (one read
  ///     transaction), so a dry run works on a store opened with `StoreOptions.isReadOnly`.
  ///   - archive: called with each transaction before it is deleted, in order; if it throws,
  ///     nothing is deleted and the error is rethrown.
  ///   - willDelete: called once with the report after the last transaction went through
  ///     `archive` and before anything is deleted, still inside the write transaction: the
  ///     place to flush and close an archive file. If it throws, nothing is deleted.
  /// - Throws: `HistoryError.historyNotRecorded`, `StoreError.readOnly`, or what `archive`
  ///   or `willDelete` throws; nothing is deleted then.
  @discardableResult
  public func prune(
    _ policy: Policy, includingStale: Bool = false, dryRun: Bool = false,
    archive: (@Sendable (HistoryTransaction) throws -> Void)? = nil,
    willDelete: (@Sendable (Report) throws -> Void)? = nil
  ) throws -> Report {
    guard store.options.recordsHistory else { throw HistoryError.historyNotRecorded }
    return try store.pruneHistory(
      policy, includingStale: includingStale, dryRun: dryRun, archive: archive, willDelete: willDelete)
  }
}

extension PersistentStore {
  /// The prune of `HistoryPruner.prune`, in one write transaction.
  func pruneHistory(
    _ policy: HistoryPruningPolicy, includingStale: Bool, dryRun: Bool,
    archive: (@Sendable (HistoryTransaction) throws -> Void)?,
    willDelete: (@Sendable (HistoryPruner.Report) throws -> Void)? = nil
  ) throws -> HistoryPruner.Report {
    let identifier = identifier
    let model = model
    // A prune is one write transaction; a dry run reads the same in one read transaction,
    // which sees one snapshot as consistent, and so runs on a store opened read-only too.
    let plan: @Sendable (SQLiteConnection) throws -> HistoryPruner.Report = { connection in
      let firstKept = try HistoryReader.firstKept(connection)
      let current = try HistoryReader.currentNumber(connection)
      // The first transaction to keep, as the policy asks.
      var target: Int64
      switch policy {
      case .consumed:
        target = firstKept  // raised to the consumers' checkpoints below; nothing without consumers
      case .olderThan(let age):
        target = try HistoryReader.firstNumber(after: Date().addingTimeInterval(-age.inSeconds), connection: connection)
      case .keepLast(let count):
        guard count >= 0 else { throw HistoryError.invalidRequest("keepLast needs a count of 0 or more") }
        target = current - Int64(count) + 1
      case .before(let token):
        guard token.storeIdentifier == identifier else {
          throw HistoryError.foreignStore(expected: identifier, found: token.storeIdentifier)
        }
        target = token.transactionNumber
      }
      let consumers = try HistoryConsumers.all(storeIdentifier: identifier, connection: connection)
      let now = Date()
      let stale = consumers.filter { $0.isStale(at: now) }.map(\.name)
      let holding = consumers.filter { includingStale ? !$0.isStale(at: now) : true }
      if case .consumed = policy, let lowest = holding.map(\.checkpoint.transactionNumber).min() {
        target = lowest + 1
      }
      var heldBackBy: [String] = []
      for consumer in holding where consumer.checkpoint.transactionNumber + 1 < target {
        heldBackBy.append(consumer.name)
      }
      if let lowest = holding.map(\.checkpoint.transactionNumber).min() { target = min(target, lowest + 1) }
      target = min(max(target, firstKept), current + 1)
      let prunedPastStale =
        includingStale
        ? consumers.filter { $0.isStale(at: now) && $0.checkpoint.transactionNumber + 1 < target }.map(\.name) : []

      var deleted = 0
      if target > firstKept {
        // Everything about to go passes through the archive first, a page at a time.
        var position = firstKept - 1
        while position < target - 1 {
          var request = HistoryRequest(after: HistoryToken(storeIdentifier: identifier, transactionNumber: position))
          request.end = HistoryToken(storeIdentifier: identifier, transactionNumber: target - 1)
          request.transactionLimit = 1000
          let page = try HistoryReader.fetch(request, storeIdentifier: identifier, model: model, connection: connection)
          guard let last = page.last else { break }
          if let archive { for transaction in page { try archive(transaction) } }
          deleted += page.count
          position = last.number
        }
      }
      let report = HistoryPruner.Report(
        deletedTransactions: deleted,
        horizon: HistoryToken(storeIdentifier: identifier, transactionNumber: max(firstKept, target) - 1),
        heldBackBy: heldBackBy.sorted(), staleConsumers: stale, prunedPastStale: prunedPastStale, isDryRun: dryRun)
      try willDelete?(report)
      if !dryRun && target > firstKept { try HistoryReader.deleteHistory(before: target, connection: connection) }
      return report
    }
    if dryRun {
      return try writer.withConnection { connection in try connection.readTransaction { try plan(connection) } }
    }
    return try writer.write(TransactionInfo()) { connection, _ in try plan(connection) }
  }
}
