/// An actor whose executor is a context's, so its methods run where the context's objects live.
///
/// ```swift
/// actor Importer: ModelActor {
///   nonisolated let modelContext: ManagedObjectContext
///   init(container: PersistentContainer) { modelContext = container.newBackgroundContext() }
///
///   func importTitles(_ titles: [String]) throws -> [ManagedID<Note>] {
///     try withContext { context in
///       let notes = titles.map { title in
///         let note = Note(context: context)
///         note.title = title
///         return note
///       }
///       try context.save()
///       return notes.map(\.managedID)
///     }
///   }
/// }
/// ```
///
/// The context's executor enqueues jobs asynchronously, so model actors that call each other
/// never deadlock.
public protocol ModelActor: Actor {
  /// The context whose executor this actor runs on.
  nonisolated var modelContext: ManagedObjectContext { get }
}

extension ModelActor {
  public nonisolated var unownedExecutor: UnownedSerialExecutor {
    modelContext.unownedExecutor
  }

  /// Runs `body` with the context, synchronously: the actor already runs on its executor.
  public func withContext<Result: Sendable>(
    _ body: @Sendable (isolated ManagedObjectContext) throws -> Result
  ) rethrows -> Result {
    try modelContext.assumeIsolated { try body($0) }
  }
}
