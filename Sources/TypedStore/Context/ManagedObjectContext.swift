import Foundation

/// A scratch pad of managed objects over one store, with its own serial executor.
///
/// ```swift
/// let context = container.newBackgroundContext()
/// try await context.perform { context in
///   context.transactionAuthor = "importer"
///   let note = Note(context: context)
///   note.title = "Draft"
///   try context.save()
/// }
/// ```
///
/// A context is an actor whose executor is a serial dispatch queue. Its objects are not
/// `Sendable`: they stay on that executor, which the compiler checks. There are two ways in:
/// `perform` (async) and `performAndWait` (blocking), both handing the body the context as an
/// `isolated` parameter, and `ModelActor`, an actor that shares a context's executor.
///
/// Within a context there is one object per row (the identity map). Fetched objects are loaded;
/// `object(with:)` returns a fault, loaded on its first attribute read. Changes are tracked per
/// attribute and written by `save()` through the store's one write path, in one transaction.
public actor ManagedObjectContext {
  let executor: ContextExecutor
  let state: ContextState

  /// The store the context reads and writes.
  public nonisolated let persistentStore: PersistentStore

  /// The context's serial executor, which its objects never leave.
  public nonisolated var unownedExecutor: UnownedSerialExecutor {
    executor.asUnownedSerialExecutor()
  }

  /// Creates a context over `store`. Containers make contexts; use
  /// `container.newBackgroundContext()`.
  public init(store: PersistentStore, name: String? = nil) {
    self.init(store: store, name: name, automaticMerging: nil)
  }

  /// A context whose `automaticallyMergesChangesFromParent` subscribes through
  /// `automaticMerging` (the container that makes it wires it to its change notifications).
  init(store: PersistentStore, name: String?, automaticMerging: ContextState.AutomaticMerging?) {
    self.persistentStore = store
    self.executor = ContextExecutor(label: "TypedStore.context.\(name ?? "unnamed")")
    let state = ContextState(store: store, name: name)
    state.automaticMerging = automaticMerging
    self.state = state
    state.context = self
  }

  /// Runs `body` on the context's executor after everything enqueued before it: for work
  /// that must keep its order, such as merging commits one after the other.
  nonisolated func enqueue(_ body: @escaping @Sendable (isolated ManagedObjectContext) -> Void) {
    executor.queue.async { self.assumeIsolated { body($0) } }
  }

  // MARK: - Running code on the context

  /// Runs `body` on the context's executor and returns its result.
  ///
  /// ```swift
  /// let count = try await context.perform { context in try context.count(for: FetchRequest<Note>()) }
  /// ```
  ///
  /// When `body` returns, the context processes its pending changes
  /// (`processPendingChanges()`), as Core Data's does at the end of a block.
  public func perform<Result: Sendable>(
    _ body: @Sendable (isolated ManagedObjectContext) throws -> Result
  ) async rethrows -> Result {
    defer { state.processPendingChanges() }
    return try body(self)
  }

  /// Runs `body` on the context's executor, blocking the calling thread until it returns.
  /// Called from the context's own executor, it runs `body` at once.
  ///
  /// ```swift
  /// let titles = context.performAndWait { context in (try? context.fetch(FetchRequest<Note>()))?.map(\.title) }
  /// ```
  public nonisolated func performAndWait<Result: Sendable>(
    _ body: @Sendable (isolated ManagedObjectContext) throws -> Result
  ) rethrows -> Result {
    if executor.isCurrent {
      return try assumeIsolated { try body($0) }
    }
    return try executor.queue.sync {
      try assumeIsolated { context in
        defer { context.state.processPendingChanges() }
        return try body(context)
      }
    }
  }

  // MARK: - Configuration

  /// The context's name, recorded with each transaction it saves.
  public var name: String? {
    get { state.name }
    set { state.name = newValue }
  }

  /// What happens when a fault is read whose row no longer exists (another context or
  /// process deleted it after the fault was made): true (the default, as in Core Data) marks
  /// the object deleted — it leaves the context, `isDeleted` is true, and its attributes keep
  /// the values they last had (a fault never loaded has its defaults); false stops the
  /// program, for code that wants to find such reads.
  ///
  /// ```swift
  /// let note = try context.object(with: id)  // a fault
  /// // ... another process deletes the row ...
  /// _ = note.title                           // "" and note.isDeleted == true
  /// ```
  public var shouldDeleteInaccessibleFaults: Bool {
    get { state.shouldDeleteInaccessibleFaults }
    set { state.shouldDeleteInaccessibleFaults = newValue }
  }

  /// Whether the context merges every commit to its store as it happens, as Core Data's
  /// property of that name does: commits of the container's other contexts, batch requests,
  /// and — through the remote-change monitor — commits of other processes. Each commit is
  /// merged once, in commit order, with `mergeChanges(_:)`; the context's own saves are left
  /// out. When history was deleted before the monitor could read it, the context refreshes
  /// every object it holds. Only for contexts a `PersistentContainer` made.
  ///
  /// ```swift
  /// let context = container.newBackgroundContext()
  /// await context.perform { $0.automaticallyMergesChangesFromParent = true }
  /// ```
  public var automaticallyMergesChangesFromParent: Bool {
    get { state.automaticMergeSubscription != nil }
    set { state.setMergesAutomatically(newValue, into: self) }
  }

  /// Refreshes every registered object with the store's values, keeping unsaved changes on
  /// top; objects whose rows are gone are marked deleted. The recovery when changes could not
  /// be merged one by one (history deleted before it was read).
  public func refreshAllObjects() { state.refreshAllObjects() }

  /// How `save()` resolves conflicts with other writers (see `MergePolicy` for every
  /// outcome). `.error`, the default, throws `StoreError.mergeConflict` and writes nothing.
  ///
  /// ```swift
  /// context.mergePolicy = .storeTrump
  /// ```
  public var mergePolicy: MergePolicy {
    get { state.mergePolicy }
    set { state.mergePolicy = newValue }
  }

  /// The author recorded with each transaction this context saves.
  public var transactionAuthor: String? {
    get { state.transactionAuthor }
    set { state.transactionAuthor = newValue }
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

  /// Marks an object for deletion at the next save; an object inserted and not yet saved is
  /// simply dropped.
  ///
  /// ```swift
  /// context.delete(try context.existingObject(with: noteID))
  /// try context.save()   // the row, its history and its tombstone
  /// ```
  public func delete(_ object: ManagedObject) { state.delete(object) }

  /// Writes every pending change to the store in one transaction.
  ///
  /// ```swift
  /// try await context.perform { context in
  ///   let note = Note(context: context)
  ///   note.title = "Draft"
  ///   try context.save()
  /// }
  /// ```
  ///
  /// On success, inserted objects get permanent IDs and nothing is pending. On failure
  /// nothing is written, and the context keeps its pending changes.
  ///
  /// - Throws: `StoreError.mergeConflict` (with the `.error` merge policy) when updated or
  ///   deleted rows changed since they were read: every such object, with its values,
  ///   `StoreError.uniquenessConflict`, `StoreError.deleteDenied`, `StoreError.validationFailed`,
  ///   `StoreError.danglingReference`, or `StoreError.sqlite`.
  public func save() throws { try state.save() }

  /// Runs the validation a save would run over the pending changes (the model's rules, then
  /// each object's `validateForInsert()`, `validateForUpdate()` or `validateForDelete()`),
  /// and writes nothing.
  ///
  /// ```swift
  /// do { try context.validate() } catch StoreError.validationFailed(let failures) { show(failures) }
  /// ```
  ///
  /// - Throws: `StoreError.validationFailed` with every failure.
  public func validate() throws { try state.validatePendingChanges() }

  /// Ends the current event of unsaved changes (Core Data's `processPendingChanges()`): the
  /// observers of `ObjectsDidChangeMessage` hear what changed since the last one, live queries
  /// that include pending changes follow them, and `changedValuesForCurrentEvent()` starts
  /// over. It runs by itself at the end of each `perform` block, at the start of a save and
  /// after a merge.
  ///
  /// ```swift
  /// note.title = "Renamed"
  /// context.processPendingChanges()   // observers hear of the change now
  /// ```
  public func processPendingChanges() { state.processPendingChanges() }

  /// Calls `body` with each message of type `Message` the context sends, on the context's
  /// executor, until the observer is removed: `ObjectsDidChangeMessage`, `WillSaveMessage`,
  /// `DidSaveMessage` or `DidSaveObjectIDsMessage` (Core Data's context notifications).
  ///
  /// ```swift
  /// let token = context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
  ///   print(message.inserted.count, "inserted,", message.updated.count, "updated")
  /// }
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
  /// context.removeObserver(token)
  /// ```
  public func removeObserver(_ token: ContextObservationToken) { state.removeObserver(token) }

  /// Discards every pending change: inserted objects are dropped, updated objects get their
  /// saved values back, deleted objects are kept.
  public func rollback() { state.rollback() }

  /// Forgets every object. Objects fetched before must not be used afterwards.
  public func reset() { state.reset() }

  /// Turns `object` back into a fault, dropping its unsaved changes; with `mergeChanges`
  /// reloads its saved values now and keeps its unsaved changes on top. An object whose row
  /// is gone is marked deleted (see `shouldDeleteInaccessibleFaults`).
  ///
  /// ```swift
  /// context.refresh(note, mergeChanges: true)   // note has the store's values, plus its edits
  /// ```
  public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
    state.refresh(object, mergeChanges: mergeChanges)
  }

  /// Gives inserted objects their permanent IDs now, before they are saved.
  public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
    try state.obtainPermanentIDs(for: objects)
  }

  // MARK: - Objects by ID

  /// The object for `id`, loaded from the store if needed (never a fault).
  ///
  /// ```swift
  /// let note = try context.existingObject(with: noteID)
  /// ```
  ///
  /// An ID names one row of one store, of one entity; a temporary ID names an inserted object
  /// of this context only. Anything else throws, and nothing is registered.
  ///
  /// - Throws: `ManagedIDError.noSuchRow` when no row exists for the ID (deleted, or never
  ///   saved), `.foreignStore` for an ID of another store, `.temporaryID` for a temporary ID
  ///   made elsewhere (or whose object was saved since), `.entityMismatch` when the ID's entity
  ///   is not `Entity` or the row's; `AttributeDecodingError` for a row whose values another
  ///   tool changed into something the attributes cannot hold.
  public func existingObject<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    try state.existingObject(with: id)
  }

  /// The object for `id`, as a fault when it is not registered yet: its values are not read.
  ///
  /// ```swift
  /// let note = try context.object(with: noteID)   // a fault; its title loads when read
  /// ```
  ///
  /// For an ID not registered, one primary-key read checks that the row exists and is of the
  /// ID's entity, so that no object is registered (and no save writes a row) for an ID that
  /// names none. Reading an attribute of a fault whose row was deleted since marks it deleted
  /// (see `shouldDeleteInaccessibleFaults`).
  ///
  /// - Throws: the `ManagedIDError` cases `existingObject(with:)` throws, or the store's error.
  public func object<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    try state.object(with: id)
  }

  /// The object for `id` if the context already holds it: no I/O, so nil for any row not
  /// registered (a deleted one included).
  ///
  /// ```swift
  /// if let note = try context.registeredObject(for: noteID) { print(note.title) }
  /// ```
  ///
  /// - Throws: `ManagedIDError.foreignStore`, `.temporaryID` or `.entityMismatch`, as
  ///   `existingObject(with:)` does, for an ID that cannot name an object of this context.
  public func registeredObject<Entity: ManagedObject>(for id: ManagedID<Entity>) throws(ManagedIDError) -> Entity? {
    try state.registeredObject(for: id)
  }
}

// MARK: - Objects and their context

extension ManagedObject {
  /// Creates an object and inserts it into `context`.
  ///
  /// ```swift
  /// let note = Note(context: context)
  /// ```
  public convenience init(context: isolated ManagedObjectContext) {
    self.init()
    context.insert(self)
  }

  /// The context the object belongs to; nil for an object in no context, and for one that
  /// has left its context: its deletion was saved, its row was found deleted (by a merge or
  /// when a fault was read), it was inserted and then deleted or rolled back, or the context
  /// was reset.
  ///
  /// ```swift
  /// try context.save()
  /// let gone = note.managedObjectContext == nil   // true once a save deleted its row
  /// ```
  public var managedObjectContext: ManagedObjectContext? {
    guard lifecycle != .invalidated else { return nil }
    return (tracker as? ContextState)?.context
  }
}
