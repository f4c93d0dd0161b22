import Foundation

/// A description of objects to fetch: their entity, which of them, their order and range.
///
/// ```swift
/// var request = FetchRequest<Note>(
///   predicate: #Predicate { $0.title.contains("draft") && $0.createdAt != nil },
///   sortBy: [SortDescriptor(\.createdAt, order: .reverse)])
/// request.fetchLimit = 20
/// let latest: [Note] = try context.fetch(request)
/// ```
///
/// The predicate runs in SQLite and selects exactly the objects `predicate.evaluate` would
/// select, nil included (see `docs/queries.md`); what cannot be translated throws
/// `PredicateTranslationError` before the store is read.
///
/// Sorting happens in SQLite: numbers by value, strings by their UTF-8 bytes (SQLite's BINARY
/// collation), nil before any value in ascending order. Rows that sort equal come in primary
/// key order.
public struct FetchRequest<Entity: ManagedObject>: Sendable {
  /// Which objects: nil for all of them.
  public var predicate: Predicate<Entity>?
  /// The order of the results; each key path must name an attribute.
  public var sortDescriptors: [SortDescriptor<Entity>]
  /// The most objects to return; 0 means no limit.
  public var fetchLimit: Int = 0
  /// How many objects to skip first.
  public var fetchOffset: Int = 0
  /// Whether objects of subentities are included (true by default).
  public var includesSubentities = true
  /// Whether the context's unsaved inserts and deletes count (true by default).
  public var includesPendingChanges = true
  /// Whether the objects come back as faults, their values read when first touched (false by
  /// default: objects come back loaded, which reads each row once). Objects the context
  /// already holds are returned as they are.
  public var returnsObjectsAsFaults = false
  /// Relationships to load with the results, one query per relationship whatever the number
  /// of objects (two for a many-to-many), instead of one per object when each is touched.
  ///
  /// ```swift
  /// var request = FetchRequest<Folder>()
  /// request.relationshipKeyPathsForPrefetching = [\.notes]
  /// let folders = try context.fetch(request)   // each folder.notes is loaded, with its notes' values
  /// ```
  ///
  /// Each key path must name a relationship of `Entity` (the `@Relationship` property itself,
  /// not a computed property that returns one); the fetch throws `FetchError.notARelationship`
  /// otherwise, before anything is read.
  public var relationshipKeyPathsForPrefetching: [PartialKeyPath<Entity> & Sendable] = []

  /// Creates a request for the objects of `Entity` the predicate selects (all without one),
  /// in the given order.
  ///
  /// ```swift
  /// let firstTen = FetchRequest<Note>(sortBy: [SortDescriptor(\.title)], fetchLimit: 10)
  /// ```
  public init(
    predicate: Predicate<Entity>? = nil, sortBy sortDescriptors: [SortDescriptor<Entity>] = [], fetchLimit: Int = 0,
    fetchOffset: Int = 0
  ) {
    self.predicate = predicate
    self.sortDescriptors = sortDescriptors
    self.fetchLimit = fetchLimit
    self.fetchOffset = fetchOffset
  }

  /// Sets the predicate after checking that it translates to SQL; when it does not, the
  /// request keeps its previous predicate and the error says why.
  ///
  /// ```swift
  /// let published = Status.published   // #Predicate cannot name an enum case: capture it
  /// try request.setPredicate(#Predicate<Note> { $0.status == published })
  /// ```
  ///
  /// The check needs a model that has `Entity`: one of an open store, or `Entity` on its own.
  /// Without either (a subentity whose store is not open), the fetch checks it instead.
  ///
  /// - Throws: `PredicateTranslationError`.
  public mutating func setPredicate(_ predicate: Predicate<Entity>?) throws {
    if let predicate,
      let model = ModelRegistry.model(containing: Entity.self) ?? (try? ManagedObjectModel(Entity.self))
    {
      _ = try PredicateTranslator<Entity>.translate(predicate, model: model)
    }
    self.predicate = predicate
  }
}
