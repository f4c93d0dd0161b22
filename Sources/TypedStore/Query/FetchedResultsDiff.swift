import Foundation

/// What one save or merge changed in a controller's results, in index paths
/// (`[section, item]`): deletions in the old results, the rest in the new ones.
public struct FetchedResultsDiff: Sendable, Equatable {
  /// An object that changed and took another place.
  public struct Move: Sendable, Equatable {
    public let from: IndexPath
    public let to: IndexPath

    public init(from: IndexPath, to: IndexPath) {
      self.from = from
      self.to = to
    }
  }

  public var inserted: [IndexPath] = []
  public var deleted: [IndexPath] = []
  public var moved: [Move] = []
  /// Objects that changed in place.
  public var updated: [IndexPath] = []
  public var insertedSections: [Int] = []
  public var deletedSections: [Int] = []

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

  public var isEmpty: Bool {
    inserted.isEmpty && deleted.isEmpty && moved.isEmpty && updated.isEmpty && insertedSections.isEmpty
      && deletedSections.isEmpty
  }
}
