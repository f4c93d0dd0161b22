import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Saves notes with the given titles in one save and returns their IDs.
func saveNotes(_ titles: [String], in container: PersistentContainer) async throws -> [ManagedID<Note>] {
  try await NoteImporter(container: container).importTitles(titles)
}

@Suite struct IdentityMapTests {
  @Test func oneObjectPerRowInAContext() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    try await container.newBackgroundContext().perform { context in
      let fetched = try context.fetch(FetchRequest<Note>())
      let existing = try context.existingObject(with: ids[0])
      let fault = try context.object(with: ids[0])
      #expect(fetched.count == 1)
      #expect(fetched[0] === existing)
      #expect(existing === fault)
      #expect(try context.registeredObject(for: ids[0]) === existing)
    }
  }

  @Test func insertedObjectKeepsItsIdentityThroughSave() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.newBackgroundContext().perform { context in
      let note = Note(context: context)
      let temporary = note.managedID
      #expect(temporary.isTemporaryID)
      #expect(try context.registeredObject(for: temporary) === note)
      try context.save()
      let permanent = note.managedID
      #expect(!permanent.isTemporaryID)
      #expect(permanent != temporary)
      #expect(try context.registeredObject(for: permanent) === note)
      // A temporary ID names nothing once its object is saved.
      #expect(throws: ManagedIDError.temporaryID(temporary.description)) {
        try context.registeredObject(for: temporary)
      }
      #expect(try context.fetch(FetchRequest<Note>()).first === note)
    }
  }

  @Test func idsAreEqualAcrossContextsForTheSameRow() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    let fetched = try await container.viewContext.perform { context in
      try context.fetchObjectIDs(for: FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
    }
    #expect(fetched == ids)
    #expect(Set(fetched).count == 2)
  }
}

@Suite struct FaultTests {
  @Test func objectWithIDIsAFaultUntilAnAttributeIsRead() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["loaded on demand"], in: container)
    try await container.newBackgroundContext().perform { context in
      let note = try context.object(with: ids[0])
      #expect(note.isFault)
      #expect(note.title == "loaded on demand")
      #expect(!note.isFault)
    }
  }

  @Test func writingToAFaultLoadsItFirstAndTracksTheChange() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["old"], in: container)
    try await container.newBackgroundContext().perform { context in
      let note = try context.object(with: ids[0])
      note.status = .published
      #expect(!note.isFault)
      #expect(note.title == "old")
      #expect(note.isUpdated)
      #expect(note.changedAttributeNames == ["status"])
      try context.save()
    }
    let status = try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: ids[0]).status
    }
    #expect(status == .published)
  }

  @Test func refreshTurnsAnObjectBackIntoAFaultWithFreshValues() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["v1"], in: container)
    let reader = container.newBackgroundContext()
    let first = try await reader.perform { context in try context.existingObject(with: ids[0]).title }
    #expect(first == "v1")
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).title = "v2"
      try context.save()
    }
    try await reader.perform { context in
      let note = try context.existingObject(with: ids[0])
      #expect(note.title == "v1")  // the context keeps what it read until refreshed
      note.status = .archived
      context.refresh(note, mergeChanges: true)
      #expect(note.title == "v2")
      #expect(note.status == .archived)
      context.refresh(note, mergeChanges: false)
      #expect(note.isFault)
      #expect(note.status == .draft)
      let pending = context.hasChanges
      #expect(!pending)
    }
  }
}

