import Dispatch
import Foundation
import Synchronization

/// Hands each transaction's `StoreChanges` to the container's observers: once each, in commit
/// order, whether this process committed it or another one did.
///
/// Two sources feed it. Commits of this process arrive from the store's writer, under its
/// lock, and are published at once when they come right after the last one published. Commits
/// of other processes arrive from the `RemoteChangeMonitor`, which reads history after the
/// last number published. A local commit that finds remote ones before it not yet published
/// is held back, the monitor is woken, and the local one goes out right after them (as the
/// value the writer made, so automatic merging still knows which context saved it). A
/// transaction the monitor read that was already published locally is skipped by its number.
///
/// Once a transaction of this process finds that another process migrated the store to
/// another model (`StoreError.modelChanged`), publishing ends: every `storeChanges()` stream
/// finishes (a stream asked for later finishes at once), callbacks are not called again, and
/// the monitor stops. The reason is the error every read and write of the store throws.
///
/// Nothing of this runs while nobody listens: the position is taken, and the monitor started,
/// when the first stream or callback is added. `publish` never blocks: streams get the value
/// through their continuation, callbacks are queued on one serial queue, in order, while the
/// state's lock is held.
final class ChangePublisher: Sendable {
  private struct State {
    var streams: [UUID: AsyncStream<StoreChanges>.Continuation] = [:]
    /// Callbacks by key: contexts' automatic merging first, then the app's observers, each in
    /// the order they were added (see `ObserverKey`).
    var callbacks: [ObserverKey: @Sendable (StoreChanges) -> Void] = [:]
    var expiryCallbacks: [ObserverKey: @Sendable (HistoryToken) -> Void] = [:]
    var nextKey: UInt64 = 0
    /// The number of the last transaction published; nil until someone listens.
    var lastPublished: Int64?
    /// The newest local commit published while `lastPublished` was nil: a position taken
    /// later starts after it, so the monitor does not publish it again.
    var publishedWithoutPosition: Int64 = 0
    /// Local commits waiting for remote ones before them.
    var heldBack: [Int64: RecordedChanges] = [:]
    var store: PersistentStore?
    var monitor: (any ChangeFollower)?
    /// Set once a transaction found the store migrated to another model: nothing more is
    /// published, and streams are finished.
    var stopped = false
    var stampObservation: ModelStampObservation?

    mutating func makeKey(isContext: Bool) -> ObserverKey {
      nextKey += 1
      return ObserverKey(isApp: !isContext, sequence: nextKey)
    }

    var hasListeners: Bool { !streams.isEmpty || !callbacks.isEmpty || !expiryCallbacks.isEmpty }
  }

  /// Orders callbacks: contexts' (`isApp` false) before the app's, each by when it was added.
  private struct ObserverKey: Hashable, Comparable {
    var isApp: Bool
    var sequence: UInt64
    static func < (a: Self, b: Self) -> Bool {
      a.isApp != b.isApp ? !a.isApp : a.sequence < b.sequence
    }
  }

  private let state = Mutex(State())
  private let callbackQueue = DispatchQueue(label: "TypedStore.storeChanges")
  /// How often the monitor looks for commits of other processes when inotify says nothing.
  let pollInterval: Duration

  init(pollInterval: Duration = .seconds(1)) {
    self.pollInterval = pollInterval
  }

  deinit {
    state.withLock { $0.monitor?.stop() }
  }

  /// The store whose remote commits are published (set once the container opened it).
  func attach(_ store: PersistentStore) {
    // Called on whichever thread noticed, perhaps inside this publisher's lock (taking the
    // position reads the store): the streams are finished from the callback queue instead.
    let observation = store.modelStamp.observeChange { [weak self] _ in
      guard let publisher = self else { return }
      publisher.callbackQueue.async { publisher.stop() }
    }
    state.withLock {
      $0.store = store
      $0.stampObservation = observation
    }
  }

  /// After another process migrated the store: every stream finishes, as does any stream
  /// asked for later, callbacks are not called again, and the monitor has stopped (its read
  /// found the migration) or stops at its next read.
  private func stop() {
    let continuations = state.withLock { state in
      state.stopped = true
      state.heldBack.removeAll()
      defer { state.streams.removeAll() }
      return Array(state.streams.values)
    }
    for continuation in continuations { continuation.finish() }
  }

  /// Whether a remote-change monitor follows the store now (for tests).
  var monitorIsFollowing: Bool { state.withLock { $0.monitor?.isFollowing ?? false } }

  // MARK: - Publishing

  /// Publishes a commit of this process; called by the store's writer under its lock.
  func publish(_ committed: RecordedChanges) {
    let monitor: (any ChangeFollower)? = state.withLock { state in
      if state.stopped { return nil }
      guard let number = committed.number, let last = state.lastPublished else {
        emit(StoreChanges(committed), in: &state)  // nobody listens yet, or no history: no order to keep
        if let number = committed.number {
          state.publishedWithoutPosition = max(state.publishedWithoutPosition, number)
        }
        return nil
      }
      if number <= last { return nil }  // the monitor read it from history first
      if number == last + 1 {
        emit(StoreChanges(committed), in: &state)
        state.lastPublished = number
        return nil
      }
      state.heldBack[number] = committed
      return state.monitor
    }
    monitor?.wake()
  }

