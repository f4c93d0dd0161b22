import Foundation

/// A live query: a fetch request's results, kept current as the context saves and merges, in
/// typed sections, with the changes of each save or merge as a diff of index paths.
///
/// ```swift
/// actor Board: ModelActor {
///   nonisolated let modelExecutor: ModelExecutor
///   let modelContext: ModelContext
///   var controller: FetchedResultsController<Note>?
///
///   func start() throws {
///     modelContext.automaticallyMergesChangesFromParent = true   // other contexts and processes
///     let controller = FetchedResultsController(
///       fetchRequest: FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]), context: modelContext)
///     try controller.performFetch()
///     self.controller = controller
///   }
/// }
/// // ...
/// for await diff in controller.changes { render(diff.inserted, diff.deleted, diff.moved, diff.updated) }
/// ```
///
/// The controller belongs to its context's isolation domain, as its objects do. After
/// `performFetch()`, every merge into the context (automatic or by `mergeChanges`) and every
/// batch of its unsaved changes it processes (`processPendingChanges()`, which runs at the
/// end of each `perform` block and at the start of a save) that touches the request's entity
/// updates `fetchedObjects` and `sections` and delivers one `FetchedResultsDiff`: to the
/// delegate, and to `changes`. With `includesPendingChanges` off, the request follows the
/// context's saves instead of its unsaved changes. Only the changed
/// objects are looked at: their membership is the predicate evaluated in Swift (the same
/// answer as the SQL, `docs/queries.md`), their place the request's order as SQLite sorts.
/// After `reset()` of the context, call `performFetch()` again.
///
/// With `sectionNameKeyPath`, objects are grouped into sections by that attribute's value (a
/// related object's too: `\Note.folder?.name`), in result order: sort by the section key
/// first, as Core Data asks.
public final class FetchedResultsController<Entity: ManagedObject> {
  /// A group of results that share the section key's value.
  public struct Section {
    /// The section key's value, as text (empty without a section key).
    public let name: String
    /// The section's objects, in order.
    public let objects: [Entity]
    /// How many objects the section holds.
    public var numberOfObjects: Int { objects.count }
  }

  /// The request whose results the controller keeps current.
  public let fetchRequest: FetchRequest<Entity>
  /// The attribute whose value groups the results into sections (Core Data's
  /// `sectionNameKeyPath`); nil for one section of every object.
  public let sectionNameKeyPath: (PartialKeyPath<Entity> & Sendable)?
  /// Told of every change after `performFetch()`.
  public weak var delegate: (any FetchedResultsControllerDelegate<Entity>)?

  private let state: ContextState
  private let entity: EntityDescription?
  private var objects: [Entity] = []
  private var sectionNames: [String] = []
  private var sortKeys: [SortKey] = []
  private var isFetched = false
  private let stream: AsyncStream<FetchedResultsDiff>
  private let continuation: AsyncStream<FetchedResultsDiff>.Continuation

  /// A controller of the request's results in a `ModelContext`.
  ///
  /// ```swift
  /// let controller = FetchedResultsController(
  ///   fetchRequest: FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]), context: modelContext,
  ///   sectionNameKeyPath: \Note.title)
  /// try controller.performFetch()
  /// ```
  public convenience init(
    fetchRequest: FetchRequest<Entity>, context: ModelContext,
    sectionNameKeyPath: (PartialKeyPath<Entity> & Sendable)? = nil
  ) {
    self.init(fetchRequest: fetchRequest, state: context.state, sectionNameKeyPath: sectionNameKeyPath)
  }

  /// A controller of the request's results in a `ManagedObjectContext`, made on its executor.
  ///
  /// ```swift
  /// try await context.perform { context in
  ///   let controller = FetchedResultsController(fetchRequest: FetchRequest<Note>(), context: context)
  ///   try controller.performFetch()
  /// }
  /// ```
  public convenience init(
    fetchRequest: FetchRequest<Entity>, context: isolated ManagedObjectContext,
    sectionNameKeyPath: (PartialKeyPath<Entity> & Sendable)? = nil
  ) {
    self.init(fetchRequest: fetchRequest, state: context.state, sectionNameKeyPath: sectionNameKeyPath)
  }