@Suite struct FaultDeletionTests {
  @Test func deletingARefreshedObjectConflictsOnlyWithChangesAfterTheRefresh() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["one", "two"], in: container)
    let context = container.newBackgroundContext()
    try await context.perform { context in
      for id in ids { _ = try context.existingObject(with: id).title }
    }
    // Another writer changes both rows; the context refreshes the first only.
    try await container.performBackgroundTask { other in
      _ = try other.execute(BatchUpdateRequest<Note>(objectIDs: ids, propertiesToUpdate: [.set(\.title, "batch")]))
    }
    try await context.perform { context in
      context.refresh(try context.existingObject(with: ids[0]), mergeChanges: false)
      context.delete(try context.existingObject(with: ids[0]))
      try context.save()  // the refreshed fault is deleted without a conflict
      context.delete(try context.existingObject(with: ids[1]))
      let error = #expect(throws: StoreError.self) { try context.save() }  // its snapshot predates the batch
      guard case .mergeConflict(let conflicts) = error else {
        Issue.record("expected a merge conflict, got \(String(describing: error))")
        return
      }
      #expect(conflicts.map(\.objectID) == [ids[1].untyped])
    }
  }
}

@Suite struct ChangeTrackingTests {
  @Test func rollbackRestoresSavedValuesAndDropsInsertsAndDeletes() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["keep", "delete me"], in: container)
    try await container.newBackgroundContext().perform { context in
      let kept = try context.existingObject(with: ids[0])
      let deleted = try context.existingObject(with: ids[1])
      kept.title = "changed"
      context.delete(deleted)
      let inserted = Note(context: context)
      inserted.title = "new"
      var pending = context.hasChanges
      #expect(pending)
      #expect(context.updatedObjects == [kept])
      #expect(context.deletedObjects == [deleted])
      #expect(context.insertedObjects == [inserted])
      context.rollback()
      pending = context.hasChanges
      #expect(!pending)
      #expect(kept.title == "keep")
      #expect(!deleted.isDeleted)
      #expect(try context.count(for: FetchRequest<Note>()) == 2)
    }
    let titles = try await container.viewContext.perform { context in
      try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    }
    #expect(titles == ["delete me", "keep"])
  }

  @Test func settingTheSameValueSavesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["same"], in: container)
    let before = try container.currentHistoryToken
    try await container.newBackgroundContext().perform { context in
      let note = try context.existingObject(with: ids[0])
      note.title = "same"
      try context.save()
      let version = note.rowVersion
      #expect(version == 1)
    }
    // No transaction was written: the store's history ends where it did.
    #expect(try container.currentHistoryToken == before)
  }

  @Test func deleteRemovesTheRowAtSave() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    try await container.newBackgroundContext().perform { context in
      context.delete(try context.existingObject(with: ids[0]))
      #expect(try context.count(for: FetchRequest<Note>()) == 1)  // pending delete already counts
      try context.save()
      #expect(try context.registeredObject(for: ids[0]) == nil)
    }
    let remaining = try await container.newBackgroundContext().perform { context in
      #expect(throws: ManagedIDError.noSuchRow(ids[0].description)) {
        try context.existingObject(with: ids[0])
      }
      return try context.count(for: FetchRequest<Note>())
    }
    #expect(remaining == 1)
  }

  @Test func aSavedDeletionLeavesTheObjectOutOfItsContextAndNoLongerDeletedAsInCoreData() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["gone", "kept"], in: container)
    try await container.newBackgroundContext().perform { context in
      let note = try context.existingObject(with: ids[0])
      let kept = try context.existingObject(with: ids[1])
      let inserted = Note(context: context)
      context.delete(note)
      context.delete(inserted)
      #expect(note.isDeleted && inserted.isDeleted, "marked for deletion until the save")
      #expect(note.managedObjectContext === context)
      try context.save()
      #expect(!note.isDeleted, "the save deleted the row: nothing is left to delete")
      #expect(!inserted.isDeleted)
      #expect(note.managedObjectContext == nil, "the object has left its context")
      #expect(inserted.managedObjectContext == nil)
      #expect(!note.hasChanges)
      #expect(try context.registeredObject(for: ids[0]) == nil)
      #expect(note.managedID == ids[0], "its ID still names the row that was")
      #expect(kept.managedObjectContext === context && !kept.isDeleted)
      let pending = context.hasChanges
      #expect(!pending)
    }
  }

  @Test func anObjectWhoseRowAnotherContextDeletedIsMarkedDeletedWhenMerged() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["gone"], in: container)
    let here = container.newBackgroundContext()
    let start = try container.currentHistoryToken
    try await here.perform { context in _ = try context.existingObject(with: ids[0]) }
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: ids[0]))
      try context.save()
    }
    let transactions = try container.fetchHistory(HistoryRequest(after: start))
    try await here.perform { context in
      let registered = try context.registeredObject(for: ids[0])
      let note = try #require(registered)
      for transaction in transactions { context.mergeChanges(StoreChanges(transaction)) }
      #expect(note.isDeleted, "this context did not delete it: it learns that it is gone")
      #expect(note.managedObjectContext == nil)
      #expect(try context.registeredObject(for: ids[0]) == nil)
    }
  }

  @Test func savedObjectsNobodyHoldsAreReleasedAfterTheSaveSoAnImportLoopStaysBounded() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let batch = KeyTable.minimumDropThreshold + 10
    let outcome = try await container.newBackgroundContext().perform { context in
      var counts: [Int] = []
      var kept: Folder?
      for round in 0..<3 {
        for index in 0..<batch {
          let folder = Folder(context: context)
          folder.name = "r\(round)-\(index)"
          if round == 0 && index == 0 { kept = folder }
        }
        try context.save()
        counts.append(context.registeredObjects.count)
      }
      let held = try #require(kept)
      return (counts, try context.registeredObject(for: held.managedID) === held, held.name)
    }
    #expect(outcome.0 == [1, 1, 1])  // only the folder this closure holds
    #expect(outcome.1)
    #expect(outcome.2 == "r0-0")
    let stored = try await container.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Folder>())
    }
    #expect(stored == 3 * batch)
  }

  @Test func unchangedObjectsNobodyHoldsAreDroppedAsTheContextGrows() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let count = KeyTable.minimumDropThreshold + 10
    try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Folder>(count: count) { index, folder in folder.name = "f\(index)" })
    }
    let outcome = try await container.newBackgroundContext().perform { context in
      var all: [Folder]? = try context.fetch(FetchRequest<Folder>())
      let registeredWhileHeld = context.registeredObjects.count
      let kept = all![5]  // held by this closure
      let changedID = all![6].managedID  // held by nothing but the context, with a change
      all![6].name = "changed"
      let unchangedID = all![7].managedID
      all = nil
      var request = FetchRequest<Folder>()
      request.fetchLimit = 1
      request.includesPendingChanges = false  // otherwise the pending change makes it read every row
      let fetched = try context.fetch(request)[0]  // the fetch drops what nobody holds
      let registered = context.registeredObjects.count
      return (
        registeredWhileHeld, registered, try context.registeredObject(for: kept.managedID) === kept,
        try context.registeredObject(for: changedID)?.name, try context.registeredObject(for: unchangedID) == nil,
        fetched.name
      )
    }
    #expect(outcome.0 == count)
    #expect(outcome.1 == 3)  // the one fetched, the one held, the one changed
    #expect(outcome.2)
    #expect(outcome.3 == "changed")
    #expect(outcome.4)
    #expect(outcome.5 == "f0")
  }

  @Test func resetForgetsEveryObject() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    try await container.newBackgroundContext().perform { context in
      let first = try context.existingObject(with: ids[0])
      first.title = "unsaved"
      context.reset()
      let pending = context.hasChanges
      #expect(!pending)
      #expect(try context.registeredObject(for: ids[0]) == nil)
      let again = try context.existingObject(with: ids[0])
      #expect(again !== first)
      #expect(again.title == "a")
    }
  }

  @Test func concurrentUpdateOfOneRowIsAConflict() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["base"], in: container)
    let slow = container.newBackgroundContext()
    try await slow.perform { context in _ = try context.existingObject(with: ids[0]).title }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).title = "first"
      try context.save()
    }
    try await slow.perform { context in
      let note = try context.existingObject(with: ids[0])
      note.title = "second"
      let error = #expect(throws: StoreError.self) { try context.save() }
      guard case .mergeConflict(let conflicts) = error else {
        Issue.record("expected a merge conflict, got \(String(describing: error))")
        return
      }
      #expect(conflicts.map(\.objectID) == [ids[0].untyped])
      #expect(conflicts.first?.kind == .updatedElsewhere)
      let pending = context.hasChanges
      #expect(pending)  // the failed save keeps the changes
    }
    let title = try await container.viewContext.perform { context in try context.existingObject(with: ids[0]).title }
    #expect(title == "first")
  }

  @Test func uniqueAttributeRefusesADuplicateAndWritesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Tag.self))
    try await container.performBackgroundTask { context in
      Tag(context: context).name = "swift"
      try context.save()
      Tag(context: context).name = "linux"
      let duplicate = Tag(context: context)
      duplicate.name = "swift"
      do {
        try context.save()
        Issue.record("the save should have failed")
      } catch StoreError.uniquenessConflict(let conflicts) {
        // The constraint and both objects are named.
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.constraint == ["name"] && conflicts.first?.objectID == duplicate.managedID.untyped)
        #expect(conflicts.first?.conflictingID.entityName == "Tag")
      }
      context.rollback()
      #expect(try context.count(for: FetchRequest<Tag>()) == 1)
    }
  }
}

