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

  /// Applies the commits automatic merging delivered and that have not been merged yet.
  func applyPendingMerges() {
    for merge in executor.takePending() {
      switch merge {
      case .changes(let changes): state.mergeChanges(changes)
      case .refreshAllObjects: state.refreshAllObjects()
      }
    }
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

  // MARK: - Objects by ID, fetching, batches, merging

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

  /// The objects the request describes, in its order.
  public func fetch<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> [Entity] {
    applyPendingMerges()
    return try state.fetch(request)
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
    applyPendingMerges()
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
    applyPendingMerges()
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
    applyPendingMerges()
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
    applyPendingMerges()
    return try state.aggregate(function, for: request, groupedBy: relationship)
  }

  /// How many objects the request would fetch, without registering any: unsaved changes
  /// that touch the request count as `fetch(_:)` would see them.
  ///
  /// ```swift
  /// let drafts = try context.count(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "" }))
  /// ```
  public func count<Entity: ManagedObject>(for request: FetchRequest<Entity>) throws -> Int {
    applyPendingMerges()
    return try state.count(for: request)
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
    applyPendingMerges()
    return try state.fetchObjectIDs(for: request)
  }

  /// Runs a batch insert in one transaction, with its history.
  public func execute<Entity: ManagedObject>(_ request: BatchInsertRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Runs a batch update with one UPDATE statement, with its history.
  public func execute<Entity: ManagedObject>(_ request: BatchUpdateRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Runs a batch delete with one DELETE statement, with its history.
  public func execute<Entity: ManagedObject>(_ request: BatchDeleteRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Merges a committed transaction; see `ManagedObjectContext.mergeChanges(_:)`.
  @discardableResult
  public func mergeChanges(_ changes: StoreChanges) -> MergeResult { state.mergeChanges(changes) }

  /// Merges a transaction read from history.
  @discardableResult
  public func mergeChanges(_ transaction: HistoryTransaction) -> MergeResult { state.mergeChanges(transaction) }
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
