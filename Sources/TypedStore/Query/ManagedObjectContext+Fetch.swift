// The fetch, count and aggregate methods of a context: Query adds them to the type Context
// declares, so that Context knows nothing of requests.
extension ManagedObjectContext {
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
}
