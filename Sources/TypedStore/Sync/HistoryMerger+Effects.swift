import Dispatch
import Synchronization

// Exactly-once effects inside the store: hooks whose writes commit with the checkpoint.
extension HistoryMerger {
  /// The author of the transactions a consumer's transactional hooks save:
  /// `typedstore.consumer.<name>`. The consumer itself passes over them (its checkpoint
  /// moving past), so that its effects do not come back to it; other consumers see them as
  /// any other commit.
  public var effectsAuthor: String { Self.effectsAuthor(of: consumer) }

  static func effectsAuthor(of consumer: String) -> String { "typedstore.consumer.\(consumer)" }

  /// Adds a hook whose writes to the store happen exactly once per transaction: it is called
  /// with each transaction and the merger's effects context, and what it changes in that
  /// context is saved together with the consumer's checkpoint moving past the transaction, in
  /// one SQLite transaction. After a crash the transaction is processed again only if its
  /// effects were not committed; they never are twice.
  ///
  /// ```swift
  /// merger.addTransactionalHook { event, context in
  ///   for id in event.updated(Order.self) {
  ///     let order = try context.existingObject(with: id)
  ///     if order.isPaid && !order.isShipped { order.isShipped = true }
  ///   }
  /// }
  /// ```
  ///
  /// The merger saves the context after the transaction's hooks (a hook need not, and should
  /// not, call `save()`), then resets it: each transaction starts from what is committed.
  /// The saved transaction's author is ``effectsAuthor``. A save that meets a conflict with
  /// another writer is undone and the transaction's hooks run again, up to three times; a
  /// hook that throws, or a save that fails otherwise, stops the consumer at that transaction
  /// with nothing of it saved, as a plain hook's error does. Hooks run in the order added,
  /// plain and transactional alike, on the effects context's executor for this kind.
  /// Returns the hook's id (``HookID``).
  @discardableResult
  public func addTransactionalHook(_ hook: @escaping TransactionalHook) -> HookID {
    register(.transactional(hook))
  }

  /// Runs the hooks on a batch of transactions (one, unless a batch hook is registered), in
  /// their order: a per-transaction hook on each transaction still in the pipeline, a batch
  /// hook once on those. When transactional hooks changed the effects context, saves it with
  /// the checkpoint past the batch (`checkpointSaved` then) and resets it. Returns the
  /// transactions to merge into the contexts.
  func runPipeline(_ hooks: [RegisteredHook], on batch: [HistoryTransaction]) throws -> [HistoryTransaction] {
    guard let last = batch.last else { return [] }
    var attempt = 1
    while true {
      var events = batch.map { Event(transaction: $0, changes: StoreChanges($0)) }
      do {
        var effectsRan = false
        var batchMerges = true
        for registered in hooks {
          if registered.hook.isBatch {
            guard let merges = try runBatchHook(registered.hook, on: &events) else {
              batchMerges = false
              break  // the batch's pipeline ended
            }
            batchMerges = batchMerges && merges
            continue
          }
          for index in events.indices where !events[index].isFinished {
            if let scope = registered.scope, !scope.matches(events[index].transaction) { continue }
            effectsRan = try runHook(registered.hook, on: &events[index]) || effectsRan
          }
        }
        if effectsRan, try saveEffects(from: batch[0].transactionNumber, through: last.transactionNumber) {
          checkpointSaved(last.transactionNumber)
        }
        return batchMerges ? events.filter(\.mergesIntoContexts).map(\.transaction) : []
      } catch StoreError.mergeConflict where attempt < Self.effectAttempts {
        discardEffects()
        attempt += 1
      } catch {
        discardEffects()
        throw error
      }
    }
  }

  /// Runs a per-transaction hook; returns whether it was a transactional one.
  private func runHook(_ hook: StoredHook, on event: inout Event) throws -> Bool {
    switch hook {
    case .plain(let hook): try hook(&event)
    case .async(let hook): event = try Self.awaitHook(event) { try await hook(&$0) }
    case .transactional(let hook):
      event = try effects.performAndWait { [event] context in
        var event = event
        try hook(&event, context)
        return event
      }
      return true
    case .batch, .asyncBatch: break
    }
    return false
  }

  /// Runs a batch hook on the transactions still in the pipeline; returns whether the batch
  /// is merged into the contexts, or nil when the hook ended the batch's pipeline.
  private func runBatchHook(_ hook: StoredHook, on events: inout [Event]) throws -> Bool? {
    let open = events.filter { !$0.isFinished }.map(\.transaction)
    guard !open.isEmpty else { return true }
    var batch = BatchEvent(transactions: open)
    switch hook {
    case .batch(let hook): try hook(&batch)
    case .asyncBatch(let hook): batch = try Self.awaitHook(batch) { try await hook(&$0) }
    case .plain, .async, .transactional: break
    }
    return batch.isFinished ? nil : batch.mergesIntoContexts
  }

  /// Runs an async hook on a task of its own and waits for it on the merger's thread (never
  /// a thread of the cooperative pool: `start()` runs the catch-up on the merger's thread too).
  static func awaitHook<Value: Sendable>(
    _ value: Value, _ hook: @escaping @Sendable (inout Value) async throws -> Void
  ) throws -> Value {
    let outcome = HookOutcome<Value>()
    Task {
      var value = value
      do {
        try await hook(&value)
        outcome.finish(.success(value))
      } catch {
        outcome.finish(.failure(error))
      }
    }
    return try outcome.wait()
  }

  /// How many times a transaction's hooks run when their save keeps meeting conflicts.
  static let effectAttempts = 3

  /// Saves the effects context, the effects for transactions `first...number`, with the
  /// checkpoint past `number`, provided it is still before `first`; returns whether a
  /// transaction was committed (changes that undo each other commit nothing). The context
  /// is reset either way.
  private func saveEffects(from first: Int64, through number: Int64) throws -> Bool {
    let checkpoint = ConsumerCheckpoint(name: consumer, first: first, number: number, lease: options.lease)
    return try effects.performAndWait { context in
      defer { context.reset() }
      guard context.hasChanges else { return false }
      context.state.consumerCheckpoint = checkpoint
      defer { context.state.consumerCheckpoint = nil }
      try context.save()
      return context.state.consumerCheckpoint == nil  // the commit took it
    }
  }

  /// Drops what the hooks changed in the effects context.
  private func discardEffects() {
    effects.performAndWait { context in
      context.rollback()
      context.reset()
    }
  }
}

/// What an async hook's task returned, handed to the merger's waiting thread.
final class HookOutcome<Value: Sendable>: Sendable {
  private let result = Mutex<Result<Value, any Error>?>(nil)
  private let done = DispatchSemaphore(value: 0)

  func finish(_ outcome: Result<Value, any Error>) {
    result.withLock { $0 = outcome }
    done.signal()
  }

  /// Waits for `finish(_:)` and returns its value, or throws its error.
  func wait() throws -> Value {
    done.wait()
    guard let outcome = result.withLock({ $0 }) else { throw CancellationError() }
    return try outcome.get()
  }
}
