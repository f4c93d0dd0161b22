/// Deletes history that every live consumer has read.
///
/// ```swift
/// let pruner = HistoryPruner(container: container)
/// let report = try pruner.prune(.olderThan(.seconds(7 * 86_400)))
/// print(report.deletedTransactions, report.horizon, report.heldBackBy)
/// ```
///
/// Whatever the policy asks, the pruner never deletes a transaction a live consumer (a
/// ``HistoryMerger``'s checkpoint row, seen within its lease) has not processed: the target is
/// capped at the lowest live checkpoint. A stale consumer (not seen within its lease) holds
/// history back too, and is reported by name, unless the caller passes `includingStale`. The
/// whole prune — reading the checkpoints, handing each transaction to `archive`, deleting —
/// is one write transaction, so no consumer can register or move in between, and an
/// `archive` that throws leaves everything as it was. The store's consumers are listed and
/// removed by the store itself (``PersistentStore/historyConsumers()``,
/// ``PersistentStore/removeHistoryConsumer(named:)``).
public struct HistoryPruner: Sendable {
  /// The store whose history the pruner deletes.
  public let store: PersistentStore

  /// A pruner of a store.
  ///
  /// ```swift
  /// let pruner = HistoryPruner(store: try PersistentStore(url: url))
  /// ```
  public init(store: PersistentStore) {
    self.store = store
  }

  /// Deletes the history `policy` selects, capped at the lowest checkpoint of the live
  /// consumers (and of the stale ones, unless `includingStale`).
  ///
  /// ```swift
  /// try pruner.prune(.consumed, archive: { transaction in try archive.write(transaction) })
  /// ```
  ///
  /// - Parameters:
  ///   - policy: what to delete (``HistoryPruningPolicy``); never more than the consumers have read.
  ///   - includingStale: whether consumers past their lease are ignored, so that their unread
  ///     history may go too.
  ///   - authors: when given, only transactions by these authors are deleted: the prune stops
  ///     at the first transaction of another author (or of none), which is kept with everything
  ///     after it, so that history after the horizon stays complete. Keeps a system author's
  ///     history (a CloudKit-style mirror) while the app's own goes.
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
    _ policy: HistoryPruningPolicy, includingStale: Bool = false, authors: Set<String>? = nil, dryRun: Bool = false,
    archive: (@Sendable (HistoryTransaction) throws -> Void)? = nil,
    willDelete: (@Sendable (HistoryPruningReport) throws -> Void)? = nil
  ) throws -> HistoryPruningReport {
    guard store.options.recordsHistory else { throw HistoryError.historyNotRecorded }
    return try store.pruneHistory(
      policy, includingStale: includingStale, authors: authors, dryRun: dryRun, archive: archive,
      willDelete: willDelete)
  }
}
