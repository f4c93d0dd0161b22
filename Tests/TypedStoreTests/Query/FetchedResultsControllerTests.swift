import Foundation
import Synchronization
import Testing
import TypedStore
import TypedStoreTesting

final class DiffRecorder: FetchedResultsControllerDelegate {
  var diffs: [FetchedResultsDiff] = []
  func controller(_ controller: FetchedResultsController<Person>, didChangeContentWith difference: FetchedResultsDiff) {
    diffs.append(difference)
  }
}

@Suite struct FetchedResultsControllerTests {
  func people(function: String = #function) async throws -> PeopleStore {
    try await PeopleStore(
      function: function,
      { index, person in
        person.name = "p\(index)"
        person.age = index * 7 % 30
        person.status = [Status.draft, .published, .archived][index % 3]
      }, count: 30)
  }

  @Test func aControllerFollowsUnsavedChangesAsTheContextProcessesThem() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let request = FetchRequest<Person>(
        predicate: #Predicate { $0.age >= 10 }, sortBy: [SortDescriptor(\.age), SortDescriptor(\.name)])
      let controller = FetchedResultsController(fetchRequest: request, context: context)
      let recorder = DiffRecorder()
      controller.delegate = recorder
      try controller.performFetch()
      var savedRequest = request
      savedRequest.includesPendingChanges = false
      let savedOnly = FetchedResultsController(fetchRequest: savedRequest, context: context)
      let savedRecorder = DiffRecorder()
      savedOnly.delegate = savedRecorder
      try savedOnly.performFetch()
      func check(_ context: isolated ManagedObjectContext) throws {
        let fresh = try context.fetch(request).map(ObjectIdentifier.init)
        #expect(controller.fetchedObjects.map(ObjectIdentifier.init) == fresh)
      }
      let count = controller.fetchedObjects.count

      let person = Person(context: context)
      person.name = "new"
      person.age = 15
      context.processPendingChanges()
      #expect(recorder.diffs.count == 1 && recorder.diffs.last?.inserted.count == 1)
      #expect(controller.fetchedObjects.count == count + 1)
      #expect(savedRecorder.diffs.isEmpty, "a request without pending changes waits for the save")
      try check(context)
      try context.save()
      #expect(recorder.diffs.count == 1, "the save adds nothing the controller has not shown")
      #expect(savedRecorder.diffs.last?.inserted.count == 1)

      person.age = 1  // no longer selected
      context.processPendingChanges()
      #expect(recorder.diffs.last?.deleted.count == 1)
      try check(context)
      context.rollback()
      context.processPendingChanges()
      #expect(recorder.diffs.last?.inserted.count == 1, "the rollback puts it back")
      try check(context)

      let unsaved = Person(context: context)
      unsaved.name = "temporary"
      unsaved.age = 20
      context.processPendingChanges()
      #expect(controller.fetchedObjects.count == count + 2)
      context.delete(unsaved)
      context.processPendingChanges()
      #expect(controller.fetchedObjects.count == count + 1, "an unsaved object deleted: gone")
      try check(context)
      #expect(savedOnly.fetchedObjects.count == count + 1)
    }
  }

  @Test func aControllerFollowsEarlierInsertsUndeletesAndRefreshes() async throws {
    let people = try await people()
    let context = people.container.newBackgroundContext()
    try await context.perform { context in
      let early = Person(context: context)  // inserted before anyone listens
      early.name = "early"
      early.age = 12
      let request = FetchRequest<Person>(
        predicate: #Predicate { $0.age >= 10 }, sortBy: [SortDescriptor(\.age), SortDescriptor(\.name)])
      let controller = FetchedResultsController(fetchRequest: request, context: context)
      try controller.performFetch()
      func check(_ context: isolated ManagedObjectContext, _ comment: Comment) throws {
        let fresh = try context.fetch(request).map(ObjectIdentifier.init)
        #expect(controller.fetchedObjects.map(ObjectIdentifier.init) == fresh, comment)
      }
      try check(context, "an unsaved insert is in the first fetch")
      early.age = 1
      context.processPendingChanges()
      try check(context, "an object inserted before the controller leaves when it no longer matches")
      early.age = 29
      try context.save()
      try check(context, "and the save keeps it in its place")

      let member = try #require(controller.fetchedObjects.first)
      context.delete(member)
      context.processPendingChanges()
      try check(context, "a delete takes it out")
      context.insert(member)  // an undelete, in a later event
      context.processPendingChanges()
      try check(context, "an undelete puts it back")
      context.delete(member)
      context.insert(member)  // both in one event: nothing happened
      context.processPendingChanges()
      try check(context, "a delete taken back in its event changes nothing")

      let moved = controller.fetchedObjects[1]
      moved.age = 2
      context.processPendingChanges()
      try check(context, "an unsaved edit moves it out")
      context.refresh(moved, mergeChanges: false)  // the edit is discarded
      context.processPendingChanges()
      try check(context, "a refresh that discards the edit puts it back")
    }
  }

  @Test func localSavesGiveDiffsAndTheResultsStayEqualToAFetch() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let request = FetchRequest<Person>(
        predicate: #Predicate { $0.age >= 10 }, sortBy: [SortDescriptor(\.age), SortDescriptor(\.name)])
      let controller = FetchedResultsController(fetchRequest: request, context: context)
      let recorder = DiffRecorder()
      controller.delegate = recorder
      try controller.performFetch()
      func check(_ context: isolated ManagedObjectContext) throws {
        let fresh = try context.fetch(request).map(\.managedID)
        #expect(controller.fetchedObjects.map(\.managedID) == fresh)
      }
      try check(context)
      let count = controller.fetchedObjects.count

      let inserted = Person(context: context)
      inserted.name = "new"
      inserted.age = 15
      try context.save()
      try check(context)
      let index = try #require(controller.indexPath(forObject: inserted))
      #expect(recorder.diffs.last == FetchedResultsDiff(inserted: [index]))
      #expect(controller.fetchedObjects.count == count + 1)

      inserted.age = 40  // moves to the end
      try context.save()
      try check(context)
      let moved = try #require(recorder.diffs.last?.moved.first)
      #expect(moved.from == index && moved.to == IndexPath(indexes: [0, count]))

      inserted.name = "renamed"  // same place: an update
      try context.save()
      #expect(recorder.diffs.last == FetchedResultsDiff(updated: [IndexPath(indexes: [0, count])]))

      inserted.age = 1  // no longer selected
      try context.save()
      try check(context)
      #expect(recorder.diffs.last == FetchedResultsDiff(deleted: [IndexPath(indexes: [0, count])]))

      let first = controller.fetchedObjects[0]
      context.delete(first)
      try context.save()
      try check(context)
      #expect(recorder.diffs.last == FetchedResultsDiff(deleted: [IndexPath(indexes: [0, 0])]))
      #expect(recorder.diffs.count == 5)
    }
  }

  @Test func sectionsFollowTheSectionKey() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let request = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
      var byStatus = request
      byStatus.sortDescriptors = [SortDescriptor(\.status.rawValue), SortDescriptor(\.name)]
      let controller = FetchedResultsController(
        fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.age), SortDescriptor(\.name)]), context: context,
        sectionNameKeyPath: \Person.age)
      try controller.performFetch()
      let sections = controller.sections
      #expect(sections.map(\.name) == Array(Set(controller.fetchedObjects.map(\.age))).sorted().map(String.init))
      #expect(sections.map(\.numberOfObjects).reduce(0, +) == 30)
      #expect(controller.object(at: IndexPath(indexes: [1, 0])) === sections[1].objects[0])
      let lonely = Person(context: context)
      lonely.name = "lonely"
      lonely.age = 100
      let recorder = DiffRecorder()
      controller.delegate = recorder
      try context.save()
      #expect(recorder.diffs.last?.insertedSections == [sections.count])
      #expect(recorder.diffs.last?.inserted == [IndexPath(indexes: [sections.count, 0])])
    }
  }

  @Test func changesOfOtherContextsArriveThroughMergesAndTheStream() async throws {
    let people = try await people()
    let live = LiveQuery(container: people.container)
    let stream = try await live.start()
    try await people.container.performBackgroundTask { other in
      let person = Person(context: other)
      person.name = "a first"
      person.age = 3
      try other.save()
    }
    var iterator = stream.makeAsyncIterator()
    let diff = await iterator.next()
    #expect(diff?.inserted == [IndexPath(indexes: [0, 0])])
    #expect(try await live.isCurrent())
    try await people.container.performBackgroundTask { other in
      let request = FetchRequest<Person>(predicate: #Predicate { $0.name == "a first" })
      let person = try #require(try other.fetch(request).first)
      person.age = 20  // leaves the results
      try other.save()
    }
    let second = await iterator.next()
    #expect(second?.deleted == [IndexPath(indexes: [0, 0])])
    #expect(try await live.isCurrent())
  }
}

