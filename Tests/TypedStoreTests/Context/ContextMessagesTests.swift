import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

/// What a jotting's hooks and its context's messages saw, in order.
private let jottingEvents = Recorder<String>()

/// An entity whose save hooks say when they run, to order them against the messages.
enum JottingError: Error { case negativeWords }

final class Jotting: ManagedObject {
  @Attribute var text: String = ""
  @Attribute var words: Int = 0
  override func validateForUpdate() throws {
    try super.validateForUpdate()
    if words < 0 { throw JottingError.negativeWords }
  }
  override func willSave() {
    super.willSave()
    jottingEvents.add("willSave() \(text)")
  }
  override func didSave() {
    super.didSave()
    jottingEvents.add("didSave() \(text)")
  }
}

private let jottingModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Jotting.self) } catch { fatalError("fixture model: \(error)") }
}()

/// The objects of one `ObjectsDidChangeMessage`, by their text, per set.
private struct Seen: Equatable, CustomStringConvertible {
  var inserted: [String] = []
  var updated: [String] = []
  var deleted: [String] = []
  var refreshed: [String] = []
  var invalidated: [String] = []
  var invalidatedAll = false

  init(
    inserted: [String] = [], updated: [String] = [], deleted: [String] = [], refreshed: [String] = [],
    invalidated: [String] = [], invalidatedAll: Bool = false
  ) {
    (self.inserted, self.updated, self.deleted) = (inserted, updated, deleted)
    (self.refreshed, self.invalidated, self.invalidatedAll) = (refreshed, invalidated, invalidatedAll)
  }

  init(_ message: ManagedObjectContext.ObjectsDidChangeMessage) {
    func texts(_ jottings: Set<Jotting>) -> [String] { jottings.map(\.text).sorted() }
    inserted = texts(message.inserted(Jotting.self))
    updated = texts(message.updated(Jotting.self))
    deleted = texts(message.deleted(Jotting.self))
    refreshed = texts(message.refreshed(Jotting.self))
    invalidated = texts(Set(message.invalidated.compactMap { $0 as? Jotting }))
    invalidatedAll = message.invalidatedAll
  }

  var description: String {
    "+\(inserted) ~\(updated) -\(deleted) ↻\(refreshed) ✗\(invalidated)\(invalidatedAll ? " all" : "")"
  }
}

/// Collects a context's `ObjectsDidChangeMessage`s.
private final class Messages: Sendable {
  private let seen = Mutex<[Seen]>([])
  var isEmpty: Bool { seen.withLock { $0.isEmpty } }
  func add(_ message: ManagedObjectContext.ObjectsDidChangeMessage) {
    let one = Seen(message)
    seen.withLock { $0.append(one) }
  }
  func take() -> [Seen] {
    seen.withLock { seen in
      defer { seen = [] }
      return seen
    }
  }
}

@Suite struct ContextMessagesTests {
  private func saved(_ texts: [String], in container: PersistentContainer) async throws {
    try await container.performBackgroundTask { context in
      for text in texts { Jotting(context: context).text = text }
      try context.save()
    }
  }

