import Foundation

/// Typed, cast-free fetches on the entity type itself: `Note.fetch(in:)`, `Note.first(in:)`,
/// `Note.count(in:)`, `Note.fetchRequest()`. Every ``ManagedObject`` subclass has them; they
/// are ``FetchRequest`` underneath, with its errors.
///
/// ```swift
/// let drafts = try Note.fetch(in: context, where: #Predicate { $0.title.contains("draft") }, sortBy: [SortDescriptor(\.title)])
/// let newest = try Note.first(in: context, sortBy: [SortDescriptor(\.createdAt, order: .reverse)])
/// let count = try Note.count(in: context)
/// ```
public protocol Fetchable: ManagedObject {}

extension ManagedObject: Fetchable {}

extension Fetchable {
  /// A fetch request for this entity.
  ///
  /// ```swift
  /// var request = Note.fetchRequest(where: #Predicate { $0.title.contains("plan") })
  /// request.fetchLimit = 20
  /// ```
  public static func fetchRequest(where predicate: Predicate<Self>? = nil, sortBy sort: [SortDescriptor<Self>] = [])
    -> FetchRequest<Self>
  {
    FetchRequest(predicate: predicate, sortBy: sort)
  }

  /// The objects of this entity (and its subentities) in `context` that match `predicate`,
  /// in `sort`'s order.
  ///
  /// ```swift
  /// let notes = try Note.fetch(in: context, where: #Predicate { $0.title.contains("draft") })
  /// ```
  public static func fetch(
    in context: isolated ManagedObjectContext, where predicate: Predicate<Self>? = nil,
    sortBy sort: [SortDescriptor<Self>] = []
  ) throws -> [Self] {
    try context.fetch(fetchRequest(where: predicate, sortBy: sort))
  }

  /// The first object of this entity that matches `predicate` in `sort`'s order, or nil;
  /// one row is read (`fetchFirst(_:)`).
  ///
  /// ```swift
  /// let first = try Note.first(in: context, where: #Predicate { $0.title == "Inbox" })
  /// ```
  public static func first(
    in context: isolated ManagedObjectContext, where predicate: Predicate<Self>? = nil,
    sortBy sort: [SortDescriptor<Self>] = []
  ) throws -> Self? {
    try context.fetchFirst(fetchRequest(where: predicate, sortBy: sort))
  }

  /// How many objects of this entity match `predicate`, counted by the store.
  ///
  /// ```swift
  /// let drafts = try Note.count(in: context, where: #Predicate { $0.title.contains("draft") })
  /// ```
  public static func count(in context: isolated ManagedObjectContext, where predicate: Predicate<Self>? = nil)
    throws -> Int
  {
    try context.count(for: fetchRequest(where: predicate))
  }

  /// The objects of this entity in a model actor's context that match `predicate`.
  ///
  /// ```swift
  /// let notes = try Note.fetch(in: modelContext, where: #Predicate { $0.title.contains("draft") })
  /// ```
  public static func fetch(
    in context: ModelContext, where predicate: Predicate<Self>? = nil, sortBy sort: [SortDescriptor<Self>] = []
  ) throws -> [Self] {
    try context.fetch(fetchRequest(where: predicate, sortBy: sort))
  }

  /// The first object of this entity in a model actor's context that matches `predicate`.
  ///
  /// ```swift
  /// let first = try Note.first(in: modelContext, sortBy: [SortDescriptor(\.title)])
  /// ```
  public static func first(
    in context: ModelContext, where predicate: Predicate<Self>? = nil, sortBy sort: [SortDescriptor<Self>] = []
  ) throws -> Self? {
    try context.fetchFirst(fetchRequest(where: predicate, sortBy: sort))
  }

  /// How many objects of this entity in a model actor's context match `predicate`.
  ///
  /// ```swift
  /// let count = try Note.count(in: modelContext)
  /// ```
  public static func count(in context: ModelContext, where predicate: Predicate<Self>? = nil) throws -> Int {
    try context.count(for: fetchRequest(where: predicate))
  }
}

extension FetchRequest {
  /// The same request limited to its first object: SQLite reads one row.
  var first: FetchRequest {
    var request = self
    request.fetchLimit = 1
    return request
  }
}

extension ManagedObjectContext {
  /// The first object the request selects, or nil, reading one row, not all of them.
  ///
  /// ```swift
  /// let newest = try context.fetchFirst(FetchRequest<Note>(sortBy: [SortDescriptor(\.createdAt, order: .reverse)]))
  /// ```
  public func fetchFirst<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> Entity? {
    try fetch(request.first).first
  }
}

extension ModelContext {
  /// The first object the request selects, or nil, reading one row, not all of them.
  ///
  /// ```swift
  /// let newest = try modelContext.fetchFirst(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
  /// ```
  public func fetchFirst<Entity: ManagedObject>(_ request: FetchRequest<Entity>) throws -> Entity? {
    try fetch(request.first).first
  }
}
