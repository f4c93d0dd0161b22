import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Every hook call, as "<hook> <title>", across all tests: each test's titles carry a tag of
/// its own, and it reads the entries with that tag.
private let hookLog = Recorder<String>()

private func calls(_ tag: String) -> [String] {
  hookLog.all.filter { $0.hasSuffix(tag) || $0.contains("\(tag)/") }
}

/// The `awakeFromFetch()` calls of the tests that read `t7`.
private func awoken() -> [String] {
  calls("t7").filter { $0.hasPrefix("awakeFromFetch") }
}

/// A journal whose hooks log, as a Core Data user writes them.
final class Journal: ManagedObject {
  @Attribute var title: String = ""
  @Attribute var createdAt: Date? = nil
  @Attribute var saves: Int = 0
  /// A cache awakeFromFetch fills: set there, it is not a change.
  @Attribute var searchKey: String = ""
  @Relationship(deleteRule: .cascade) var entries: Set<Entry>
  /// The title as the hooks last saw it loaded: a fault's hooks log it without firing it.
  var logName = ""

  override func awakeFromInsert() {
    super.awakeFromInsert()
    createdAt = Date(timeIntervalSinceReferenceDate: 0)
    hookLog.add("awakeFromInsert \(title)")
  }
  override func awakeFromFetch() {
    super.awakeFromFetch()
    searchKey = title.lowercased()
    logName = title
    hookLog.add("awakeFromFetch \(title)")
  }
  override func willSave() {
    super.willSave()
    hookLog.add("willSave \(title)")
    // A derived field kept current: saved in the same transaction, without calling willSave
    // endlessly (changed only when it differs, as Core Data asks; and once per save anyway).
    if !isDeleted { saves += 1 }
    if title.hasPrefix("spawns"), !isDeleted, entries.isEmpty {
      let entry = Entry()  // inserted into the context with the relationship
      entry.text = "spawned \(title)"
      entries.insert(entry)
    }
  }
  override func didSave() {
    super.didSave()
    hookLog.add(isDeleted ? "didSave deleted \(title)" : "didSave \(title)")
  }
  override func prepareForDeletion() {
    super.prepareForDeletion()
    hookLog.add("prepareForDeletion \(title)")
  }
  override func willTurnIntoFault() {
    super.willTurnIntoFault()
    logName = title
    hookLog.add("willTurnIntoFault \(title)")
  }
  override func didTurnIntoFault() {
    super.didTurnIntoFault()
    hookLog.add("didTurnIntoFault \(logName)")  // reading an attribute here would fire the fault
  }
  override func awake(fromSnapshotEvents events: SnapshotEvents) {
    super.awake(fromSnapshotEvents: events)
    searchKey = title.lowercased()  // change processing is off: not a change
    let names: [(SnapshotEvents, String)] = [(.rollback, "rollback"), (.mergePolicy, "mergePolicy")]
    hookLog.add("awakeFromSnapshot \(names.filter { events.contains($0.0) }.map(\.1)) \(title)")
  }
}

final class Entry: ManagedObject {
  @Attribute var text: String = ""
  @Relationship(inverse: \Journal.entries, deleteRule: .nullify) var journal: Journal?

  override func awakeFromFetch() {
    super.awakeFromFetch()
    hookLog.add("awakeFromFetch \(text)")
  }
  override func willSave() {
    super.willSave()
    hookLog.add("willSave \(text)")
  }
  override func prepareForDeletion() {
    super.prepareForDeletion()
    hookLog.add("prepareForDeletion \(text)")
  }
}

/// An object whose `awakeFromFetch()` does what the docs ask it not to: fetch, or reset its
/// context. Nothing may crash or call a hook on an object the context let go.
final class Nosy: ManagedObject {
  @Attribute var name: String = ""

  override func awakeFromFetch() {
    super.awakeFromFetch()
    hookLog.add("awakeFromFetch \(name)")
    guard let context = managedObjectContext else { return }
    let name = name
    context.assumeIsolated { context in
      if name.hasSuffix("fetches") { _ = try? context.fetch(FetchRequest<Nosy>()) }
      if name.hasSuffix("resets") { context.reset() }
    }
  }
}

/// An album whose photos a cascade deletes, and photos that ask to be loaded for it, so that
/// their hooks run as in Core Data.
final class Album: ManagedObject {
  @Attribute var title: String = ""
  @Relationship(deleteRule: .cascade) var photos: Set<Photo>
}

