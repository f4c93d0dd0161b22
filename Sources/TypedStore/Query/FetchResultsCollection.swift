/// The results of a fetch, materialized a batch at a time as they are read: the keys of every
/// result are read at once (8 bytes a row), the objects of one batch are loaded when an
/// element of it is first read, and the previous batch is let go, so iterating a million rows
/// holds about one batch of objects (SwiftData's `FetchResultsCollection`).
///
/// ```swift
/// try await context.perform { context in
///   for note in try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]), batchSize: 1_000) {
///     index(note.title)
///   }
/// }
/// ```
///
/// Use it where the context that made it is used (the context's executor); it is not
/// `Sendable`. The set of results and their order are fixed when it is made; rows inserted
/// afterwards are not in it. A row deleted afterwards, whose object the context no longer
/// holds, gives a fault that is marked deleted when read (`shouldDeleteInaccessibleFaults`);
/// an object the context still holds stays as it is until the deletion is merged.
public final class FetchResultsCollection<Entity: ManagedObject>: RandomAccessCollection {
  /// How many objects are loaded at once.
  public let batchSize: Int
  private let keys: [Int64]
  /// Unsaved objects among the results (keys `-1 - index`).
  private let held: [Entity]
  private let state: ContextState
  private var batchStart = -1
  private var batch: [Entity] = []

  init(keys: [Int64], held: [Entity], batchSize: Int, state: ContextState) {
    self.keys = keys
    self.held = held
    self.batchSize = batchSize
    self.state = state
  }

  /// The first position: 0.
  public var startIndex: Int { 0 }
  /// The number of results: one past the last position.
  public var endIndex: Int { keys.count }

  /// The object at `position`; the first read of a batch loads it in one query.
  public subscript(position: Int) -> Entity {
    precondition(position >= 0 && position < keys.count, "FetchResultsCollection: index \(position) out of range")
    let start = position - position % batchSize
    if start != batchStart { load(from: start) }
    return batch[position - start]
  }

  private func load(from start: Int) {
    let range = start..<Swift.min(keys.count, start + batchSize)
    batch = []  // let the previous batch go first
    let stored = keys[range].filter { $0 >= 0 }
    // A batch that cannot be read in one query (the store failed) gives faults, loaded when
    // first read.
    let loaded =
      (try? state.objects(Entity.self, keys: stored[...]))
      ?? stored.compactMap { key in
        state.store.model.entity(for: Entity.self).map { state.fault(Entity.self, of: $0, primaryKey: key) }
      }
    var next = loaded.makeIterator()
    batch = keys[range].compactMap { key in key >= 0 ? next.next() : held[Int(-key - 1)] }
    batchStart = start
  }
}