final class Tag: ManagedObject {
  @Attribute(unique: true) var name: String = ""
  @Attribute(indexed: true) var weight: Int = 0
}

@Suite struct TypedIDTests {
  @Test func temporaryIDsBecomePermanentWithObtainPermanentIDs() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let (before, after, saved) = try await container.performBackgroundTask { context in
      let note = Note(context: context)
      let before = note.managedID
      try context.obtainPermanentIDs(for: [note])
      let after = note.managedID
      try context.save()
      return (before, after, note.managedID)
    }
    #expect(before.isTemporaryID)
    #expect(!after.isTemporaryID)
    #expect(after == saved)
  }

  /// Many inserted objects, some deleted before the save: each temporary ID finds its object
  /// until then, and names nothing (`temporaryID`) once its object is deleted or saved.
  @Test func temporaryIDsFindTheirObjectsUntilTheSave() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let kept = try await container.performBackgroundTask { context in
      let notes = (0..<1_000).map { index in
        let note = Note(context: context)
        note.title = "n\(index)"
        return note
      }
      let ids = notes.map(\.managedID)
      for (index, note) in notes.enumerated() where index % 3 == 0 { context.delete(note) }
      for (index, id) in ids.enumerated() {
        let found = Result { () throws(ManagedIDError) in try context.registeredObject(for: id) }
        if index % 3 == 0 {
          #expect(throws: ManagedIDError.temporaryID(id.description), "\(index)") { try found.get() }
        } else {
          #expect(try found.get() === notes[index], "\(index)")
        }
      }
      try context.save()
      #expect(
        ids.allSatisfy { id in
          (Result { () throws(ManagedIDError) in try context.registeredObject(for: id) })
            == .failure(.temporaryID(id.description))
        })
      return notes.filter { $0.managedObjectContext != nil }.map(\.managedID)
    }
    #expect(kept.count == 666 && kept.allSatisfy { !$0.isTemporaryID })
    let titles = try await container.performBackgroundTask { context in
      try context.fetch(FetchRequest<Note>()).map(\.title)
    }
    #expect(titles.count == 666 && !titles.contains("n0") && titles.contains("n1"))
  }

  @Test func primaryKeysAreNeverReusedAfterADelete() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let first = try await saveNotes(["a"], in: container)
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: first[0]))
      try context.save()
    }
    let second = try await saveNotes(["b"], in: container)
    #expect(second[0].primaryKey! > first[0].primaryKey!)
  }

  @Test func idResolvesInAnotherContextAndFromADetachedTask() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["shared"], in: container)[0]
    let title = try await Task.detached {
      try await container.newBackgroundContext().perform { context in
        try context.existingObject(with: id).title
      }
    }.value
    #expect(title == "shared")
  }

  @Test func uriRoundTripsAndValidatesStoreAndEntity() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["x"], in: container)[0]
    let uri = id.uriRepresentation
    #expect(
      uri.absoluteString == "typedstore://\(container.persistentStore.identifier.uuidString)/Note/p\(id.primaryKey!)")
    #expect(try ManagedID<Note>(validating: uri) == id)
    #expect(throws: ManagedIDError.entityMismatch(id: uri.absoluteString, expected: "Folder", found: "Note")) {
      try ManagedID<Folder>(validating: uri)
    }
    #expect(throws: ManagedIDError.entityMismatch(id: uri.absoluteString, expected: "Checklist", found: "Note")) {
      try ManagedID<Checklist>(validating: uri)
    }
    let foreign = UUID()
    #expect(throws: ManagedIDError.unknownStore(foreign)) {
      try ManagedID<Note>(validating: URL(string: "typedstore://\(foreign.uuidString)/Note/p1")!)
    }
    for bad in [
      "https://example.com/Note/p1", "typedstore://not-a-uuid/Note/p1", "typedstore://\(foreign.uuidString)/Note/x1",
      "typedstore://\(foreign.uuidString)/Note",
    ] {
      #expect(throws: ManagedIDError.malformedURI(bad)) { try ManagedID<Note>(validating: URL(string: bad)!) }
    }
  }

  @Test func subentityIDsAreAcceptedWhereTheSuperentityIsExpected() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await container.performBackgroundTask { context in
      let list = Checklist(context: context)
      list.title = "groceries"
      list.itemCount = 3
      try context.save()
      return list.managedID
    }
    #expect(id.entityName == "Checklist")
    let asNote = try ManagedID<Note>(validating: id.uriRepresentation)
    let (title, count) = try await container.newBackgroundContext().perform { context in
      let note = try context.existingObject(with: asNote)
      return (note.title, (note as? Checklist)?.itemCount)
    }
    #expect(title == "groceries")
    #expect(count == 3)
  }

  @Test func idsAreCodableAsTheirURI() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["x"], in: container)[0]
    let data = try JSONEncoder().encode([id])
    #expect(
      String(decoding: data, as: UTF8.self)
        == "[\"\(id.uriRepresentation.absoluteString.replacingOccurrences(of: "/", with: "\\/"))\"]")
    #expect(try JSONDecoder().decode([ManagedID<Note>].self, from: data) == [id])
    #expect(throws: ManagedIDError.self) { try JSONDecoder().decode([ManagedID<Folder>].self, from: data) }
  }

  @Test func idOfAnotherStoreIsRefusedWithForeignStore() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let other = try PersistentContainer.makeTest(model: notesModel, variant: "other")
    let foreign = try await saveNotes(["elsewhere"], in: other)[0]
    let expected = ManagedIDError.foreignStore(
      id: foreign.description, expected: container.persistentStore.identifier)
    let (error, registeredError) = await container.viewContext.perform { context in
      (
        #expect(throws: ManagedIDError.self) { try context.existingObject(with: foreign) },
        #expect(throws: ManagedIDError.self) { try context.registeredObject(for: foreign) }
      )
    }
    #expect(error == expected)
    #expect(registeredError == expected)
  }

  @Test func existingObjectOfAMissingRowThrows() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["x"], in: container)[0]
    let missing = try ManagedID<Note>(
      validating: URL(string: "typedstore://\(id.storeIdentifier.uuidString)/Note/p999")!)
    let error = await container.viewContext.perform { context in
      #expect(throws: ManagedIDError.self) { try context.existingObject(with: missing) }
    }
    #expect(error == .noSuchRow(missing.description))
  }
}

