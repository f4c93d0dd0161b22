import Foundation

/// A description of objects to fetch: their entity, order and range.
///
/// ```swift
/// var request = FetchRequest<Note>(sortBy: [SortDescriptor(\.createdAt, order: .reverse)])
/// request.fetchLimit = 20
/// let latest: [Note] = try context.fetch(request)
/// ```
///
/// Sorting happens in SQLite: numbers by value, strings by their UTF-8 bytes (SQLite's BINARY
/// collation), nil before any value in ascending order. Rows that sort equal come in primary
/// key order.
public struct FetchRequest<Entity: ManagedObject>: Sendable {
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

  /// Creates a request for every object of `Entity`, in the given order.
  public init(sortBy sortDescriptors: [SortDescriptor<Entity>] = [], fetchLimit: Int = 0, fetchOffset: Int = 0) {
    self.sortDescriptors = sortDescriptors
    self.fetchLimit = fetchLimit
    self.fetchOffset = fetchOffset
  }
}

/// Why a fetch request cannot run; thrown before anything is read.
public enum FetchError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The entity class is not part of the context's model.
  case unknownEntity(String)
  /// A sort key path does not name one attribute.
  case unsupportedSortKey(String)
  /// `fetchLimit` or `fetchOffset` is negative.
  case invalidRange(String)

  public var description: String {
    switch self {
    case .unknownEntity(let name): "\(name) is not an entity of the context's model"
    case .unsupportedSortKey(let key): "cannot sort by \(key): it is not an attribute"
    case .invalidRange(let text): text
    }
  }
}