  /// Publishes what the monitor read.
  private func publish(_ event: RemoteChangeMonitor.Event) {
    var expired: (callbacks: [@Sendable (HistoryToken) -> Void], horizon: HistoryToken)?
    if case .modelChanged(let error) = event {
      // Another engine's follower found the migration: the store's stamp ends publishing (`stop`).
      state.withLock { $0.store }?.modelStamp.report(error)
      return
    }
    state.withLock { state in
      if state.stopped { return }
      switch event {
      case .modelChanged: break
      case .transactions(let transactions, let timings):
        for transaction in transactions {
          guard let last = state.lastPublished, transaction.transactionNumber > last else { continue }
          let local = state.heldBack.removeValue(forKey: transaction.transactionNumber)
          emit(
            local.map(StoreChanges.init)
              ?? {
                var changes = StoreChanges(reported: transaction)
                changes.remoteTimings = timings
                return changes
              }(), in: &state)
          state.lastPublished = transaction.transactionNumber
        }
      case .expired(let horizon):
        state.lastPublished = max(state.lastPublished ?? 0, horizon.transactionNumber)
        expired = (Self.ordered(state.expiryCallbacks), horizon)
      }
      // Local commits held back for remote ones that are now out.
      while let last = state.lastPublished, let next = state.heldBack.removeValue(forKey: last + 1) {
        emit(StoreChanges(next), in: &state)
        state.lastPublished = last + 1
      }
      if let last = state.lastPublished { state.heldBack = state.heldBack.filter { $0.key > last } }
      if let expired {
        callbackQueue.async { for callback in expired.callbacks { callback(expired.horizon) } }
      }
    }
  }

  /// Hands `changes` to every listener; built only when someone listens (a large batch makes
  /// a large value).
  private func emit(_ changes: @autoclosure () -> StoreChanges, in state: inout State) {
    guard !state.streams.isEmpty || !state.callbacks.isEmpty else { return }
    let changes = changes()
    for continuation in state.streams.values { continuation.yield(changes) }
    guard !state.callbacks.isEmpty else { return }
    let callbacks = Self.ordered(state.callbacks)
    callbackQueue.async {
      for callback in callbacks { callback(changes) }
    }
  }

  // MARK: - Listening

  func stream() -> AsyncStream<StoreChanges> {
    let key = UUID()
    let (stream, continuation) = AsyncStream<StoreChanges>.makeStream(bufferingPolicy: .unbounded)
    continuation.onTermination = { [weak self] _ in
      self?.state.withLock { _ = $0.streams.removeValue(forKey: key) }
    }
    let stopped = state.withLock { state in
      if state.stopped { return true }
      startListening(&state)
      state.streams[key] = continuation
      return false
    }
    if stopped { continuation.finish() }
    return stream
  }

  /// Adds a callback for every published commit. `isContext` puts it before the app's
  /// observers, so an observer that reads a context which merges automatically finds the merge
  /// already enqueued there.
  func addObserver(isContext: Bool = false, _ callback: @escaping @Sendable (StoreChanges) -> Void)
    -> StoreChangesObservation
  {
    let key = state.withLock { state in
      startListening(&state)
      let key = state.makeKey(isContext: isContext)
      state.callbacks[key] = callback
      return key
    }
    return StoreChangesObservation { [weak self] in
      self?.state.withLock { _ = $0.callbacks.removeValue(forKey: key) }
    }
  }

  /// Adds a callback for history that expired before it was published; `isContext` as for
  /// `addObserver`, so contexts have their refresh enqueued before the app hears of it.
  func addExpiryObserver(isContext: Bool = false, _ callback: @escaping @Sendable (HistoryToken) -> Void)
    -> StoreChangesObservation
  {
    let key = state.withLock { state in
      startListening(&state)
      let key = state.makeKey(isContext: isContext)
      state.expiryCallbacks[key] = callback
      return key
    }
    return StoreChangesObservation { [weak self] in
      self?.state.withLock { _ = $0.expiryCallbacks.removeValue(forKey: key) }
    }
  }

  /// Callbacks in the order they are called.
  private static func ordered<Callback>(_ callbacks: [ObserverKey: Callback]) -> [Callback] {
    callbacks.sorted { $0.key < $1.key }.map(\.value)
  }

  /// Takes the position and starts the monitor, for the first listener. When the position
  /// cannot be read now (a transient error), the monitor takes it at its first read instead:
  /// remote commits are published from then on, rather than never.
  private func startListening(_ state: inout State) {
    guard !state.stopped, state.lastPublished == nil, let store = state.store, store.options.recordsHistory else {
      return
    }
    let path = store.url.path
    let injected = FaultInjection.take(FaultInjection.publisherStarts, path: path)
    if !injected, let current = try? store.currentHistoryToken() {
      state.lastPublished = current.transactionNumber
    }
    guard state.monitor == nil else { return }
    let takePosition: @Sendable (Int64) -> Int64 = { [weak self] newest in
      self?.state.withLock { state in
        if state.lastPublished == nil && state.hasListeners {
          state.lastPublished = max(newest, state.publishedWithoutPosition)
        }
        return state.lastPublished ?? Int64.max
      } ?? Int64.max
    }
    let deliver: @Sendable (RemoteChangeEvent) -> Void = { [weak self] event in self?.publish(event) }
    if let engine = store.engine {
      state.monitor = engine.followChanges(
        storeIdentifier: store.identifier, model: store.model, position: state.lastPublished,
        pollInterval: pollInterval, takePosition: takePosition, deliver: deliver)
      return
    }
    state.monitor = RemoteChangeMonitor(
      store: store, pollInterval: pollInterval,
      position: { [weak self] in
        guard let self else { return Int64.max }  // nobody to deliver to: read nothing
        return self.state.withLock { $0.lastPublished }
      },
      takePosition: takePosition, deliver: deliver)
  }
}
