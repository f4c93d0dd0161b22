import Dispatch
import Synchronization

/// The serial executor of a `ModelContext` and of the `ModelActor` that owns it: a dispatch
/// queue. It also carries the commits automatic merging delivers to the context, and applies
/// them on the owning actor.
public final class ModelExecutor: SerialExecutor {
  /// A delivery waiting for the owning actor: what to do to its context's state (merge a
  /// commit, or refresh every object). The merging layer supplies it, so that this layer does
  /// not name it.
  typealias PendingMerge = @Sendable (ContextState) -> Void

  private struct Owner {
    weak var actor: (any ModelActor)?
  }

  private let queue: ContextExecutor
  private let owner = Mutex(Owner())
  private let pending = Mutex<[PendingMerge]>([])

  init(label: String) {
    queue = ContextExecutor(label: label)
  }

  /// Runs `job` on the executor's serial queue, after the jobs enqueued before it.
  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedSerialExecutor()
    queue.queue.async { job.runSynchronously(on: executor) }
  }

  /// Stops the program unless called on the executor's queue.
  public func checkIsolated() { queue.checkIsolated() }

  /// Remembers the actor that runs on this executor, to merge into its context.
  func serve(_ actor: any ModelActor) {
    owner.withLock { owner in
      if owner.actor !== actor { owner.actor = actor }
    }
  }

  /// Runs `body` on `actor`, which runs on this executor, and waits for it; at once when
  /// called on the executor already.
  func performAndWait<Owner: ModelActor>(on actor: Owner, _ body: @Sendable (isolated Owner) -> Void) {
    if queue.isCurrent {
      actor.assumeIsolated(body)
    } else {
      queue.queue.sync { actor.assumeIsolated(body) }
    }
  }

  /// Takes every delivery not applied yet, in order.
  func takePending() -> [PendingMerge] {
    pending.withLock { pending in
      defer { pending = [] }
      return pending
    }
  }

  /// Queues `merge` for the owning actor, and applies it there when the actor is known.
  func post(_ merge: @escaping PendingMerge) {
    pending.withLock { $0.append(merge) }
    queue.queue.async { [self] in
      guard let actor = owner.withLock({ $0.actor }) else { return }  // applied at the context's next use
      apply(on: actor)
    }
  }

  private func apply(on actor: some ModelActor) {
    actor.assumeIsolated { actor in
      let context = actor.modelContext
      guard context.executor === self else { return }
      context.applyPendingMerges()
    }
  }
}