  init(
    fetchRequest: FetchRequest<Entity>, state: ContextState, sectionNameKeyPath: (PartialKeyPath<Entity> & Sendable)?
  ) {
    self.fetchRequest = fetchRequest
    self.state = state
    self.sectionNameKeyPath = sectionNameKeyPath
    self.entity = state.store.model.entity(for: Entity.self)
    (stream, continuation) = AsyncStream.makeStream(of: FetchedResultsDiff.self)
  }

  deinit {
    state.changeObservers[ObjectIdentifier(self)] = nil
    continuation.finish()
  }

  // MARK: - Results

  /// The results, in order.
  public var fetchedObjects: [Entity] { objects }

  /// The results in sections (one section of every object without a section key).
  public var sections: [Section] {
    guard sectionNameKeyPath != nil else { return objects.isEmpty ? [] : [Section(name: "", objects: objects)] }
    var result: [Section] = []
    var start = 0
    for index in objects.indices where index + 1 == objects.count || sectionNames[index + 1] != sectionNames[index] {
      result.append(Section(name: sectionNames[start], objects: Array(objects[start...index])))
      start = index + 1
    }
    return result
  }

  /// The objects of section `index`.
  public func objects(inSection index: Int) -> [Entity] { sections[index].objects }

  /// The object at an index path (`[section, item]`).
  public func object(at indexPath: IndexPath) -> Entity {
    let starts = sectionNameKeyPath == nil ? [0] : Self.sectionStarts(sectionNames)
    return objects[starts[indexPath[0]] + indexPath[1]]
  }

  /// The index path of an object among the results, if it is one of them.
  public func indexPath(forObject object: Entity) -> IndexPath? {
    objects.firstIndex { $0 === object }.map(indexPath(ofFlat:))
  }

  /// Every diff after `performFetch()`, in order, for `for await`.
  public var changes: AsyncStream<FetchedResultsDiff> { stream }

  // MARK: - Fetching

  /// Fetches the results and starts following the context's saves and merges.
  ///
  /// ```swift
  /// try controller.performFetch()
  /// let first = controller.fetchedObjects.first
  /// ```
  ///
  /// - Throws: as `fetch(_:)`, with `FetchError.unsupportedSortKey` for a section key path
  ///   that is not one attribute (of the object, or of a related object through to-one
  ///   relationships, as a sort key may be).
  public func performFetch() throws {
    guard entity != nil else { throw FetchError.unknownEntity(String(describing: Entity.self)) }
    sortKeys = try state.sortKeys(fetchRequest.sortDescriptors)
    if let sectionNameKeyPath {
      guard state.store.model.sortPath(for: sectionNameKeyPath) != nil else {
        let model = state.store.model
        throw FetchError.unsupportedSortKey(model.describe(sectionNameKeyPath, on: model.entity(for: Entity.self)))
      }
    }
    objects = try state.fetch(fetchRequest)
    sectionNames = sectionNameKeyPath == nil ? [] : objects.map(sectionName)
    if !isFetched {
      isFetched = true
      // Weak: a delegate told of another controller's diff may let this one go meanwhile.
      state.changeObservers[ObjectIdentifier(self)] = { [weak self] changes in self?.apply(changes) }
    }
  }

  // MARK: - Following changes

