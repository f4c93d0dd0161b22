/// Which history a prune deletes, before it is capped at the consumers' checkpoints (see
/// `HistoryPruner`).
///
/// ```swift
/// try HistoryPruner(container: container).prune(.keepLast(10_000))
/// ```
public enum HistoryPruningPolicy: Sendable, Hashable {
  /// What every consumer has read: up to the lowest checkpoint. Nothing when the store has
  /// no consumer.
  case consumed
  /// Transactions committed longer ago than this.
  case olderThan(Duration)
  /// All but the newest `count` transactions.
  case keepLast(Int)
  /// Transactions up to and including the token's (history after the token is kept).
  case before(HistoryToken)
}
