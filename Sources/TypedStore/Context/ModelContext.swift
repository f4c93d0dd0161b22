import Synchronization

/// A context owned by one isolation domain — usually a `ModelActor` — and used from it
/// synchronously, as SwiftData's `ModelContext` is.
///
/// ```swift
/// actor Indexer: ModelActor {
///   nonisolated let modelExecutor: ModelExecutor
///   let modelContext: ModelContext
///   var watched: [Note] = []              // managed objects, kept in the actor's own state
///
///   init(container: PersistentContainer) {
///     let context = container.newModelContext()
///     modelExecutor = context.executor
///     modelContext = context
///     modelContext.automaticallyMergesChangesFromParent = true
///   }
///
///   func watch() throws { watched = try modelContext.fetch(FetchRequest<Note>()) }
///   func titles() -> [String] { watched.map(\.title) }   // live: merged as commits happen
/// }
/// ```
///
/// A `ModelContext` is not `Sendable`: the compiler keeps it, and every object it returns, in
/// the isolation domain that holds it, so its methods are plain synchronous calls and its
/// objects may be stored in that domain's properties. It has the same methods as
/// `ManagedObjectContext` with the same meaning; `ManagedObjectContext` is the actor form,
/// reached through `perform`.
///
/// Automatic merging delivers each commit on the context's `executor`, live, when the context
/// is the `modelContext` of a `ModelActor` that runs on that executor. A context held anywhere
/// else applies the commits it was sent at its next fetch, count, lookup by ID or save.
public final class ModelContext {
  let state: ContextState

  /// The executor a `ModelActor` that owns this context runs on; automatic merges run there.
  public let executor: ModelExecutor

  /// The store the context reads and writes.
  public let persistentStore: PersistentStore

  /// A context over `store` that cannot merge automatically; containers make contexts that
  /// can (`container.newModelContext()`).
  public convenience init(store: PersistentStore, name: String? = nil) {
    self.init(store: store, name: name, automaticMerging: nil)
  }

  init(store: PersistentStore, name: String?, automaticMerging: ContextState.AutomaticMerging?) {
    persistentStore = store
    executor = ModelExecutor(label: "TypedStore.modelContext.\(name ?? "unnamed")")
    state = ContextState(store: store, name: name)
    state.automaticMerging = automaticMerging
    state.modelContext = self
  }

  /// A migration stage's context: it reads and saves inside the migration's transaction,
  /// on `transaction`, the migration's connection (`MigrationStage.custom`). Its saves are
  /// recorded by the migration's author.
  init(migrationStageOf store: PersistentStore, transaction: any DatabaseConnection) {
    persistentStore = store
    executor = ModelExecutor(label: "TypedStore.migration")
    state = ContextState(store: store, name: "migration", migrationTransaction: transaction)
    state.transactionAuthor = PersistentStore.migrationTransactionAuthor
    state.modelContext = self
  }

  /// Applies the commits automatic merging delivered and that have not been merged yet.
  func applyPendingMerges() {
    for merge in executor.takePending() { merge(state) }
  }

  // MARK: - Configuration (as ManagedObjectContext's)

  /// The context's name, recorded with each transaction it saves.
  public var name: String? {
    get { state.name }
    set { state.name = newValue }
  }

  /// The author recorded with each transaction this context saves.
  public var transactionAuthor: String? {
    get { state.transactionAuthor }
    set { state.transactionAuthor = newValue }
  }

  /// How `save()` resolves conflicts with other writers; see `MergePolicy`.
  public var mergePolicy: MergePolicy {
    get { state.mergePolicy }
    set { state.mergePolicy = newValue }
  }

  /// See `ManagedObjectContext.shouldDeleteInaccessibleFaults`.
  public var shouldDeleteInaccessibleFaults: Bool {
    get { state.shouldDeleteInaccessibleFaults }
    set { state.shouldDeleteInaccessibleFaults = newValue }
  }

  /// Whether every commit to the store — of other contexts and other processes — is merged
  /// into this context, once each, in commit order, leaving out its own saves. See the type's
  /// documentation for when the merges run.
  public var automaticallyMergesChangesFromParent: Bool {
    get { state.automaticMergeSubscription != nil }
    set { state.setMergesAutomatically(newValue, into: executor) }
  }

  // MARK: - Changes

