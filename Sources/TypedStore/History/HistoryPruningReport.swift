/// What a prune did (or, for a dry run, would do): see
/// ``HistoryPruner/prune(_:includingStale:authors:dryRun:archive:willDelete:)``.
///
/// ```swift
/// let report = try HistoryPruner(container: container).prune(.consumed, dryRun: true)
/// print(report.deletedTransactions, report.horizon, report.heldBackBy)
/// ```
public struct HistoryPruningReport: Sendable, Equatable {
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
  /// For a prune limited to some authors (`authors:`): the transaction of another author (or
  /// of none) that stopped it short of what the policy asked. It is kept, with everything
  /// after it, until a prune without the limit, or one that lists its author, deletes it.
  public var heldBackByTransaction: HeldBackTransaction? = nil

  /// A transaction that stopped a prune limited to some authors.
  public struct HeldBackTransaction: Sendable, Equatable {
    /// Its number.
    public var transactionNumber: Int64
    /// Its author; nil for a transaction without one.
    public var author: String?
  }
}
