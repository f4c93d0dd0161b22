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
  let publisher: ChangePublisher

  /// Opens (or creates) the store at `storeURL` with `model`.
  ///
  /// ```swift
  /// var options = StoreOptions()
  /// options.busyTimeout = .seconds(10)
  /// let container = try PersistentContainer(
  ///   name: "Notes", model: ManagedObjectModel(Folder.self, Note.self), storeURL: url, options: options)
  /// ```
  ///
  /// - Parameters:
  ///   - name: the container's name, which names the default store file.
  ///   - model: the model of the store's entities; a store made with another model is refused.
  ///   - storeURL: the store file; by default `$XDG_DATA_HOME/<name>/<name>.sqlite`
  ///     (`~/.local/share/...`).
  ///   - options: how the store is opened (``StoreOptions``, Core Data's
  ///     `NSPersistentStoreDescription`).
  /// - Throws: `StoreError` when the file cannot be used with this model; it is left unchanged.
  public convenience init(
    name: String, model: ManagedObjectModel, storeURL: URL? = nil, options: StoreOptions = StoreOptions()
  ) throws {
    try self.init(name: name, model: model, migration: nil, storeURL: storeURL, options: options)
  }

  /// Opens (or creates) the store at `storeURL` with the last version of `migrationPlan`,
  /// taking a store at an older version through the plan's stages first (SwiftData's
  /// `ModelContainer(for:migrationPlan:configurations:)`; docs/migration.md, "Staged
  /// migration").
  ///
  /// ```swift
  /// let plan = MigrationPlan(
  ///   versions: [.init("1", try ManagedObjectModel(OrderV1.self)), .init("2", try ManagedObjectModel(OrderV2.self))],
  ///   stages: [.custom(didMigrate: { context in try context.save() })])
  /// let container = try PersistentContainer(name: "Orders", migrationPlan: plan, storeURL: url)
  /// ```
  ///
  /// - Parameters:
  ///   - name: the container's name, which names the default store file.
  ///   - migrationPlan: the model versions, oldest first, and a stage between each pair.
  ///   - storeURL: the store file; by default `$XDG_DATA_HOME/<name>/<name>.sqlite`.
  ///   - options: how the store is opened (``StoreOptions``).
  /// - Throws: `MigrationError` for a plan that cannot run, a store at no version of it, or a
  ///   stage's change that cannot be made; what a stage throws; `StoreError` as the other
  ///   initializer. The store is left unchanged.
  public convenience init(
    name: String, migrationPlan: MigrationPlan, storeURL: URL? = nil, options: StoreOptions = StoreOptions()
  ) throws {
    let migration = try migrationPlan.staged()
    try self.init(
      name: name, model: migration.versions[migration.versions.count - 1].model, migration: migration,
      storeURL: storeURL, options: options)
  }

  private init(
    name: String, model: ManagedObjectModel, migration: StagedMigration?, storeURL: URL?, options: StoreOptions
  ) throws {
    let url = storeURL ?? Self.defaultStoreURL(name: name)
    if storeURL == nil {
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    }
    self.name = name
    self.managedObjectModel = model
    let publisher = ChangePublisher(pollInterval: options.remoteChangePollInterval)
    self.publisher = publisher
    // Weakly: the publisher holds the store (and its monitor thread does while it runs).
    let publish: @Sendable (RecordedChanges) -> Void = { [weak publisher] in publisher?.publish($0) }
    let store = try PersistentStore(
      url: url, model: model, options: options, migration: migration, containerName: name, publish: publish)
    self.persistentStore = store
    publisher.attach(store)
    self.viewContext = Self.makeContext(store: store, name: "viewContext", publisher: publisher)
  }

  /// Opens an existing store with the model it keeps, without the application's classes:
  /// for tools that follow, export and prune history, manage consumers and inspect stores
  /// (see `PersistentStore.init(url:options:)`). The container's name is the file's name
  /// without its extension.
  ///
  /// ```swift
  /// let container = try PersistentContainer(storeURL: URL(fileURLWithPath: "/var/lib/app/notes.sqlite"))
  /// for await changes in container.storeChanges() { print(changes.token as Any) }
  /// ```
  public convenience init(storeURL: URL, options: StoreOptions = StoreOptions()) throws {
    // Another engine's store without a schema in its URL is found where `storedModel` looks.
    try self.init(
      name: storeURL.isFileURL ? storeURL.deletingPathExtension().lastPathComponent : "typedstore",
      model: PersistentStore.storedModel(at: storeURL, options: options), storeURL: storeURL, options: options)
  }

  /// A context whose `automaticallyMergesChangesFromParent` merges every commit this
  /// container publishes, in order, except the context's own saves.
  private static func makeContext(store: PersistentStore, name: String?, publisher: ChangePublisher)
    -> ManagedObjectContext
  {
    ManagedObjectContext(store: store, name: name, automaticMerging: automaticMerging(publisher))
  }

  /// How a context made from this container subscribes to its commits: each commit but the
  /// context's own saves goes to the context's merge target, in order; an expired history
  /// asks it to refresh everything. The target is held weakly.
  static func automaticMerging(_ publisher: ChangePublisher) -> ContextState.AutomaticMerging {
    { target, origin in
      let changes = publisher.addObserver(isContext: true) { [weak target] changes in
        guard changes.origin != origin, let target else { return }
        target.enqueueMerge(changes)
      }
      let expiry = publisher.addExpiryObserver(isContext: true) { [weak target] _ in
        target?.enqueueRefreshAllObjects()
      }
      return Subscriptions([changes, expiry])
    }
  }

  var automaticMerging: ContextState.AutomaticMerging { Self.automaticMerging(publisher) }

  /// Keeps observations alive together.
  private final class Subscriptions: Sendable {
    let observations: [StoreChangesObservation]
    init(_ observations: [StoreChangesObservation]) { self.observations = observations }
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
  ///
  /// ```swift
  /// let importer = container.newBackgroundContext()
  /// importer.transactionAuthor = "importer"
  /// try await importer.perform { context in try context.save() }
  /// ```
  public func newBackgroundContext() -> ManagedObjectContext {
    Self.makeContext(store: persistentStore, name: nil, publisher: publisher)
  }

  /// A new `ModelContext`, for a `ModelActor` (or another single owner) to use synchronously;
  /// its `automaticallyMergesChangesFromParent` merges this container's commits.
  ///
  /// ```swift
  /// init(container: PersistentContainer) {
  ///   let context = container.newModelContext()
  ///   modelExecutor = context.executor
  ///   modelContext = context
  /// }
  /// ```
  public func newModelContext(name: String? = nil) -> ModelContext {
    ModelContext(store: persistentStore, name: name, automaticMerging: automaticMerging)
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

  /// The changes of every transaction committed to the store from now on — by this process
  /// and, read from history by the remote-change monitor, by other processes
  /// (`StoreChanges.isRemote`) — once each, in commit order. Each call returns a new stream;
  /// it ends when its task is cancelled. Commits of other processes need history
  /// (`StoreOptions.recordsHistory`, on by default).
  ///
  /// ```swift
  /// for await changes in container.storeChanges() {
  ///   print(changes.author ?? "-", changes.inserted(Note.self).count)
  /// }
  /// ```
  public func storeChanges() -> AsyncStream<StoreChanges> {
    publisher.stream()
  }

  /// Calls `callback` with the changes of every transaction committed to the store from now
  /// on, by this process or another, once each, in commit order, on a serial queue, until the
  /// returned observation is cancelled or released. Observers are called in the order they
  /// were added, and after every context that merges automatically has the same changes
  /// enqueued: a `perform` you start from the callback runs after that context merged them.
  ///
  /// ```swift
  /// let observation = container.addStoreChangesObserver { changes in
  ///   if changes.isRemote { print("another process wrote", changes.insertedIDs.count, "rows") }
  /// }
  /// ```
  public func addStoreChangesObserver(_ callback: @escaping @Sendable (StoreChanges) -> Void)
    -> StoreChangesObservation
  {
    publisher.addObserver(callback)
  }

  /// Calls `callback` when history the remote-change monitor had not read yet was deleted
  /// (pruned while it slept): the changes of the deleted transactions cannot be published one
  /// by one. `callback` gets the new horizon; publishing goes on after it. Contexts that merge
  /// automatically refresh all their objects then (`refreshAllObjects()`), enqueued before
  /// `callback` runs, so a `perform` started from it sees the refreshed objects; do the same
  /// with state of your own built from the changes.
  ///
  /// ```swift
  /// let observation = container.addHistoryExpiredObserver { horizon in rebuildIndex() }
  /// ```
  public func addHistoryExpiredObserver(_ callback: @escaping @Sendable (HistoryToken) -> Void)
    -> StoreChangesObservation
  {
    publisher.addExpiryObserver(callback)
  }

  // MARK: - History

  /// The position after the last transaction in the store's history.
  ///
  /// ```swift
  /// let token = try container.currentHistoryToken   // keep it; fetch after it later
  /// ```
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

  /// Deletes the history before `token` (the token's own transaction is kept), whatever the
  /// consumers' checkpoints: ``HistoryPruner`` respects them.
  ///
  /// ```swift
  /// try container.deleteHistory(before: token)
  /// ```
  @discardableResult
  public func deleteHistory(before token: HistoryToken) throws -> Int {
    try persistentStore.deleteHistory(before: token)
  }

  /// Deletes the history committed before `date` (a transaction at exactly `date` is kept).
  ///
  /// ```swift
  /// try container.deleteHistory(before: Date().addingTimeInterval(-30 * 86_400))
  /// ```
  @discardableResult
  public func deleteHistory(before date: Date) throws -> Int {
    try persistentStore.deleteHistory(before: date)
  }
}
