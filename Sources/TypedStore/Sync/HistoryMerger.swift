import Dispatch
import Foundation
import Synchronization

/// A durable, named consumer of a store's history: it processes every transaction — of this
/// process and of every other — once, in order, and keeps its checkpoint in the store, so a
/// crash or a restart never loses a change.
///
/// ```swift
/// let merger = try HistoryMerger(container: container, consumer: "indexer", contexts: [context])
/// merger.addHook { event in
///   // event.transaction.transactionNumber: the idempotency key
///   for id in event.inserted(Note.self) { try index.add(id) }
/// }
/// try await merger.start()   // catches up from its checkpoint, then follows
/// // ...
/// await merger.stop()        // writes its checkpoint
/// ```
///
/// Hooks may be `async` (awaited one at a time: back-pressure), and a transactional hook's
/// writes to the store commit with the checkpoint, exactly once (`addTransactionalHook(_:)`).
///
/// For each transaction, in order: the hooks run (in the order added), then the transaction is
/// merged into the merger's contexts (unless a hook set `mergesIntoContexts` to false), then
/// the checkpoint moves past it. A hook that throws stops the consumer at that transaction,
/// its checkpoint before it, with the error in `error` (and `Options.onError`). The checkpoint
/// is written to the store without history, at most once per `checkpointInterval` (and when
/// the merger stops): after a crash the transactions since the last write are processed
/// again — at least once, never lost — so side effects should be idempotent, keyed by the
/// transaction's number. While it runs, the merger also rewrites its row at least every
/// quarter of its lease, so that an idle consumer is not taken for a stale one.
///
/// The merger follows the store's change notifications (commits of this process, and of
/// others through the remote-change monitor) as wake-ups, and reads history after its
/// position as the truth; the transactions of other processes that its process's monitor
/// read already, it takes as they were reported when they follow its position.
///
/// When another process migrates the store to another model, the merger's next read of
/// history throws `StoreError.modelChanged`: it stops with that error in `error` (and
/// `Options.onError`), its checkpoint where the store had it (the write of a newer one is
/// refused too, so the transactions since the last write are processed again after the
/// restart, at least once as always), and it reads nothing of the migrated store.
public final class HistoryMerger: Sendable {
  /// How a merger starts and runs.
  public struct Options: Sendable {
    /// Where a consumer new to the store starts.
    public enum Start: Sendable {
      /// After the last transaction committed now: what was committed before the consumer
      /// first started is passed over.
      case now
      /// Before the first transaction: the consumer reads every transaction, those committed
      /// before it first started too. If history was deleted, there is no such start:
      /// `start()` throws `HistoryError.tokenExpired` (with `refreshesWhenCheckpointExpired`,
      /// it starts at the horizon instead).
      case beginning
    }

    /// Where a consumer new to the store starts (an existing or declared one goes on from its
    /// checkpoint). `.beginning` by default: a consumer reads what it has not seen, as
    /// PersistentHistoryTrackingKit's authors do.
    ///
    /// ```swift
    /// options.startsAt = .now  // only what is committed from now on
    /// ```
    public var startsAt: Start = .beginning
    /// Transactions by these authors are passed over (the checkpoint moves past them): the
    /// consumer's own writes, say.
    public var excludedAuthors: Set<String> = []
    /// Only transactions by these authors are processed (nil: every author not excluded);
    /// the checkpoint moves past the others, so a filtered consumer never holds pruning back.
    /// SwiftData's `HistoryObserver` and PersistentHistoryTrackingKit filter by author alike.
    ///
    /// ```swift
    /// options.authors = ["api", "payments"]
    /// ```
    public var authors: Set<String>?
    /// Only changes of these entities (and of their subentities, unless `includesSubentities`
    /// is false) reach the hooks and the contexts; a transaction with none of them is passed
    /// over, the checkpoint moving past it. nil: every entity. A migration's marker
    /// transaction, which has no changes, is processed whatever the filters.
    ///
    /// ```swift
    /// options.entities = [Order.self]
    /// ```
    public var entities: [ManagedObject.Type]?
    /// Whether `entities` takes in their subentities too.
    public var includesSubentities = true
    /// How long the consumer may go unseen before the pruner counts it as stale.
    public var lease: Duration = .seconds(3600)
    /// The most often the checkpoint is written while transactions are processed.
    public var checkpointInterval: Duration = .milliseconds(100)
    /// With a checkpoint older than the history horizon (history it had not read was pruned):
    /// false throws `HistoryError.tokenExpired` from `start()`; true refreshes every object of
    /// the merger's contexts and goes on from the horizon.
    public var refreshesWhenCheckpointExpired = false
    /// Called, on the merger's thread, with the error that stopped it.
    public var onError: (@Sendable (any Error) -> Void)?
    /// Pruning after merges (none by default): a process that only merges prunes too.
    ///
    /// ```swift
    /// options.pruning = HistoryMerger.Pruning(.consumed, .afterMerges(1_000))
    /// ```
    public var pruning: Pruning?

