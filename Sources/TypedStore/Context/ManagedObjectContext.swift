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
  public func perform<Result: Sendable>(
    _ body: @Sendable (isolated ManagedObjectContext) throws -> Result
  ) async rethrows -> Result {
    try body(self)
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
      try assumeIsolated { try body($0) }
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
  public func delete(_ object: ManagedObject) { state.delete(object) }

  /// Writes every pending change to the store in one transaction.
  ///
  /// On success, inserted objects get permanent IDs and nothing is pending. On failure
  /// nothing is written, and the context keeps its pending changes.
  ///
  /// - Throws: `StoreError.mergeConflict` (with the `.error` merge policy) when updated or
  ///   deleted rows changed since they were read: every such object, with its values,
  ///   `StoreError.uniquenessConflict`, `StoreError.deleteDenied`, `StoreError.validationFailed`,
  ///   `StoreError.danglingReference`, or `StoreError.sqlite`.
  public func save() throws { try state.save() }

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

  // MARK: - Fetching

  /// The objects the request describes, in its order.
  ///
  /// ```swift
  /// let notes: [Note] = try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
  /// ```
  ///
  /// - Throws: `FetchError` for a request that cannot be translated (nothing is read), or the
  ///   store's error.
  public func fetch<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> [Entity] {
    try state.fetch(request)
  }

  /// The request's results, loaded `batchSize` objects at a time as they are read:
  /// TypedStore's `fetchBatchSize`, in SwiftData's shape. Iterating a million rows holds one
  /// batch of objects at a time, where `fetch(_:)` would hold them all.
  ///
  /// ```swift
  /// for note in try context.fetch(FetchRequest<Note>(), batchSize: 1_000) { export(note) }
  /// ```
  ///
  /// - Throws: as `fetch(_:)`; `FetchError.invalidRange` for a batch size below 1.
  public func fetch<Entity: ManagedObject>(_ request: FetchRequest<Entity>, batchSize: Int) throws
    -> FetchResultsCollection<Entity>
  {
    return try state.fetch(request, batchSize: batchSize)
  }

  /// An aggregate of the request's saved rows, computed in SQLite: a value of the
  /// attribute's type, without making objects.
  ///
  /// ```swift
  /// let total = try context.aggregate(.sum(\.score), for: FetchRequest<Player>())      // Double
  /// let first = try context.aggregate(.min(\.joined), for: FetchRequest<Player>())     // Date?
  /// ```
  ///
  /// - Throws: `FetchError.unsupportedAggregate`, the request's errors, or the store's (an
  ///   `Int` sum that overflows).
  public func aggregate<Entity: ManagedObject, Result>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity> = FetchRequest()
  ) throws -> Result {
    return try state.aggregate(function, for: request)
  }

  /// The aggregate for each value of an attribute, as a dictionary by that value (values
  /// equal in Swift are one group: strings by `String`'s `==`, decimals by `Decimal`'s).
  ///
  /// ```swift
  /// let perTeam: [String: Int] = try context.aggregate(.count, for: FetchRequest<Player>(), groupedBy: \.team)
  /// ```
  public func aggregate<Entity: ManagedObject, Result, Key: Hashable>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity> = FetchRequest(),
    groupedBy keyPath: KeyPath<Entity, Key> & Sendable
  ) throws -> [Key: Result] {
    return try state.aggregate(function, for: request, groupedBy: keyPath)
  }

  /// The aggregate for each object a to-one relationship relates the rows to, as a dictionary
  /// by that object's ID; the rows related to none are the group of the `nil` key. Each ID
  /// names the related object's own entity (a subentity's, for an object of a subentity), so
  /// it equals that object's `managedID`.
  ///
  /// ```swift
  /// let revenue: [ManagedID<Customer>?: Decimal] = try context.aggregate(
  ///   .sum(\.total), for: FetchRequest<Order>(), groupedBy: \.customer)
  /// let walkIns = revenue[nil] ?? 0          // orders without a customer
  /// ```
  ///
  /// Like every aggregate, it reads the saved rows: unsaved changes do not count.
  ///
  /// - Throws: `FetchError.unsupportedAggregate` for a key path that is not a to-one
  ///   relationship of `Entity` and for what `aggregate(_:for:)` refuses; the request's errors.
  public func aggregate<Entity: ManagedObject, Result, Destination: ManagedObject>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity> = FetchRequest(),
    groupedBy relationship: KeyPath<Entity, Destination?> & Sendable
  ) throws -> [ManagedID<Destination>?: Result] {
    return try state.aggregate(function, for: request, groupedBy: relationship)
  }

  /// How many objects the request would fetch, without registering any: unsaved changes
  /// that touch the request count as `fetch(_:)` would see them.
  ///
  /// ```swift
  /// let drafts = try context.count(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "" }))
  /// ```
  public func count<Entity: ManagedObject>(for request: FetchRequest<Entity>) throws -> Int {
    try state.count(for: request)
  }

  /// The IDs of the objects the request would fetch, in its order, without registering any:
  /// the context's registered objects are the same before and after. Unsaved changes that
  /// touch the request take part, as in `fetch(_:)` (an inserted object's ID is temporary);
  /// the rows are then read to merge them with the changes, and no object made for that is
  /// kept.
  ///
  /// ```swift
  /// let ids = try context.fetchObjectIDs(for: FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
  /// ```
  public func fetchObjectIDs<Entity: ManagedObject>(for request: FetchRequest<Entity>) throws -> [ManagedID<Entity>] {
    try state.fetchObjectIDs(for: request)
  }

  // MARK: - Batch requests

  /// Inserts the request's rows in one transaction, with its history, without registering
  /// objects.
  ///
  /// ```swift
  /// let result = try context.execute(BatchInsertRequest<Note>(count: 1_000) { i, note in note.title = "\(i)" })
  /// ```
  ///
  /// - Throws: `BatchError` before anything is written for a request that cannot run, or the
  ///   store's error (nothing written).
  public func execute<Entity: ManagedObject>(_ request: BatchInsertRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Sets the request's attributes on its rows with one UPDATE statement, with its history.
  /// Registered objects are not changed: merge the result's changes to see them.
  public func execute<Entity: ManagedObject>(_ request: BatchUpdateRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Deletes the request's rows with one DELETE statement, with their history and tombstones.
  public func execute<Entity: ManagedObject>(_ request: BatchDeleteRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  // MARK: - Merging

  /// Brings the context's objects up to date with a committed transaction.
  ///
  /// - Updated rows: registered objects that are loaded are reloaded from the store, their
  ///   unsaved changes kept on top, and their row version moves to the one read (so a later
  ///   save conflicts only if the row changes again). Faults load the new values when read.
  /// - Deleted rows: registered objects leave the context (`isDeleted` becomes true); unsaved
  ///   changes they had are listed in the result's `discardedChanges`.
  /// - Inserted rows are not loaded: the next fetch sees them.
  ///
  /// Merging the same transaction again changes nothing. A row updated by the transaction
  /// and deleted by a later one (a merger that lags behind) is treated as deleted.
  ///
  /// ```swift
  /// for await changes in container.storeChanges() {
  ///   await context.perform { context in _ = context.mergeChanges(changes) }
  /// }
  /// ```
  @discardableResult
  public func mergeChanges(_ changes: StoreChanges) -> MergeResult { state.mergeChanges(changes) }

  /// Merges a transaction read from history, as `mergeChanges(_:)` merges a live
  /// notification.
  ///
  /// ```swift
  /// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
  ///   context.mergeChanges(transaction)
  /// }
  /// ```
  @discardableResult
  public func mergeChanges(_ transaction: HistoryTransaction) -> MergeResult { state.mergeChanges(transaction) }

  /// Merges transactions in order, in one visit to the context's executor.
  func mergeChanges(_ transactions: [HistoryTransaction]) {
    for transaction in transactions { state.mergeChanges(transaction) }
  }
}

extension ManagedObjectContext: MergeTarget {
  nonisolated func enqueueMerge(_ changes: StoreChanges) { enqueue { $0.mergeChanges(changes) } }
  nonisolated func enqueueRefreshAllObjects() { enqueue { $0.refreshAllObjects() } }
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

/// Gives every entity class a `managedID` typed by its own class.
public protocol ManagedObjectIdentity: AnyObject {}

extension ManagedObject: ManagedObjectIdentity {}

extension ManagedObjectIdentity where Self: ManagedObject {
  /// The object's typed ID: temporary until the object is saved (or given a permanent ID),
  /// then permanent.
  ///
  /// ```swift
  /// let id: ManagedID<Note> = note.managedID
  /// ```
  public var managedID: ManagedID<Self> {
    if keyPathRecorder != nil {
      // A probe finding what a key path reads (`#Predicate { $0.folder?.managedID == id }`).
      recordedIdentityRead = true
      return ManagedID(
        unchecked: AnyManagedID(
          storeIdentifier: ManagedObject.probeStoreIdentifier, entityName: entity?.name ?? "", key: .permanent(0)))
    }
    guard let state = tracker as? ContextState, let id = state.anyID(of: self) else {
      preconditionFailure("TypedStore: \(type(of: self)) has no ID before it is inserted into a context")
    }
    return ManagedID(unchecked: id)
  }
}
