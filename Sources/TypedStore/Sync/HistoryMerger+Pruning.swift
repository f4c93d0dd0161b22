// Pruning after merges, as PersistentHistoryTrackingKit's cleaner does it: a process that only
// merges (an app whose extension writes) prunes too, which `AutomaticHistoryPruning`, counting
// the process's own commits, never does for it.
extension HistoryMerger {
  /// When and what a merger prunes after it processed transactions
  /// (`HistoryMerger.Options.pruning`), with ``HistoryPruner``'s guarantees: one write
  /// transaction, never past a consumer's checkpoint (its own included, written first).
  ///
  /// ```swift
  /// var options = HistoryMerger.Options()
  /// options.pruning = HistoryMerger.Pruning(.consumed, .atMostEvery(.seconds(60)))
  /// ```
  public struct Pruning: Sendable {
    /// When a prune runs.
    public enum Schedule: Sendable, Hashable {
      /// After every `count` transactions the merger processed (merged, or passed over by its
      /// filters); PersistentHistoryTrackingKit's `.byNotification(times:)`. At least 1.
      case afterMerges(Int)
      /// After the merger processed transactions, when the last prune is at least this long
      /// ago (the first: after the first transactions); PersistentHistoryTrackingKit's
      /// `.byDuration`.
      case atMostEvery(Duration)
    }

    /// What each prune deletes, before the consumers' checkpoints cap it.
    public var policy: HistoryPruningPolicy
    /// When a prune runs.
    public var schedule: Schedule
    /// When given, only transactions by these authors are deleted: the prune stops at the
    /// first transaction of another author (or of none), which it keeps with everything after
    /// it, and says so in `lastPruning?.heldBackByTransaction`
    /// (`HistoryPruner.prune(_:includingStale:authors:dryRun:archive:willDelete:)`). List the
    /// authors of every process that writes, and prune without the limit from time to time.
    public var authors: Set<String>?
    /// Called, on the merger's thread, with the error of a prune that failed; the merger goes
    /// on, and prunes again when the schedule says so next.
    public var onError: (@Sendable (any Error) -> Void)?

    /// Prunes by `policy` when `schedule` says so, only transactions of `authors` when given.
    ///
    /// ```swift
    /// HistoryMerger.Pruning(.consumed, .afterMerges(1_000), authors: ["app", "widget"])
    /// ```
    public init(
      _ policy: HistoryPruningPolicy = .consumed, _ schedule: Schedule, authors: Set<String>? = nil,
      onError: (@Sendable (any Error) -> Void)? = nil
    ) {
      self.policy = policy
      if case .afterMerges(let count) = schedule {
        self.schedule = .afterMerges(max(1, count))
      } else {
        self.schedule = schedule
      }
      self.authors = authors
      self.onError = onError
    }
  }

  /// What the merger's last prune did (`Options.pruning`), nil before its first.
  ///
  /// ```swift
  /// if let report = merger.lastPruning { print(report.deletedTransactions, report.heldBackBy) }
  /// ```
  public var lastPruning: HistoryPruningReport? { state.withLock { $0.lastPruning } }

  /// Prunes when `Options.pruning`'s schedule says so, after the merger processed
  /// transactions; writes the checkpoint first, so that what the merger just processed is
  /// its to give up. A prune's error goes to `Pruning.onError`; the checkpoint's, which stops
  /// the merger, is thrown.
  func pruneIfDue() throws {
    guard let pruning = options.pruning else { return }
    let due = state.withLock { state -> Bool in
      let processed = state.position - state.prunedThrough
      switch pruning.schedule {
      case .afterMerges(let count): return processed >= Int64(count)
      case .atMostEvery(let interval):
        return processed > 0 && (state.lastPruneTime.map { ContinuousClock.now - $0 >= interval } ?? true)
      }
    }
    guard due else { return }
    try writeCheckpoint(force: true)
    do {
      let report = try store.pruneHistory(
        pruning.policy, includingStale: false, authors: pruning.authors, dryRun: false, archive: nil)
      state.withLock { $0.lastPruning = report }
    } catch {
      pruning.onError?(error)
    }
    state.withLock { state in
      state.prunedThrough = state.position
      state.lastPruneTime = .now
    }
  }
}