    /// The defaults: start at the beginning, no excluded author, a lease of an hour, a
    /// checkpoint at most every 100 ms.
    public init() {}
  }

  /// A transaction as a hook sees it.
  public struct Event: Sendable {
    /// The transaction; its `transactionNumber` is the key that makes a hook's side effects idempotent.
    public let transaction: HistoryTransaction
    /// Its changes, with typed views by entity.
    public let changes: StoreChanges
    /// Whether the merger merges the transaction into its contexts after the hooks; a hook
    /// that does its own merging sets it to false.
    public var mergesIntoContexts = true
    /// Whether a hook ended the pipeline for the transaction (`finish()`).
    public private(set) var isFinished = false

    /// Ends the pipeline for this transaction: no later hook runs for it, and it is not merged
    /// into the contexts; the checkpoint still moves past it (PersistentHistoryTrackingKit's
    /// `.finish`).
    ///
    /// ```swift
    /// merger.addHook { event in
    ///   if event.transaction.author == "importer" { event.finish() }  // handled elsewhere
    /// }
    /// ```
    public mutating func finish() {
      isFinished = true
      mergesIntoContexts = false
    }

    /// The inserted objects of `Entity` (and its subentities).
    public func inserted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      changes.inserted(type)
    }
    /// The updated objects of `Entity` (and its subentities).
    public func updated<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      changes.updated(type)
    }
    /// The deleted objects of `Entity` (and its subentities).
    public func deleted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      changes.deleted(type)
    }
  }

  /// A hook: called with each transaction before the default merge.
  public typealias Hook = @Sendable (inout Event) throws -> Void

  /// A transactional hook: called with each transaction and the merger's effects context,
  /// whose changes the merger saves together with its checkpoint moving past the transaction
  /// (``addTransactionalHook(_:)``).
  public typealias TransactionalHook = @Sendable (inout Event, isolated ManagedObjectContext) throws -> Void

  /// An async hook: called with each transaction before the default merge, and awaited
  /// before the merger goes on (`addHook(_:)` with an async closure).
  public typealias AsyncHook = @Sendable (inout Event) async throws -> Void

  /// A hook as added.
  enum StoredHook: Sendable {
    case plain(Hook)
    case async(AsyncHook)
    case transactional(TransactionalHook)
    case batch(BatchHook)
    case asyncBatch(AsyncBatchHook)

    var isBatch: Bool {
      switch self {
      case .batch, .asyncBatch: true
      case .plain, .async, .transactional: false
      }
    }
  }

  /// How a merger hears of commits: it starts calling its argument after each commit, until
  /// the observation it returns is cancelled.
  public typealias Subscribe =
    @Sendable (@escaping @Sendable (StoreChanges) -> Void) -> StoreChangesObservation

  struct State {
    /// The hooks, in the order they run.
    var hooks: [RegisteredHook] = []
    var nextHookID: UInt64 = 1
    /// The position at the last prune (`Options.pruning`), and when it ran.
    var prunedThrough: Int64 = 0
    var lastPruneTime: ContinuousClock.Instant?
    var lastPruning: HistoryPruningReport?
    var position: Int64 = 0
    var written: Int64 = 0
    var lastWrite = ContinuousClock.now
    var isRunning = false
    /// Set once the catch-up in `start()` finished.
    var caughtUp = false
    /// The transaction being processed (for the failure record).
    var processing: Int64 = 0
    /// The transaction the merger stopped at with `error`.
    var failedAt: Int64 = 0
    var statusListeners: [UInt64: AsyncStream<Status>.Continuation] = [:]
    var nextListener: UInt64 = 0
    var error: (any Error)?
    var observation: StoreChangesObservation?
    /// Wakes the merger when a transaction of this process finds the store migrated (the
    /// commits it is subscribed to stop then).
    var stampObservation: ModelStampObservation?
    /// The `stop()` calls waiting for the thread to end.
    var finished: [CheckedContinuation<Void, Never>] = []
    /// Set while a `start()` is between its claim and its thread: a second one returns.
    var starting = false
    var thread: Bool = false
  }

  /// The consumer's name: its checkpoint row's key.
  public let consumer: String
  /// How the merger starts and runs.
  public let options: Options
  /// The store whose history the merger consumes.
  public let store: PersistentStore
  private let subscribe: Subscribe
  private let destinations: [Destination]
  /// The names of the entities `Options.entities` follows; nil for every entity.
  private let followedEntities: Set<String>?
  let state = Mutex(State())
  private let wakeUps = DispatchSemaphore(value: 0)
  /// The most transactions one history read brings.
  private static let pageSize = 500
  /// The transactions the subscription reported with their history.
  private let inbox = Inbox()
  /// The context transactional hooks write in (`addTransactionalHook(_:)`).
  let effects: ManagedObjectContext
  /// What this merger's hook ids carry, so that another merger's id is never taken for one of
  /// its own.
  let hookOwner = UUID()

  /// Where the merger merges: a context, or a model actor's context, reached on its executor
  /// and waited for.
  private struct Destination: Sendable {
    let merge: @Sendable ([HistoryTransaction]) -> Void
    let refreshAllObjects: @Sendable () -> Void

    init(_ context: ManagedObjectContext) {
      merge = { transactions in context.performAndWait { $0.mergeChanges(transactions) } }
      refreshAllObjects = { context.performAndWait { $0.refreshAllObjects() } }
    }

    init(_ actor: some ModelActor) {
      merge = { transactions in
        actor.modelExecutor.performAndWait(on: actor) { actor in
          for transaction in transactions { actor.modelContext.mergeChanges(StoreChanges(transaction)) }
        }
      }
      refreshAllObjects = { actor.modelExecutor.performAndWait(on: actor) { $0.modelContext.refreshAllObjects() } }
    }
  }

  /// A consumer named `consumer` of `store`, merging into `contexts` and into the contexts of
  /// `modelActors` (on each actor's executor, between its own jobs), woken by the commits
  /// `subscribe` reports. ``init(container:consumer:contexts:modelActors:options:)`` passes
  /// the container's ``PersistentContainer/addStoreChangesObserver(_:)``.
  ///
  /// ```swift
  /// let merger = try HistoryMerger(store: store, consumer: "indexer") { onCommit in
  ///   container.addStoreChangesObserver(onCommit)
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - store: the store whose history is merged, and where the checkpoint is kept.
  ///   - consumer: the checkpoint's name, unique per store: a merger started again with the
  ///     same name resumes after what it last merged.
  ///   - contexts: the contexts merged into, each on its own executor.
  ///   - modelActors: model actors whose contexts are merged into, on each actor's executor.
  ///   - options: where a new consumer starts and its lease.
  ///   - subscribe: starts calling its argument after each commit (of this process, and of
  ///     others), until the returned observation is cancelled. The merger reads history after
  ///     its position as the truth: the calls are only wake-ups.
  /// - Throws: `HistoryError.invalidConsumerName`, `.invalidLease`, `.historyNotRecorded`,
  ///   `.invalidRequest` for an `Options.entities` type the store's model does not have.
  public init(
    store: PersistentStore, consumer: String, contexts: [ManagedObjectContext] = [],
    modelActors: [any ModelActor] = [], options: Options = Options(),
    subscribe: @escaping Subscribe
  ) throws {
    guard !consumer.isEmpty, consumer.count <= 200 else { throw HistoryError.invalidConsumerName(consumer) }
    guard options.lease > .zero else { throw HistoryError.invalidLease(options.lease) }
    guard store.options.recordsHistory else { throw HistoryError.historyNotRecorded }
    self.consumer = consumer
    self.options = options
    self.store = store
    self.effects = ManagedObjectContext(store: store, name: "\(consumer) effects")
    let author = Self.effectsAuthor(of: consumer)
    effects.performAndWait { $0.transactionAuthor = author }
    self.subscribe = subscribe
    self.destinations = contexts.map(Destination.init) + modelActors.map { Destination($0) }
    self.followedEntities = try options.entities.map { types in
      Set(
        try types.flatMap { type in
          guard let entity = store.model.entity(for: type) else {
            throw HistoryError.invalidRequest("\(type) is not an entity of the store's model")
          }
          return options.includesSubentities ? entity.selfAndDescendantNames : [entity.name]
        })
    }
  }

  /// The checkpoint row says `number` now: it was written with that transaction's effects.
  func checkpointSaved(_ number: Int64) {
    state.withLock { state in
      state.written = max(state.written, number)
      state.lastWrite = .now
    }
  }

  /// The last transaction processed (in memory; the store's row may be a little behind).
  public var checkpoint: HistoryToken {
    HistoryToken(
      storeIdentifier: store.identifier, transactionNumber: state.withLock { $0.position })
  }

  /// The error that stopped the merger, if one did.
  public var error: (any Error)? { state.withLock { $0.error } }

  /// Whether the merger follows the store now.
  public var isRunning: Bool { state.withLock { $0.isRunning } }

  // MARK: - Starting and stopping

  /// Registers the consumer (or reads its checkpoint), catches up with every transaction
  /// after it, then follows new commits on a thread of its own until `stop()`.
  ///
  /// - Throws: `HistoryError.nothingToMerge` for a merger with no context, model actor or
  ///   hook; `HistoryError.foreignStore` for a checkpoint row written for another store (the
  ///   file was replaced); `HistoryError.tokenExpired` for a checkpoint older than the horizon,
  ///   or a new consumer starting at `.beginning` of a store whose history was deleted (unless
  ///   `refreshesWhenCheckpointExpired`); or what a hook threw during the catch-up. The merger
  ///   is stopped then.
  public func start() async throws {
    // One start at a time: a second call while one runs (or has started) returns at once.
    let claimed = state.withLock { state -> Bool in
      guard !state.isRunning && !state.starting && !state.thread else { return false }
      state.starting = true
      return true
    }
    guard claimed else { return }
    defer { state.withLock { $0.starting = false } }
    guard !destinations.isEmpty || state.withLock({ !$0.hooks.isEmpty }) else {
      throw HistoryError.nothingToMerge(consumer: consumer)
    }
    let (registered, tookHorizon) = try store.registerHistoryConsumer(
      consumer, fromBeginning: options.startsAt == .beginning,
      acceptsHorizon: options.refreshesWhenCheckpointExpired, lease: options.lease)
    // A new consumer that could not start at the beginning of a pruned store recovers as an
    // expired one does: its contexts are refreshed, and it goes on from the horizon.
    if tookHorizon { for destination in destinations { destination.refreshAllObjects() } }
    guard registered.checkpoint.storeIdentifier == store.identifier else {
      throw HistoryError.foreignStore(expected: store.identifier, found: registered.checkpoint.storeIdentifier)
    }
    var position = registered.checkpoint.transactionNumber
    let horizon = try store.historyHorizon().transactionNumber
    if position < horizon {
      guard options.refreshesWhenCheckpointExpired else {
        throw HistoryError.tokenExpired(
          horizon: HistoryToken(storeIdentifier: store.identifier, transactionNumber: horizon))
      }
      for destination in destinations { destination.refreshAllObjects() }
      position = horizon
      try store.writeCheckpoint(consumer: consumer, number: position, lease: options.lease, advanced: true)
    }
    let (wakeUps, inbox) = (wakeUps, inbox)
    let observation = subscribe { changes in
      inbox.note(changes)
      wakeUps.signal()
    }
    let stampObservation = store.modelStamp.observeChange { _ in wakeUps.signal() }
    state.withLock { state in
      state.position = position
      state.written = position
      state.lastWrite = .now
      state.isRunning = true
      state.caughtUp = false
      state.error = nil
      state.processing = position + 1
      state.prunedThrough = position
      state.observation = observation
      state.stampObservation = stampObservation
    }
    publishStatus()
    // The catch-up and the following run on the merger's own thread, so that a hook (an
    // async one too) never holds a thread of the caller's pool; the catch-up's errors are
    // start()'s.
    try await withCheckedThrowingContinuation { (caughtUp: CheckedContinuation<Void, any Error>) in
      let thread = Thread { [self] in run(reporting: caughtUp) }
      thread.name = "TypedStore.HistoryMerger.\(consumer)"
      state.withLock { $0.thread = true }
      thread.start()
    }
  }

  /// The merger's thread: the catch-up (reported to `start()`), then following until `stop()`.
  private func run(reporting caughtUp: CheckedContinuation<Void, any Error>) {
    do {
      try processAvailable()
      try writeCheckpoint(force: true)
      try pruneIfDue()
    } catch {
      // What was processed before the failure stays processed: a restart resumes after it.
      try? writeCheckpoint(force: true)
      let finished = state.withLock { state -> [CheckedContinuation<Void, Never>] in
        state.isRunning = false
        state.observation = nil
        state.stampObservation = nil
        state.error = error
        state.failedAt = state.processing
        state.thread = false
        defer { state.finished = [] }
        return state.finished
      }
      recordFailure()
      publishStatus()
      caughtUp.resume(throwing: error)
      for waiter in finished { waiter.resume() }
      return
    }
    state.withLock { $0.caughtUp = true }
    publishStatus()
    caughtUp.resume()
    follow()
  }

  /// Stops following and writes the checkpoint.
  public func stop() async {
    let wasFollowing = state.withLock { state -> Bool in
      state.isRunning = false
      state.observation = nil
      state.stampObservation = nil
      return state.thread
    }
    guard wasFollowing else { return }
    await withCheckedContinuation { continuation in
      let resumeNow = state.withLock { state -> Bool in
        guard state.thread else { return true }
        state.finished.append(continuation)
        return false
      }
      wakeUps.signal()
      if resumeNow { continuation.resume() }
    }
  }

  // MARK: - Following

  private func follow() {
    let heartbeat = options.lease / 4
    while state.withLock({ $0.isRunning }) {
      let (pending, sinceWrite) = state.withLock { ($0.position != $0.written, ContinuousClock.now - $0.lastWrite) }
      let wait = pending ? max(.zero, options.checkpointInterval - sinceWrite) : max(.zero, heartbeat - sinceWrite)
      _ = wakeUps.wait(timeout: .now() + .milliseconds(Int(wait.inMilliseconds) + 1))
      // One read for every wake-up already pending: a publisher reports each transaction,
      // and a read after the last report sees them all. A report after this point wakes the
      // next wait.
      while wakeUps.wait(timeout: .now()) == .success {}
      guard state.withLock({ $0.isRunning }) else { break }
      do {
        try processAvailable()
        try writeCheckpoint(force: false)
        try pruneIfDue()
      } catch {
        fail(error)
        break
      }
    }
    try? writeCheckpoint(force: true)
    recordFailure()
    let finished = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.thread = false
      state.isRunning = false
      defer { state.finished = [] }
      return state.finished
    }
    publishStatus()
    for waiter in finished { waiter.resume() }
  }

  private func fail(_ error: any Error) {
    state.withLock { state in
      state.error = error
      state.failedAt = state.processing
      state.isRunning = false
      state.observation = nil
      state.stampObservation = nil
    }
    options.onError?(error)
  }

  /// Records in the store what stopped the merger (`HistoryConsumer.failure`), after its last
  /// checkpoint write; best effort (the error may be that the store refuses writes).
  private func recordFailure() {
    guard let (error, transaction) = state.withLock({ state in state.error.map { ($0, state.failedAt) } }) else {
      return
    }
    try? store.recordConsumerFailure(
      consumer: consumer, message: String(describing: error), transactionNumber: transaction)
  }

  /// Processes every transaction after the position, a page at a time.
  private func processAvailable() throws {
    var caughtUp = false
    while !caughtUp && state.withLock({ $0.isRunning }) {
      let position = state.withLock { state in
        state.processing = state.position + 1  // what a failure of the read stops at
        return state.position
      }
      let page: [HistoryTransaction]
      if let reported = inbox.take(after: position) {
        page = reported.run
        // Every transaction is reported in commit order: when the run reaches the newest one
        // reported, the merger is at the last one published, and the next commit's report
        // wakes it again. Otherwise (a commit of this process came after it) it reads on.
        caughtUp = reported.reachesLatest
      } else {
        var request = HistoryRequest(
          after: HistoryToken(storeIdentifier: store.identifier, transactionNumber: position))
        request.transactionLimit = Self.pageSize
        page = try store.fetchHistory(request)
        // A short page was all there was: the loop ends after it, without a read that finds
        // nothing (a commit after the read wakes the merger again).
        caughtUp = page.count < Self.pageSize
      }
      guard !page.isEmpty else { return }
      let hooks = state.withLock { $0.hooks }
      // Every hook removed while it runs, and nothing to merge into: refused, as at start().
      guard !hooks.isEmpty || !destinations.isEmpty else { throw HistoryError.nothingToMerge(consumer: consumer) }
      if hooks.isEmpty || hooks.contains(where: \.hook.isBatch) {
        try process(batch: page, hooks: hooks)
      } else {
        try process(eachOf: page)
      }
    }
  }

  /// Processes a page as one batch: the hooks (none, or a batch hook among them), then the
  /// default merge of the page into each context in one visit, then the checkpoint past it.
  private func process(batch page: [HistoryTransaction], hooks: [RegisteredHook]) throws {
    guard let first = page.first, let last = page.last else { return }
    state.withLock { $0.processing = first.transactionNumber }  // a throw leaves the position before it
    let followed = page.compactMap(followed)
    let merged = hooks.isEmpty ? followed : try runPipeline(hooks, on: followed)
    if !merged.isEmpty {
      for destination in destinations { destination.merge(merged) }
    }
    state.withLock { $0.position = last.transactionNumber }
    try writeCheckpoint(force: false)
  }

  /// Processes a page a transaction at a time: its hooks (as they are when it starts: one
  /// added or removed meanwhile counts from the next transaction), its merge, the checkpoint
  /// past it. A batch hook added meanwhile sees the rest of the page a transaction at a time.
  private func process(eachOf page: [HistoryTransaction]) throws {
    for transaction in page {
      let (running, hooks) = state.withLock { state in
        state.processing = transaction.transactionNumber
        return (state.isRunning, state.hooks)
      }
      guard running else { return }
      guard let transaction = followed(transaction) else {
        state.withLock { $0.position = transaction.transactionNumber }
        continue
      }
      let merged = try runPipeline(hooks, on: [transaction])  // a throw leaves the position before it
      if !merged.isEmpty {
        for destination in destinations { destination.merge(merged) }
      }
      state.withLock { $0.position = transaction.transactionNumber }
      try writeCheckpoint(force: false)
    }
  }

  /// `transaction` as this consumer follows it (`Options.authors`, `excludedAuthors`,
  /// `entities`): nil when it is passed over, its changes of the followed entities otherwise.
  private func followed(_ transaction: HistoryTransaction) -> HistoryTransaction? {
    if transaction.changes.isEmpty && transaction.author == PersistentStore.migrationTransactionAuthor {
      return transaction  // the schema changed here: every consumer hears of it
    }
    if let author = transaction.author, options.excludedAuthors.contains(author) || author == effectsAuthor {
      return nil  // excluded, or this consumer's own effects (`addTransactionalHook(_:)`)
    }
    if let authors = options.authors, !(transaction.author.map(authors.contains) ?? false) { return nil }
    guard let followedEntities else { return transaction }
    let changes = transaction.changes.filter { followedEntities.contains($0.objectID.entityName) }
    guard !changes.isEmpty else { return nil }
    guard changes.count < transaction.changes.count else { return transaction }
    return HistoryTransaction(
      transactionNumber: transaction.transactionNumber, token: transaction.token, timestamp: transaction.timestamp,
      author: transaction.author, contextName: transaction.contextName, processID: transaction.processID,
      changes: changes)
  }

  /// Writes the checkpoint when it moved and the interval passed (or `force`), and the
  /// heartbeat when a quarter of the lease passed without a write.
  func writeCheckpoint(force: Bool) throws {
    let (position, written, sinceWrite) = state.withLock {
      ($0.position, $0.written, ContinuousClock.now - $0.lastWrite)
    }
    let moved = position != written
    guard (moved && (force || sinceWrite >= options.checkpointInterval)) || sinceWrite >= options.lease / 4 else {
      return
    }
    try store.writeCheckpoint(
      consumer: consumer, number: position, lease: options.lease, advanced: moved)
    state.withLock { state in
      state.written = position
      state.lastWrite = .now
    }
  }
}