actor NoteImporter: ModelActor {
  nonisolated let modelExecutor: ModelExecutor
  let modelContext: ModelContext
  /// Managed objects kept in the actor's own state.
  private var watched: [Note] = []

  init(container: PersistentContainer, mergesAutomatically: Bool = false) {
    let context = container.newModelContext()
    modelExecutor = context.executor
    modelContext = context
    modelContext.automaticallyMergesChangesFromParent = mergesAutomatically
  }

  func importTitles(_ titles: [String]) throws -> [ManagedID<Note>] {
    let notes = titles.map { title in
      let note = Note(context: modelContext)
      note.title = title
      return note
    }
    try modelContext.save()
    return notes.map(\.managedID)
  }

  func title(of id: ManagedID<Note>, via other: NoteImporter) async throws -> String {
    // Two model actors calling each other: the executor never blocks, so no deadlock.
    try await other.titleDirectly(id)
  }

  func titleDirectly(_ id: ManagedID<Note>) throws -> String {
    try modelContext.existingObject(with: id).title
  }

  func watch() throws {
    watched = try modelContext.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
  }

  /// Reads only the kept objects: no call into the context.
  func watchedTitles() -> [String] { watched.map { $0.isDeleted ? "(deleted)" : $0.title } }

  func rename(_ index: Int, to title: String) throws {
    watched[index].title = title
    try modelContext.save()
  }
}

