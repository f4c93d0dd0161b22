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
  /// plain and transactional alike, on the effects context's executor for this kind. Add
  /// hooks before `start()`.
  public func addTransactionalHook(_ hook: @escaping TransactionalHook) {
    addStoredHook(.transactional(hook))
  }

  /// Runs a transaction's hooks; when transactional hooks changed the effects context, saves
  /// it with the checkpoint past the transaction (`checkpointSaved` then) and resets it.
  func runHooks(_ hooks: [StoredHook], on transaction: HistoryTransaction) throws -> Event {
    var attempt = 1
    while true {
      var event = Event(transaction: transaction, changes: StoreChanges(transaction))
      do {
        var effectsRan = false
        for hook in hooks {
          switch hook {
          case .plain(let hook): try hook(&event)
          case .async(let hook): event = try Self.awaitHook(hook, event)
          case .transactional(let hook):
            effectsRan = true
            event = try effects.performAndWait { [event] context in
              var event = event
              try hook(&event, context)
              return event
            }
          }
        }
        if effectsRan, try saveEffects(through: transaction.transactionNumber) {
          checkpointSaved(transaction.transactionNumber)
        }
        return event
      } catch StoreError.mergeConflict where attempt < Self.effectAttempts {
        discardEffects()
        attempt += 1
      } catch {
        discardEffects()
        throw error
      }
    }
  }

  /// Runs an async hook on a task of its own and waits for it on the merger's thread (never
  /// a thread of the cooperative pool: `start()` runs the catch-up on the merger's thread too).
  static func awaitHook(_ hook: @escaping AsyncHook, _ event: Event) throws -> Event {
    let outcome = HookOutcome()
    Task {
      var event = event
      do {
        try await hook(&event)
        outcome.finish(.success(event))
      } catch {
        outcome.finish(.failure(error))
      }
    }
    return try outcome.wait()
  }

  /// How many times a transaction's hooks run when their save keeps meeting conflicts.
  static let effectAttempts = 3

  /// Saves the effects context with the checkpoint past `number`; returns whether a
  /// transaction was committed (changes that undo each other commit nothing). The context
  /// is reset either way.
  private func saveEffects(through number: Int64) throws -> Bool {
    let checkpoint = ConsumerCheckpoint(name: consumer, number: number, lease: options.lease)
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
final class HookOutcome: Sendable {
  private let result = Mutex<Result<HistoryMerger.Event, any Error>?>(nil)
  private let done = DispatchSemaphore(value: 0)

  func finish(_ outcome: Result<HistoryMerger.Event, any Error>) {
    result.withLock { $0 = outcome }
    done.signal()
  }

  /// Waits for `finish(_:)` and returns its event, or throws its error.
  func wait() throws -> HistoryMerger.Event {
    done.wait()
    guard let outcome = result.withLock({ $0 }) else { throw CancellationError() }
    return try outcome.get()
  }
}
