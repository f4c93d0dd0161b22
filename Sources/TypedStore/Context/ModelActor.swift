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
  /// The actor runs on `modelExecutor`, where automatic merging delivers its context's commits.
  public nonisolated var unownedExecutor: UnownedSerialExecutor {
    modelExecutor.serve(self)
    return modelExecutor.asUnownedSerialExecutor()
  }
}