@Suite struct FetchedResultsControllerInvariantTests {
  /// 300 random saves here and elsewhere (merged from history): after each, the controller's
  /// results are exactly a fresh fetch's, and its diff turns the old index paths into the new.
  @Test func afterEverySaveAndMergeTheResultsEqualAFreshFetch() throws {
    let container = try PersistentContainer.makeTest(model: peopleModel)
    let here = container.newModelContext(name: "here")
    let there = container.newModelContext(name: "there")
    let request = FetchRequest<Person>(
      predicate: #Predicate { $0.age >= 20 || $0.nickname == nil },
      sortBy: [SortDescriptor(\.age), SortDescriptor(\.name, order: .reverse)])
    let controller = FetchedResultsController(fetchRequest: request, context: here, sectionNameKeyPath: \Person.age)
    let recorder = DiffRecorder()
    controller.delegate = recorder
    try controller.performFetch()
    var rng = SeededGenerator(state: 42)
    var token = try container.currentHistoryToken
    for step in 0..<300 {
      let local = Bool.random(using: &rng)
      let context = local ? here : there
      let people = try context.fetch(FetchRequest<Person>())
      switch Int.random(in: 0..<4, using: &rng) {
      case 0 where !people.isEmpty, 1 where !people.isEmpty:
        let person = people[Int.random(in: 0..<people.count, using: &rng)]
        person.age = Int.random(in: 0..<40, using: &rng)
        if Bool.random(using: &rng) { person.nickname = Bool.random(using: &rng) ? nil : "n" }
        if Bool.random(using: &rng) { person.name = "r\(Int.random(in: 0..<50, using: &rng))" }
      case 2 where !people.isEmpty:
        context.delete(people[Int.random(in: 0..<people.count, using: &rng)])
      default:
        let person = Person(context: context)
        person.name = "s\(step)"
        person.age = Int.random(in: 0..<40, using: &rng)
        person.nickname = Bool.random(using: &rng) ? nil : "n"
      }
      let before = controller.fetchedObjects.count
      let diffs = recorder.diffs.count
      try context.save()
      if !local {
        for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
          here.mergeChanges(StoreChanges(transaction))
        }
      }
      token = try container.currentHistoryToken
      let fresh = try here.fetch(request).map(\.managedID)
      #expect(controller.fetchedObjects.map(\.managedID) == fresh, "step \(step)")
      if recorder.diffs.count > diffs, let diff = recorder.diffs.last {
        #expect(before - diff.deleted.count + diff.inserted.count == fresh.count, "step \(step)")
      }
      #expect(controller.sections.map(\.numberOfObjects).reduce(0, +) == fresh.count)
    }
    #expect(recorder.diffs.count > 100)
  }
}

/// A service's live query: a model actor that keeps its controller in its own state.
actor LiveQuery: ModelActor {
  nonisolated let modelExecutor: ModelExecutor
  let modelContext: ModelContext
  private var controller: FetchedResultsController<Person>?
  static let request = FetchRequest<Person>(predicate: #Predicate { $0.age < 10 }, sortBy: [SortDescriptor(\.name)])

  init(container: PersistentContainer) {
    let context = container.newModelContext(name: "live")
    modelExecutor = context.executor
    modelContext = context
  }

  func start() throws -> AsyncStream<FetchedResultsDiff> {
    modelContext.automaticallyMergesChangesFromParent = true
    let controller = FetchedResultsController(fetchRequest: Self.request, context: modelContext)
    try controller.performFetch()
    self.controller = controller
    return controller.changes
  }

  func isCurrent() throws -> Bool {
    controller?.fetchedObjects.map(\.managedID) == (try modelContext.fetch(Self.request)).map(\.managedID)
  }
}
