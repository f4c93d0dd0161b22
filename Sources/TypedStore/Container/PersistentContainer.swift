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
  private let publisher = ChangePublisher()

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
    let publisher = self.publisher
    self.persistentStore = try PersistentStore(
      url: url, model: model, options: options, publish: { publisher.publish($0) })
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
  @inline(never)
  public func performBackgroundTask<Result: Sendable>(
    _ body: @Sendable (isolated ManagedObjectContext) throws -> Result
  ) async rethrows -> Result {
    let context = newBackgroundContext()
    return try await context.perform(body)
  }

  // MARK: - Change notifications

  /// The changes of every transaction this process commits to the store, in commit order,
  /// from now on. Each call returns a new stream; it ends when its task is cancelled.
  ///
  /// ```swift
  /// for await changes in container.storeChanges() {
  ///   print(changes.author ?? "-", changes.inserted(Note.self).count)
  /// }
  /// ```
  public func storeChanges() -> AsyncStream<StoreChanges> {
    publisher.stream()
  }

  /// Calls `callback` with the changes of every transaction this process commits to the
  /// store, in commit order, on a serial queue, until the returned observation is cancelled
  /// or released.
  public func addStoreChangesObserver(_ callback: @escaping @Sendable (StoreChanges) -> Void)
    -> StoreChangesObservation
  {
    publisher.addObserver(callback)
  }

  // MARK: - History

  /// The position after the last transaction in the store's history.
  public var currentHistoryToken: HistoryToken {
    get throws { try persistentStore.currentHistoryToken() }
  }

  /// The transactions the request selects, in transaction order.
  ///
  /// ```swift
  /// let transactions = try container.fetchHistory(HistoryRequest(after: token))
  /// ```
  public func fetchHistory(_ request: HistoryRequest) throws -> [HistoryTransaction] {
    try persistentStore.fetchHistory(request)
  }

  /// Deletes the history before `token` (the token's own transaction is kept).
  @discardableResult
  public func deleteHistory(before token: HistoryToken) throws -> Int {
    try persistentStore.deleteHistory(before: token)
  }

  /// Deletes the history committed at or before `date`.
  @discardableResult
  public func deleteHistory(before date: Date) throws -> Int {
    try persistentStore.deleteHistory(before: date)
  }
}
