import Dispatch
import Synchronization

/// An actor that owns a `ModelContext` and runs on its executor, as SwiftData's `@ModelActor`
/// does: its methods use the context synchronously and may keep managed objects in the
/// actor's own stored properties.
///
/// ```swift
/// actor Importer: ModelActor {
///   nonisolated let modelExecutor: ModelExecutor
///   let modelContext: ModelContext
///   private var recent: [Note] = []
///
///   init(container: PersistentContainer) {
///     let context = container.newModelContext()
///     modelExecutor = context.executor
///     modelContext = context
///   }
///
///   func importTitles(_ titles: [String]) throws -> [ManagedID<Note>] {
///     recent = titles.map { title in
///       let note = Note(context: modelContext)
///       note.title = title
///       return note
///     }
///     try modelContext.save()
///     return recent.map(\.managedID)
///   }
/// }
/// ```
///
/// Declare `modelExecutor` as the context's `executor`: the actor then runs where automatic
/// merging delivers commits, and they are merged into its objects as they happen, between
/// the actor's own jobs. Model actors that call each other never deadlock: the executor
/// enqueues jobs asynchronously.
public protocol ModelActor: Actor {
  /// The executor the actor runs on: its context's `executor`.
  nonisolated var modelExecutor: ModelExecutor { get }
  /// The context the actor's methods use.
  var modelContext: ModelContext { get }
}

extension ModelActor {
  public nonisolated var unownedExecutor: UnownedSerialExecutor {
    modelExecutor.serve(self)
    return modelExecutor.asUnownedSerialExecutor()
  }
}

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

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedSerialExecutor()
    queue.queue.async { job.runSynchronously(on: executor) }
  }

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