final class Photo: ManagedObject {
  override class var loadsForCascadeDelete: Bool { true }
  @Attribute var file: String = ""
  @Relationship(inverse: \Album.photos) var album: Album?
  override func prepareForDeletion() {
    super.prepareForDeletion()
    hookLog.add("prepareForDeletion \(file)")
  }
  override func willSave() {
    super.willSave()
    hookLog.add(isDeleted ? "willSave deleted \(file)" : "willSave \(file)")
  }
  override func didSave() {
    super.didSave()
    hookLog.add(isDeleted ? "didSave deleted \(file)" : "didSave \(file)")
  }
}

private let journalModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Journal.self, Entry.self, Nosy.self, Album.self, Photo.self) } catch {
    fatalError("fixture model: \(error)")
  }
}()

@Suite struct LifecycleHookTests {
  @Test func insertSaveFetchAndFaultCallTheHooksInCoreDatasOrder() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    let tag = "t1"
    let id = try await container.performBackgroundTask { context in
      let journal = Journal(context: context)  // awakeFromInsert runs before the title is set
      journal.title = tag
      #expect(journal.createdAt != nil, "a default computed at insert")
      try context.save()
      #expect(journal.saves == 1, "willSave's change is saved, once")
      return journal.managedID
    }
    #expect(calls(tag) == ["willSave t1", "didSave t1"])

