import Foundation

/// The entry point: a model, the store file opened with it, and the contexts over it.
///
/// ```swift
/// let container = try PersistentContainer(
///   name: "Notes", model: ManagedObjectModel(Folder.self, Note.self), storeURL: url)
///
/// try await container.performBackgroundTask { context in
///   let note = Note(context: context)
///   note.title = "Draft"
///   try context.save()
/// }
/// ```
///
/// The container sits above every other layer: it opens the store (`Store/`) and makes the
/// contexts (`Context/`) that read and write it. Several containers, in one process or many,
/// may open the same file; SQLite's locks serialize their writes.
public final class PersistentContainer: Sendable {
  /// The container's name; also the default store file's name.
  public let name: String
  /// The model the store was opened with.
  public let managedObjectModel: ManagedObjectModel
  /// The open store.
  public let persistentStore: PersistentStore
  /// A long-lived context for reading, named "viewContext". On Linux there is no main run
  /// loop to bind it to: it has its own serial executor like every context.
  public let viewContext: ManagedObjectContext

  /// Opens (or creates) the store at `storeURL` with `model`.
  ///
  /// - Parameters:
  ///   - storeURL: the store file; by default `$XDG_DATA_HOME/<name>/<name>.sqlite`
  ///     (`~/.local/share/...`).
  /// - Throws: `StoreError` when the file cannot be used with this model; it is left unchanged.
  public init(
    name: String, model: ManagedObjectModel, storeURL: URL? = nil, options: StoreOptions = StoreOptions()
  ) throws {
    let url = storeURL ?? Self.defaultStoreURL(name: name)
    if storeURL == nil {
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    }
    self.name = name
    self.managedObjectModel = model
    self.persistentStore = try PersistentStore(url: url, model: model, options: options)
    self.viewContext = ManagedObjectContext(store: persistentStore, name: "viewContext")
  }

  /// The default location of a container's store.
  public static func defaultStoreURL(name: String) -> URL {
    let environment = ProcessInfo.processInfo.environment
    let base =
      environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
      ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
    return base.appendingPathComponent(name).appendingPathComponent("\(name).sqlite")
  }

  /// A new context with its own executor and reader connection.
  public func newBackgroundContext() -> ManagedObjectContext {
    ManagedObjectContext(store: persistentStore)
  }

  /// Runs `body` on a new background context and returns its result.
  ///
  /// ```swift
  /// let id = try await container.performBackgroundTask { context in
  ///   let note = Note(context: context)
  ///   try context.save()
  ///   return note.managedID
  /// }
  /// ```
  public func performBackgroundTask<Result: Sendable>(
    _ body: @Sendable (isolated ManagedObjectContext) throws -> Result
  ) async rethrows -> Result {
    try await newBackgroundContext().perform(body)
  }
}
