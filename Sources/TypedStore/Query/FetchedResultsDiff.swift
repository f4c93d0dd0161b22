import Foundation

/// What one save or merge changed in a controller's results, in index paths
/// (`[section, item]`): deletions in the old results, the rest in the new ones.
public struct FetchedResultsDiff: Sendable, Equatable {
  /// An object that changed and took another place.
  public struct Move: Sendable, Equatable {
    /// Where the object was, in the old results.
    public let from: IndexPath
    /// Where the object is, in the new results.
    public let to: IndexPath

    /// A move from one index path to another.
    public init(from: IndexPath, to: IndexPath) {
      self.from = from
      self.to = to
    }
  }

  /// Objects new in the results, at their index paths in the new results.
  public var inserted: [IndexPath] = []
  /// Objects that left the results, at their index paths in the old results.
  public var deleted: [IndexPath] = []
  /// Objects that changed and took another place.
  public var moved: [Move] = []
  /// Objects that changed in place.
  public var updated: [IndexPath] = []
  /// Sections new in the results, by index in the new sections.
  public var insertedSections: [Int] = []
  /// Sections that left the results, by index in the old sections.
  public var deletedSections: [Int] = []

  /// A diff with the given changes (none by default).
  public init(
    inserted: [IndexPath] = [], deleted: [IndexPath] = [], moved: [Move] = [], updated: [IndexPath] = [],
    insertedSections: [Int] = [], deletedSections: [Int] = []
  ) {
    self.inserted = inserted
    self.deleted = deleted
    self.moved = moved
    self.updated = updated
    self.insertedSections = insertedSections
    self.deletedSections = deletedSections
  }

  /// True when nothing changed.
  public var isEmpty: Bool {
    inserted.isEmpty && deleted.isEmpty && moved.isEmpty && updated.isEmpty && insertedSections.isEmpty
      && deletedSections.isEmpty
  }
}
