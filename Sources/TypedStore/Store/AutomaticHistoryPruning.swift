import Dispatch
import Synchronization

/// Pruning that a store runs by itself after commits, with `HistoryPruner`'s guarantees: one
/// write transaction, never past a live consumer's checkpoint, never past a stale one's.
///
/// ```swift
/// var options = StoreOptions()
/// options.automaticHistoryPruning = AutomaticHistoryPruning(.keepLast(100_000), afterCommits: 1_000)
/// ```
///
/// After every `afterCommits` transactions this process commits with history, a prune runs
/// on a background queue (one at a time; the committing caller does not wait for it). A prune
/// that fails — the write lock stayed busy, say — deletes nothing and is tried again after
/// the next `afterCommits` commits; `onError` hears of it.
public struct AutomaticHistoryPruning: Sendable {
  /// What each prune deletes, before the consumers' checkpoints cap it.
  public var policy: HistoryPruningPolicy
  /// How many commits of this process between two prunes (at least 1).
  public var afterCommits: Int
  /// Called with the error of a prune that failed.
  public var onError: (@Sendable (any Error) -> Void)?

  /// Prunes by `policy` after every `afterCommits` commits of this process (at least 1).
  public init(
    _ policy: HistoryPruningPolicy, afterCommits: Int = 1_000, onError: (@Sendable (any Error) -> Void)? = nil
  ) {
    self.policy = policy
    self.afterCommits = max(1, afterCommits)
    self.onError = onError
  }
}

/// Counts a store's commits and runs its automatic prunes.
final class AutomaticPruner: Sendable {
  private struct WeakStore {
    weak var store: PersistentStore?
  }

  private let settings: AutomaticHistoryPruning
  private let commits = Atomic<Int>(0)
  private let isRunning = Atomic<Bool>(false)
  private let target = Mutex(WeakStore())
  private let queue = DispatchQueue(label: "TypedStore.pruning", qos: .utility)

  init(_ settings: AutomaticHistoryPruning) {
    self.settings = settings
  }

  /// The pruner a store opened with `options` runs: none without `automaticHistoryPruning`,
  /// without history, or read-only.
  convenience init?(options: StoreOptions) {
    guard let settings = options.automaticHistoryPruning, options.recordsHistory, !options.isReadOnly else {
      return nil
    }
    self.init(settings)
  }

  func attach(_ store: PersistentStore) {
    target.withLock { $0.store = store }
  }

  /// Called after each commit, under the writer lock: only counts, and hands a due prune to
  /// the background queue.
  func didCommit(_ committed: RecordedChanges) {
    guard committed.number != nil else { return }
    let count = commits.wrappingAdd(1, ordering: .relaxed).newValue
    guard count % settings.afterCommits == 0,
      isRunning.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    queue.async { [self] in
      defer { isRunning.store(false, ordering: .releasing) }
      guard let store = target.withLock({ $0.store }) else { return }
      do {
        _ = try store.pruneHistory(settings.policy, includingStale: false, dryRun: false, archive: nil)
      } catch {
        settings.onError?(error)
      }
    }
  }
}