    try await container.performBackgroundTask { context in
      let journal = try #require(try Journal.first(in: context, where: #Predicate { $0.title == "t1" }))
      #expect(journal.searchKey == "t1" && !journal.hasChanges, "awakeFromFetch's cache is not a change")
      #expect(journal.saves == 1)
      context.refresh(journal, mergeChanges: false)
      _ = journal.title  // the fault fires
      context.reset()
      _ = id
    }
    #expect(
      calls(tag).dropFirst(2) == [
        "awakeFromFetch t1", "willTurnIntoFault t1", "didTurnIntoFault t1", "awakeFromFetch t1",
        "willTurnIntoFault t1", "didTurnIntoFault t1",
      ])
  }

  @Test func willSaveRunsOncePerObjectAndForWhatItMakes() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    try await container.performBackgroundTask { context in
      let journal = Journal(context: context)
      journal.title = "spawns t2"
      try context.save()
      #expect(journal.entries.count == 1, "the entry willSave made is saved in the same transaction")
      #expect(journal.saves == 1)
      journal.title = "spawns t2/renamed"
      try context.save()
      #expect(journal.saves == 2)
    }
    let history = try container.fetchHistory(HistoryRequest())
    #expect(history.count == 2, "one transaction per save")
    #expect(history[0].changes.count == 2, "the journal and the entry willSave made")
    #expect(
      calls("t2") == [
        "willSave spawns t2", "willSave spawned spawns t2", "didSave spawns t2", "willSave spawns t2/renamed",
        "didSave spawns t2/renamed",
      ])
  }

  @Test func prepareForDeletionRunsOnEachDeleteAndForWhatACascadeDeletes() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    try await container.performBackgroundTask { context in
      let journal = Journal(context: context)
      journal.title = "t3"
      let entry = Entry(context: context)
      entry.text = "entry t3"
      journal.entries.insert(entry)
      try context.save()
      context.delete(journal)
      context.delete(journal)  // again: Core Data calls it again
      try context.save()
      #expect(journal.managedObjectContext == nil && entry.managedObjectContext == nil)
    }
    #expect(
      calls("t3") == [
        "willSave t3", "willSave entry t3", "didSave t3", "prepareForDeletion t3", "prepareForDeletion t3",
        "prepareForDeletion entry t3", "willSave t3", "willSave entry t3", "didSave deleted t3",
      ])
  }

  @Test func anAwakeFromFetchThatFetchesOrResetsBreaksNothing() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    try await container.performBackgroundTask { context in
      // More than the identity map's threshold (4,096), so that the nested fetch's scan for
      // objects nobody holds runs while objects still await their hook.
      for index in 0..<5_000 { Nosy(context: context).name = "t6 \(index)" }
      Nosy(context: context).name = "t6 fetches"
      Nosy(context: context).name = "t6 resets"
      try context.save()
    }
    try await container.performBackgroundTask { context in
      let all = try context.fetch(FetchRequest<Nosy>(sortBy: [SortDescriptor(\.name)]))
      #expect(all.count == 5_002)
      // The reset came from one of the hooks: the objects after it were let go, unawoken.
      #expect(context.state.registered.values.isEmpty)
    }
    let awoken = hookLog.all.filter { $0.hasPrefix("awakeFromFetch t6") }
    #expect(awoken.contains("awakeFromFetch t6 fetches") && awoken.contains("awakeFromFetch t6 resets"))
    #expect(Set(awoken).count == awoken.count, "no object awoken twice (the nested fetch loads none again)")
  }

  @Test func prefetchedObjectsAwakeAtTheirFirstUse() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    try await container.performBackgroundTask { context in
      let journal = Journal(context: context)
      journal.title = "t7"
      for text in ["entry t7/a", "entry t7/b", "entry t7/c"] {
        let entry = Entry(context: context)
        entry.text = text
        journal.entries.insert(entry)
      }
      try context.save()
    }
    // (A helper, not the same closure inside and outside `#expect`: Swift 6.3.1 computed a
    // `filter` whose closure repeated one inside an `#expect` before it wrongly, shifted by
    // one element, in a debug build and with AddressSanitizer alike.)
    try await container.performBackgroundTask { context in
      var request = Journal.fetchRequest(where: #Predicate { $0.title == "t7" })
      request.relationshipKeyPathsForPrefetching = [\.entries]
      let journal = try #require(try context.fetch(request).first)
      let entries = journal.entries.sorted { $0.managedID.description < $1.managedID.description }
      #expect(awoken() == ["awakeFromFetch t7"], "prefetched, not used yet: not awoken")
      _ = entries[0].text
      _ = entries[0].text
      #expect(awoken() == ["awakeFromFetch t7", "awakeFromFetch \(entries[0].text)"], "once, at the first read")
      entries[1].text = "entry t7/changed"  // a write wakes it first; the change is recorded
      #expect(entries[1].hasChanges && entries[1].changedValues().keys.sorted() == ["text"])
      _ = entries[2].journal  // a relationship read wakes it too
      let all = awoken()
      #expect(all.count == 4 && Set(all).count == 4 && !all.contains("awakeFromFetch entry t7/changed"))
    }
  }

  @Test func rollbackAndMergePolicyWakeObjectsFromTheirSnapshot() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    let id = try await container.performBackgroundTask { context in
      let journal = Journal(context: context)
      journal.title = "t8"
      try context.save()
      journal.saves = 99
      journal.searchKey = "stale"
      context.rollback()
      #expect(journal.saves == 1 && journal.searchKey == "t8" && !journal.hasChanges)
      context.delete(journal)
      context.rollback()
      #expect(!journal.isDeleted && !journal.hasChanges)
      return journal.managedID
    }
    let mine = container.newBackgroundContext()
    try await mine.perform { context in
      context.mergePolicy = .storeTrump
      _ = try context.existingObject(with: id).saves
    }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).saves = 5
      try context.save()
    }
    try await mine.perform { context in
      let journal = try context.existingObject(with: id)
      journal.saves = 7
      try context.save()  // a conflict: the store's value wins
      #expect(journal.saves == 6, "the other context's save: 5, and its willSave() counted it")
    }
    #expect(
      calls("t8").filter { $0.hasPrefix("awakeFromSnapshot") } == [
        "awakeFromSnapshot [\"rollback\"] t8", "awakeFromSnapshot [\"rollback\"] t8",
        "awakeFromSnapshot [\"mergePolicy\"] t8",
      ])
  }

  @Test func aCascadeLoadsTheObjectsThatAskForItSoTheirHooksRun() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    let (id, journalID) = try await container.performBackgroundTask { context in
      let album = Album(context: context)
      album.title = "t9"
      for file in ["t9/a.jpg", "t9/b.jpg"] {
        let photo = Photo(context: context)
        photo.file = file
        album.photos.insert(photo)
      }
      let journal = Journal(context: context)
      journal.title = "t9/journal"
      let entry = Entry(context: context)
      entry.text = "t9/entry"
      journal.entries.insert(entry)
      try context.save()
      return (album.managedID, journal.managedID)
    }
    let before = calls("t9").count
    try await container.performBackgroundTask { context in
      // Neither the album's photos nor the journal's entries are loaded.
      context.delete(try context.existingObject(with: id))
      context.delete(try context.existingObject(with: journalID))
      try context.save()
      #expect(try context.count(for: FetchRequest<Photo>()) == 0 && context.count(for: FetchRequest<Entry>()) == 0)
    }
    let hooks = calls("t9").dropFirst(before)
    for file in ["t9/a.jpg", "t9/b.jpg"] {
      #expect(
        hooks.filter { $0.hasSuffix(file) }
          == ["prepareForDeletion \(file)", "willSave deleted \(file)", "didSave deleted \(file)"])
    }
    #expect(!hooks.contains { $0.hasSuffix("t9/entry") }, "an entry does not ask: deleted in SQL, no hook")
  }

  @Test func batchRequestsCallNoHook() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Journal>(count: 3) { index, journal in journal.title = "t4 \(index)" })
      _ = try context.execute(BatchUpdateRequest<Journal>(propertiesToUpdate: [.set(\.saves, 9)]))
      // On PostgreSQL this predicate only narrows the rows: Swift picks them, in the write
      // transaction, from objects that wake no hook.
      let picked = try context.execute(
        BatchUpdateRequest<Journal>(
          predicate: #Predicate { $0.title.contains("4 1") }, propertiesToUpdate: [.set(\.saves, 10)]))
      #expect(picked.count == 1)
      _ = try context.execute(BatchDeleteRequest<Journal>())
    }
    #expect(calls("t4").isEmpty)
  }

  @Test func aMergeThatRefreshesAnObjectTurnsItIntoAFaultAndBack() async throws {
    let container = try PersistentContainer.makeTest(model: journalModel)
    let id = try await container.performBackgroundTask { context in
      let journal = Journal(context: context)
      journal.title = "t5"
      try context.save()
      return journal.managedID
    }
    let live = container.newBackgroundContext()
    try await live.perform { context in _ = try context.existingObject(with: id).title }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).saves = 7
      try context.save()
    }
    let changes = try container.fetchHistory(HistoryRequest()).map { StoreChanges($0) }
    try await live.perform { context in
      _ = context.mergeChanges(try #require(changes.last))
      #expect(try context.existingObject(with: id).saves == 8, "7, and willSave counted the save")
    }
    #expect(calls("t5").suffix(3) == ["willTurnIntoFault t5", "didTurnIntoFault t5", "awakeFromFetch t5"])
  }
}

