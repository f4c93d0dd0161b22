/// Which history a prune deletes, before it is capped at the consumers' checkpoints (see
/// `HistoryPruner`).
///
/// ```swift
/// try HistoryPruner(container: container).prune(.keepLast(10_000))
/// ```
public enum HistoryPruningPolicy: Sendable, Hashable {
  /// What every consumer has read: the transactions before the lowest checkpoint (the
  /// checkpoint's own transaction, the last that consumer read, is kept, as `.before` keeps
  /// the token's). Nothing when the store has no consumer.
  case consumed
  /// Transactions committed more than this long ago (one committed at exactly that age is
  /// kept).
  case olderThan(Duration)
  /// All but the newest `count` transactions.
  case keepLast(Int)
  /// Transactions before the token's; the token's own transaction and those after it are
  /// kept. "Before" is strictly before everywhere (Core Data's rule): `deleteHistory(before:)`
  /// with a token or a date, and `typedstore history prune --before`, alike.
  case before(HistoryToken)
}