  @Test func objectsDidChangeReportsEachEventOnceAtTheEndOfAPerform() async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel)
    try await saved(["b", "c"], in: container)
    let context = container.newBackgroundContext()
    let messages = Messages()
    try await context.perform { context in
      context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { messages.add($0) }
      let jottings = try Jotting.fetch(in: context, sortBy: [SortDescriptor(\.text)])
      #expect(messages.take().isEmpty, "a fetch changes nothing")
      Jotting(context: context).text = "a"
      jottings[0].words = 1
      jottings[0].words = 2
      context.delete(jottings[1])
      let gone = Jotting(context: context)
      gone.text = "gone"
      context.delete(gone)  // inserted and deleted in one event: nothing to report
      #expect(messages.isEmpty, "nothing until the event ends")
    }
    #expect(messages.take() == [Seen(inserted: ["a"], updated: ["b"], deleted: ["c"])])

    try await context.perform { context in
      let jottings = try Jotting.fetch(in: context, sortBy: [SortDescriptor(\.text)])
      jottings[0].text = "a2"  // inserted in an earlier event: now an update
      jottings[1].words = 3
      context.processPendingChanges()
      #expect(messages.take() == [Seen(updated: ["a2", "b"])])
      jottings[1].words = 4
      context.processPendingChanges()
      context.processPendingChanges()  // nothing new: no message
      #expect(messages.take() == [Seen(updated: ["b"])])
      context.refresh(jottings[1], mergeChanges: false)
      context.processPendingChanges()
      #expect(messages.take() == [Seen(refreshed: ["b"])])
      jottings[1].words = 5
      context.rollback()
    }
    #expect(messages.take() == [Seen(refreshed: ["b", "c"], invalidated: ["a2"])])
    await context.perform { context in context.reset() }
    #expect(messages.take() == [Seen(invalidatedAll: true)])
  }

  @Test func aMergeReportsWhatItRefreshedAndDeleted() async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel)
    try await saved(["kept", "edited", "removed"], in: container)
    let context = container.newBackgroundContext()
    let messages = Messages()
    let ids = try await context.perform { context in
      context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { messages.add($0) }
      return try Jotting.fetch(in: context, sortBy: [SortDescriptor(\.text)]).map(\.managedID)
    }
    let changes = try await container.performBackgroundTask { other in
      let jottings = try ids.map { try other.existingObject(with: $0) }
      jottings[0].words = 9  // "edited"
      other.delete(jottings[2])  // "removed"
      try other.save()
      return try container.fetchHistory(HistoryRequest()).last.map { StoreChanges($0) }
    }
    let merged = try #require(changes)
    await context.perform { context in _ = context.mergeChanges(merged) }
    #expect(messages.take() == [Seen(deleted: ["removed"], refreshed: ["edited"])])
  }

  @Test func anotherProcesssCommitIsReportedOnceMerged() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(ObservedEvent.self))
    let path = container.persistentStore.location
    let ids = try await container.performBackgroundTask { context in
      let events = (1...2).map { sequence in
        let event = ObservedEvent(context: context)
        event.sequence = sequence
        return event
      }
      try context.save()
      return events.map(\.managedID)
    }
    let seen = Recorder<String>()
    let viewer = container.newBackgroundContext()
    try await viewer.perform { context in
      context.automaticallyMergesChangesFromParent = true
      context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
        for event in message.refreshed(ObservedEvent.self) { seen.add("refreshed \(event.sequence)") }
        for event in message.deleted(ObservedEvent.self) { seen.add("deleted \(event.managedID == ids[1])") }
      }
      for id in ids { _ = try context.existingObject(with: id).sequence }
    }
    let setter = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), ["set", path, String(ids[0].primaryKey ?? 0), "42"])
    #expect(setter.finish().contains("done"))
    let deleter = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), ["delete", path, String(ids[1].primaryKey ?? 0)])
    #expect(deleter.finish().contains("done"))
    #expect(await eventually { seen.all.count >= 2 })
    #expect(seen.all == ["refreshed 42", "deleted true"], "each commit once, typed, with its merged values")
  }

  @Test func saveMessagesComeInCoreDatasOrderWithTheSavedObjectsAndIDs() async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel)
    try await saved(["s-old", "s-doomed"], in: container)
    let (ids, objectTexts) = try await container.performBackgroundTask {
      context -> (ManagedObjectContext.DidSaveObjectIDsMessage?, [String]) in
      var idMessage: ManagedObjectContext.DidSaveObjectIDsMessage?
      var objectTexts: [String] = []
      context.addObserver(for: ManagedObjectContext.WillSaveMessage.self) { _ in jottingEvents.add("WillSaveMessage") }
      context.addObserver(for: ManagedObjectContext.DidSaveMessage.self) { message in
        jottingEvents.add("DidSaveMessage")
        guard objectTexts.isEmpty else { return }
        objectTexts = [message.inserted, message.updated, message.deleted].map {
          $0.compactMap { ($0 as? Jotting)?.text }.sorted().joined(separator: ",")
        }
      }
      let token = context.addObserver(for: ManagedObjectContext.DidSaveObjectIDsMessage.self) { idMessage = $0 }
      try context.save()  // nothing to save: no message
      #expect(idMessage == nil)
      let jottings = try Jotting.fetch(in: context, sortBy: [SortDescriptor(\.text)])
      jottings[1].text = "s-old2"
      context.delete(jottings[0])
      Jotting(context: context).text = "s-new"
      try context.save()
      context.removeObserver(token)
      Jotting(context: context).text = "later"
      try context.save()
      return (idMessage, objectTexts)
    }
    let mine = jottingEvents.all.filter { $0.contains("s-") || $0.hasSuffix("Message") }
    let order = mine.drop { $0 != "WillSaveMessage" }.prefix(8)
    #expect(
      Array(order) == [
        "WillSaveMessage", "willSave() s-new", "willSave() s-old2", "willSave() s-doomed",
        "didSave() s-new", "didSave() s-old2", "didSave() s-doomed", "DidSaveMessage",
      ])
    #expect(objectTexts == ["s-new", "s-old2", "s-doomed"])
    let message = try #require(ids)
    #expect(message.inserted(Jotting.self).count == 1 && message.updated(Jotting.self).count == 1)
    #expect(message.deletedIDs.count == 1 && message.insertedIDs.allSatisfy { !$0.isTemporaryID })
  }

  @Test func changedValuesForCurrentEventAreTheValuesBeforeThisEvent() async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel)
    try await saved(["saved"], in: container)
    try await container.newBackgroundContext().perform { context in
      let jotting = try #require(try Jotting.first(in: context))
      jotting.text = "first"
      #expect(jotting.changedValuesForCurrentEvent()["text"] as? String == "saved")
      context.processPendingChanges()
      #expect(jotting.changedValuesForCurrentEvent().isEmpty, "a new event: nothing changed in it yet")
      jotting.text = "second"
      jotting.words = 5
      let current = jotting.changedValuesForCurrentEvent()
      #expect(current["text"] as? String == "first" && current["words"] as? Int == 0 && current.count == 2)
      #expect(jotting.changedValues()["text"] as? String == "second", "changedValues: since the save")
      #expect(jotting.committedValue(for: \Jotting.text) == "saved")
      jotting.words = 0
      #expect(jotting.changedValuesForCurrentEvent().keys.sorted() == ["text"], "set back: not a change")
      let inserted = Jotting(context: context)
      inserted.text = "new"
      #expect(inserted.changedValuesForCurrentEvent().isEmpty, "an unsaved object has no old values")
    }
  }

  @Test func aSaveReportsWhatItsDeleteRulesDeletedInMemory() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let deleted = try await container.performBackgroundTask { context -> [[String]] in
      let shelf = Shelf(context: context)
      shelf.name = "S"
      for title in ["x", "y"] {
        let book = Book(context: context)
        book.title = title
        book.shelf = shelf
      }
      try context.save()
      var deleted: [[String]] = []
      context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
        deleted.append(message.deleted(Book.self).map(\.title).sorted() + message.deleted(Shelf.self).map(\.name))
      }
      context.delete(shelf)
      try context.save()  // the cascade runs in the save; its deletes are reported there
      return deleted
    }
    #expect(deleted == [["S"], ["x", "y"]])
  }

  @Test func anObserverReadsTheEventsOwnChangesInChangedValuesForCurrentEvent() async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel)
    try await saved(["before"], in: container)
    let seen = Recorder<String>()
    let context = container.newBackgroundContext()
    try await context.perform { context in
      context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
        for jotting in message.updated(Jotting.self) {
          let old = jotting.changedValuesForCurrentEvent()
          seen.add("\(old["text"] as? String ?? "-") → \(jotting.text)")
          if jotting.text == "second" { jotting.words = 1 }  // a change made here: the next event's
        }
      }
      let jotting = try #require(try Jotting.first(in: context))
      jotting.text = "first"
    }
    try await context.perform { context in
      let jotting = try #require(try Jotting.first(in: context))
      jotting.text = "second"
    }
    try await context.perform { context in
      let jotting = try #require(try Jotting.first(in: context))
      #expect(jotting.changedValuesForCurrentEvent()["words"] as? Int == 0, "the observer's change is this event's")
      jotting.text = "third"
    }
    #expect(seen.all == ["before → first", "first → second", "second → third"])
  }

  @Test(arguments: [false, true])
  func aFailedSaveEndsTheEvent(observed: Bool) async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel, variant: "\(observed)")
    try await saved(["A"], in: container)
    try await container.newBackgroundContext().perform { context in
      if observed { context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { _ in } }
      let jotting = try #require(try Jotting.first(in: context))
      jotting.text = "B"
      context.processPendingChanges()
      jotting.text = "C"
      jotting.words = -1  // refused by validateForUpdate()
      #expect(throws: StoreError.self) { try context.save() }
      #expect(jotting.changedValuesForCurrentEvent().isEmpty, "the save ended the event")
      jotting.words = 0
      #expect(jotting.changedValuesForCurrentEvent()["words"] as? Int == -1)
      #expect(jotting.changedValues()["text"] as? String == "C", "still pending")
    }
  }

  @Test func aTokenRemovesOnlyItsOwnContextsObserver() async throws {
    let container = try PersistentContainer.makeTest(model: jottingModel)
    let foreign = await container.newBackgroundContext().perform { context in
      context.addObserver(for: ManagedObjectContext.WillSaveMessage.self) { _ in }
    }
    let heard = Recorder<String>()
    try await container.newBackgroundContext().perform { context in
      context.addObserver(for: ManagedObjectContext.WillSaveMessage.self) { _ in heard.add("will save") }
      context.removeObserver(foreign)  // another context's token, with the same number: removes nothing
      Jotting(context: context).text = "x"
      try context.save()
    }
    #expect(heard.all == ["will save"])
  }

  @Test func changedValuesForCurrentEventCoverRelationships() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      for name in ["A", "B", "C"] { Shelf(context: context).name = name }
      Book(context: context).title = "Dune"
      try context.save()
    }
    try await container.newBackgroundContext().perform { context in
      let book = try #require(try Book.first(in: context))
      let shelves = try Shelf.fetch(in: context, sortBy: [SortDescriptor(\.name)])
      book.shelf = shelves[0]
      context.processPendingChanges()
      book.shelf = shelves[1]
      let old = book.changedValuesForCurrentEvent()["shelf"] as? Shelf?
      #expect(old??.name == "A", "the shelf at the end of the last event")
      #expect((shelves[1].changedValuesForCurrentEvent()["books"] as? Set<Book>)?.isEmpty == true)
      #expect((shelves[0].changedValuesForCurrentEvent()["books"] as? Set<Book>)?.map(\.title) == ["Dune"])

      // A to-one to an object not saved yet: unchanged in the next event.
      let fresh = Shelf(context: context)
      fresh.name = "new"
      book.shelf = fresh
      context.processPendingChanges()
      book.title = "Dune II"
      #expect(book.changedValuesForCurrentEvent().keys.sorted() == ["title"])
    }
  }
}