  /// True when the context has inserted, updated or deleted objects not saved yet.
  public var hasChanges: Bool { state.hasChanges }
  /// Objects inserted and not saved yet.
  public var insertedObjects: Set<ManagedObject> { Set(state.inserted) }
  /// Saved objects with unsaved attribute changes.
  public var updatedObjects: Set<ManagedObject> { Set(state.updated) }
  /// Objects marked for deletion at the next save.
  public var deletedObjects: Set<ManagedObject> { Set(state.deleted) }
  /// Every object the context holds, faults included.
  public var registeredObjects: Set<ManagedObject> { Set(state.registered.values) }

  /// Adds a new object (made with `init()`) to the context; `Note(context:)` does this for you.
  public func insert(_ object: ManagedObject) { state.insert(object) }
  /// Marks an object for deletion at the next save.
  public func delete(_ object: ManagedObject) { state.delete(object) }

  /// Writes every pending change to the store in one transaction; see
  /// `ManagedObjectContext.save()`.
  public func save() throws {
    applyPendingMerges()
    try state.save()
  }

  /// Runs the validation a save would run over the pending changes, writing nothing; see
  /// `ManagedObjectContext.validate()`.
  ///
  /// ```swift
  /// try modelContext.validate()
  /// ```
  public func validate() throws { try state.validatePendingChanges() }

  /// Ends the current event of unsaved changes; see
  /// `ManagedObjectContext.processPendingChanges()`. A model context has no `perform` block:
  /// it processes them at the start of a save, after a merge, and when this is called.
  ///
  /// ```swift
  /// modelContext.processPendingChanges()
  /// ```
  public func processPendingChanges() { state.processPendingChanges() }

  /// Calls `body` with each message of type `Message` the context sends, on the context's
  /// executor; see `ManagedObjectContext.addObserver(for:using:)`.
  ///
  /// ```swift
  /// modelContext.addObserver(for: ManagedObjectContext.DidSaveObjectIDsMessage.self) { print($0.insertedIDs) }
  /// ```
  @discardableResult
  public func addObserver<Message: ContextMessage>(
    for type: Message.Type, using body: @escaping (Message) -> Void
  ) -> ContextObservationToken {
    state.addObserver(for: type, using: body)
  }

  /// Stops the observer `token` names.
  ///
  /// ```swift
  /// modelContext.removeObserver(token)
  /// ```
  public func removeObserver(_ token: ContextObservationToken) { state.removeObserver(token) }

  /// Discards every pending change.
  public func rollback() { state.rollback() }
  /// Forgets every object.
  public func reset() { state.reset() }

  /// Reloads (`mergeChanges: true`) or faults an object; see `ManagedObjectContext`.
  public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
    state.refresh(object, mergeChanges: mergeChanges)
  }

  /// Refreshes every registered object with the store's values, keeping unsaved changes.
  public func refreshAllObjects() {
    applyPendingMerges()
    state.refreshAllObjects()
  }

  /// Gives inserted objects their permanent IDs now.
  public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
    try state.obtainPermanentIDs(for: objects)
  }

  // MARK: - Objects by ID

  /// The object for `id`, loaded from the store if needed; throws as
  /// `ManagedObjectContext.existingObject(with:)` does.
  ///
  /// ```swift
  /// let note = try modelContext.existingObject(with: noteID)
  /// ```
  public func existingObject<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    applyPendingMerges()
    return try state.existingObject(with: id)
  }

  /// The object for `id`, as a fault when it is not registered yet; throws as
  /// `ManagedObjectContext.object(with:)` does.
  ///
  /// ```swift
  /// let note = try modelContext.object(with: noteID)
  /// ```
  public func object<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    applyPendingMerges()
    return try state.object(with: id)
  }

  /// The object for `id` if the context already holds it; throws as
  /// `ManagedObjectContext.registeredObject(for:)` does.
  ///
  /// ```swift
  /// let note = try modelContext.registeredObject(for: noteID)
  /// ```
  public func registeredObject<Entity: ManagedObject>(for id: ManagedID<Entity>) throws(ManagedIDError) -> Entity? {
    applyPendingMerges()
    return try state.registeredObject(for: id)
  }
}

extension ManagedObject {
  /// Creates an object and inserts it into `context`.
  ///
  /// ```swift
  /// let note = Note(context: modelContext)
  /// ```
  public convenience init(context: ModelContext) {
    self.init()
    context.insert(self)
  }

  /// The `ModelContext` the object belongs to, or nil (an object of a
  /// `ManagedObjectContext`, or of no context).
  public var modelContext: ModelContext? {
    (tracker as? ContextState)?.modelContext
  }
}