@Suite struct ModelActorTests {
  @Test func modelActorRunsOnItsContextsExecutor() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let first = NoteImporter(container: container)
    let second = NoteImporter(container: container)
    let ids = try await first.importTitles(["one", "two"])
    #expect(try await first.title(of: ids[1], via: second) == "two")
    #expect(try await second.title(of: ids[0], via: first) == "one")
  }

  @Test func objectsKeptInTheActorAreMergedLive() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    let watcher = NoteImporter(container: container, mergesAutomatically: true)
    try await watcher.watch()
    #expect(await watcher.watchedTitles() == ["a", "b"])

    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).title = "a2"
      context.delete(try context.existingObject(with: ids[1]))
      try context.save()
    }
    // The actor reads only its stored objects: the merge ran on its executor by itself.
    let deadline = ContinuousClock.now + .seconds(5)
    while await watcher.watchedTitles() != ["a2", "(deleted)"], ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(1))
    }
    #expect(await watcher.watchedTitles() == ["a2", "(deleted)"])

    // Its own save goes through, and is not merged back as a change of someone else.
    try await watcher.rename(0, to: "a3")
    let stored = try await container.performBackgroundTask { try $0.existingObject(with: ids[0]).title }
    #expect(stored == "a3")
  }

  @Test func withoutAnOwnerMergesApplyAtTheNextFetch() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    let context = container.newModelContext()
    context.automaticallyMergesChangesFromParent = true
    let note = try context.existingObject(with: ids[0])
    try await container.performBackgroundTask { other in
      try other.existingObject(with: ids[0]).title = "changed"
      try other.save()
    }
    try await Task.sleep(for: .milliseconds(50))
    #expect(note.title == "a")  // nothing ran on this context yet
    _ = try context.count(for: FetchRequest<Note>())
    #expect(note.title == "changed")
    #expect(note.modelContext === context)
  }

  @Test func performAndWaitBlocksUntilTheBodyRan() throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let context = container.newBackgroundContext()
    let id = try context.performAndWait { context in
      let note = Note(context: context)
      note.title = "sync"
      try context.save()
      return note.managedID
    }
    let title = try context.performAndWait { context in
      // Re-entrant: runs at once on the context's own executor.
      try context.performAndWait { inner in try inner.existingObject(with: id).title }
    }
    #expect(title == "sync")
  }
}