  /// What of `changes` the controller follows. A request that includes pending changes
  /// follows them as the context processes them (Core Data's controller follows its
  /// context's unsaved changes): of the context's own saves it takes only what the store's
  /// delete rules did beyond the objects it has seen. Otherwise it follows saves and merges.
  private func followed(_ changes: ContextChanges) -> ContextChanges? {
    var changes = changes
    switch (changes.origin, fetchRequest.includesPendingChanges) {
    case (.pendingChanges, false): return nil
    case (.save, true):
      changes.inserted = []
      changes.updated.formIntersection(changes.propagated)
      changes.deleted.formIntersection(changes.propagated)
    default: break
    }
    return changes
  }

  private func apply(_ changes: ContextChanges) {
    guard let entity, let changes = followed(changes) else { return }
    let names = Set(fetchRequest.includesSubentities ? entity.selfAndDescendantNames : [entity.name])
    func ours(_ ids: Set<AnyManagedID>) -> [AnyManagedID] { ids.filter { names.contains($0.entityName) } }
    let deletedIDs = ours(changes.deleted)
    let touchedIDs = ours(changes.inserted.union(changes.updated))
    guard !deletedIDs.isEmpty || !touchedIDs.isEmpty else { return }

    // The changed objects, as the context has them now: only these are looked at. A merged
    // deletion has already taken its object out of the identity map, so deletions go by key.
    let deletedKeys = Set(deletedIDs.compactMap { (try? state.key(for: $0))?.0 })
    var touched: [Entity] = []
    for id in touchedIDs {
      guard let (key, entity) = try? state.key(for: id),
        let object = (try? state.existingObject(for: key, entity: entity)) as? Entity
      else { continue }
      touched.append(object)
    }

    // Out: every changed or deleted object, found by a scan of references and keys (no
    // hashing per result), with its old place.
    let sectioned = sectionNameKeyPath != nil
    let oldStarts = sectioned ? Self.sectionStarts(sectionNames) : [0]
    let oldSections = sectioned ? Self.names(sectionNames, starts: oldStarts) : []
    // Arrays of class references share one layout: the scans below run on
    // `[ManagedObject]` in non-generic functions, not through `Entity`'s value witnesses.
    let all = unsafeBitCast(objects, to: [ManagedObject].self)
    let changed = unsafeBitCast(touched, to: [ManagedObject].self)
    let leaving = leavingIndices(in: all, touched: changed, deletedKeys: deletedKeys)
    var oldPlaces: [(object: Entity, path: IndexPath)] = leaving.map {
      (objects[$0], Self.path(of: $0, starts: oldStarts))
    }
    for index in leaving.reversed() {
      objects.remove(at: index)
      if sectioned { sectionNames.remove(at: index) }
    }
    // In: the changed objects that still match, each at its place in the request's order.
    for object in touched where !object.isDeleted && matches(object) {
      let at = insertionIndex(of: object, in: objects)
      objects.insert(object, at: at)
      if sectioned { sectionNames.insert(sectionName(object), at: at) }
    }

    // The diff: deletions at their old index paths, the rest at their new ones.
    let newStarts = sectioned ? Self.sectionStarts(sectionNames) : [0]
    var diff = FetchedResultsDiff()
    let placedAll = unsafeBitCast(objects, to: [ManagedObject].self)
    for object in touched {
      guard let index = firstIndex(of: object, in: placedAll) else { continue }
      let path = Self.path(of: index, starts: newStarts)
      if let old = oldPlaces.firstIndex(where: { $0.object === object }) {
        if oldPlaces[old].path == path {
          diff.updated.append(path)
        } else {
          diff.moved.append(FetchedResultsDiff.Move(from: oldPlaces[old].path, to: path))
        }
        oldPlaces.remove(at: old)
      } else {
        diff.inserted.append(path)
      }
    }
    diff.deleted = oldPlaces.map(\.path).sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }
    diff.inserted.sort { ($0[0], $0[1]) < ($1[0], $1[1]) }
    diff.updated.sort { ($0[0], $0[1]) < ($1[0], $1[1]) }
    if sectioned {
      let newSections = Self.names(sectionNames, starts: newStarts)
      if oldSections != newSections {
        let (before, after) = (Set(oldSections), Set(newSections))
        diff.insertedSections = newSections.indices.filter { !before.contains(newSections[$0]) }
        diff.deletedSections = oldSections.indices.filter { !after.contains(oldSections[$0]) }
      }
    }
    guard !diff.isEmpty else { return }
    // The stream first: a delegate that saves makes the next diff, which must come after.
    continuation.yield(diff)
    delegate?.controller(self, didChangeContentWith: diff)
  }

  private func matches(_ object: Entity) -> Bool {
    guard let predicate = fetchRequest.predicate else { return true }
    return (try? predicate.evaluate(object)) ?? false
  }

  /// Where `object` goes among `objects` in the request's order (Swift's, from the sort
  /// descriptors, then primary key; unsaved objects last among equals).
  private func insertionIndex(of object: Entity, in objects: [Entity]) -> Int {
    var low = 0
    var high = objects.count
    while low < high {
      let middle = (low + high) / 2
      if precedes(objects[middle], object) { low = middle + 1 } else { high = middle }
    }
    return low
  }

  private func precedes(_ left: Entity, _ right: Entity) -> Bool {
    for sort in sortKeys {
      let comparison = sort.compare(left, right)
      if comparison != .orderedSame { return comparison == .orderedAscending }
    }
    func key(_ object: Entity) -> Int64 { object.objectKey.map { $0.isTemporary ? Int64.max : $0.value } ?? Int64.max }
    return key(left) < key(right)
  }

  private func sectionName(_ object: Entity) -> String {
    guard let sectionNameKeyPath else { return "" }
    var value: Any = object[keyPath: sectionNameKeyPath]
    while let optional = value as? any AnyOptional {
      if optional.isNone { return "" }
      guard let wrapped = Mirror(reflecting: value).children.first?.value else { return "" }
      value = wrapped
    }
    return String(describing: value)
  }

  private func indexPath(ofFlat index: Int) -> IndexPath {
    Self.path(of: index, starts: sectionNameKeyPath == nil ? [0] : Self.sectionStarts(sectionNames))
  }

  /// Where each section begins, as flat indexes.
  private static func sectionStarts(_ names: [String]) -> [Int] {
    guard !names.isEmpty else { return [] }
    var starts = [0]
    for index in names.indices.dropFirst() where names[index] != names[index - 1] { starts.append(index) }
    return starts
  }

  private static func names(_ names: [String], starts: [Int]) -> [String] { starts.map { names[$0] } }

  /// `[section, item]` of a flat index.
  private static func path(of index: Int, starts: [Int]) -> IndexPath {
    var low = 0
    var high = starts.count
    while low < high {
      let middle = (low + high) / 2
      if starts[middle] <= index { low = middle + 1 } else { high = middle }
    }
    let section = max(0, low - 1)
    return IndexPath(indexes: [section, index - (starts.isEmpty ? 0 : starts[section])])
  }
}

// MARK: - Scans, outside the generic class so that they are compiled for class references

/// The indexes of the results that changed (by reference) or whose rows were deleted (by key).
private func leavingIndices(in objects: [ManagedObject], touched: [ManagedObject], deletedKeys: Set<ObjectKey>) -> [Int]
{
  // Few changes (the usual case): compare references; many: hash them.
  let touchedSet = touched.count > 16 ? Set(touched.map(ObjectIdentifier.init)) : []
  var leaving: [Int] = []
  for index in objects.indices {
    let object = objects[index]
    let isTouched =
      touchedSet.isEmpty ? touched.contains { $0 === object } : touchedSet.contains(ObjectIdentifier(object))
    if isTouched || (!deletedKeys.isEmpty && object.objectKey.map(deletedKeys.contains) == true) {
      leaving.append(index)
    }
  }
  return leaving
}

private func firstIndex(of object: ManagedObject, in objects: [ManagedObject]) -> Int? {
  objects.firstIndex { $0 === object }
}