/// The Fetchable helpers (issue 25, item 6): typed statics on the entity, and one-row fetches.
@Suite struct FetchableTests {
  @Test func theEntityFetchesCountsAndFindsItsFirstWithoutACast() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["b", "a", "c"], in: container)
    try await container.performBackgroundTask { context in
      let sorted = try Note.fetch(in: context, sortBy: [SortDescriptor(\.title)])
      #expect(sorted.map(\.title) == ["a", "b", "c"])
      #expect(try Note.fetch(in: context, where: #Predicate { $0.title != "b" }).count == 2)
      #expect(try Note.first(in: context, sortBy: [SortDescriptor(\.title, order: .reverse)])?.title == "c")
      #expect(try Note.first(in: context, where: #Predicate { $0.title == "z" }) == nil)
      #expect(try Note.count(in: context) == 3)
      #expect(try Note.count(in: context, where: #Predicate { $0.title < "c" }) == 2)
      #expect(Note.fetchRequest(where: #Predicate { $0.title == "a" }).predicate != nil)
      #expect(Note.entityName == "Note")
      // A subentity's statics are its own: Checklist.fetch returns [Checklist].
      let lists: [Checklist] = try Checklist.fetch(in: context)
      #expect(lists.isEmpty)
    }
  }

  @Test func fetchFirstReadsOneRow() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes((0..<50).map { "n\($0)" }, in: container)
    try await container.performBackgroundTask { context in
      let before = context.state.registered.values.count
      let first = try context.fetchFirst(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
      #expect(first?.title == "n0")
      #expect(context.state.registered.values.count - before == 1, "one object made: one row read")
    }
  }

  @Test func theHelpersWorkInAModelActor() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["x", "y"], in: container)
    let context = container.newModelContext(name: "actor")
    #expect(try Note.count(in: context) == 2)
    #expect(try Note.first(in: context, sortBy: [SortDescriptor(\.title)])?.title == "x")
    #expect(try Note.fetch(in: context, where: #Predicate { $0.title == "y" }).count == 1)
    #expect(try context.fetchFirst(Note.fetchRequest())?.title != nil)
  }
}
