import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct StoreChangesTests {
  @Test func everyCommitPublishesChangesEqualToItsHistory() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let stream = container.storeChanges()
    let start = try container.currentHistoryToken
    let ids = try await saveNotes(["a", "b", "c"], in: container)
    try await container.performBackgroundTask { context in
      context.transactionAuthor = "editor"
      try context.existingObject(with: ids[0]).title = "changed"
      context.delete(try context.existingObject(with: ids[1]))
      try context.save()
      _ = try context.execute(
        BatchUpdateRequest<Note>(objectIDs: [ids[2]], propertiesToUpdate: [.set(\.status, .published)]))
      _ = try context.execute(BatchDeleteRequest<Note>(objectIDs: [ids[2]]))
    }
    let history = try container.fetchHistory(HistoryRequest(after: start))
    #expect(history.count == 4)
    var iterator = stream.makeAsyncIterator()
    for transaction in history {
      let changes = try #require(await iterator.next())
      #expect(changes.token == transaction.token)
      #expect(changes.author == transaction.author)
      func ids(_ kind: HistoryChange.Kind) -> Set<AnyManagedID> {
        Set(transaction.changes.filter { $0.changeType == kind }.map(\.objectID))
      }
      #expect(changes.insertedIDs == ids(.insert))
      #expect(changes.updatedIDs == ids(.update))
      #expect(changes.deletedIDs == ids(.delete))
      for change in transaction.changes where change.changeType == .update {
        #expect(changes.changedAttributes[change.objectID] == change.updatedProperties)
      }
    }
  }

  @Test func typedAccessorsFilterByEntity() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let stream = container.storeChanges()
    try await container.performBackgroundTask { context in
      Note(context: context).title = "n"
      Checklist(context: context).title = "c"
      Folder(context: context).name = "f"
      try context.save()
    }
    var iterator = stream.makeAsyncIterator()
    let changes = try #require(await iterator.next())
    #expect(changes.inserted(Note.self).count == 2)  // a Checklist is a Note
    #expect(changes.inserted(Checklist.self).count == 1)
    #expect(changes.inserted(Folder.self).count == 1)
    #expect(changes.deleted(Note.self).isEmpty)
  }

  @Test func callbacksArriveInCommitOrderUntilCancelled() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let received = Mutex<[Int64]>([])
    let observation = container.addStoreChangesObserver { changes in
      received.withLock { $0.append(changes.token?.transactionNumber ?? -1) }
    }
    for index in 0..<5 { _ = try await saveNotes(["\(index)"], in: container) }
    let expected = try container.fetchHistory(HistoryRequest()).map(\.transactionNumber)
    for _ in 0..<200 where received.withLock({ $0.count }) < 5 { try await Task.sleep(for: .milliseconds(5)) }
    #expect(received.withLock { $0 } == expected)
    observation.cancel()
    _ = try await saveNotes(["after cancel"], in: container)
    try await Task.sleep(for: .milliseconds(50))
    #expect(received.withLock { $0.count } == 5)
  }

  @Test func mergeChangesRefreshesUpdatedAndDropsDeletedObjects() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["keep", "remove"], in: container)
    let viewer = container.newBackgroundContext()
    try await viewer.perform { context in
      _ = try ids.map { try context.existingObject(with: $0).title }
    }
    let stream = container.storeChanges()
    _ = try await container.performBackgroundTask { context in
      try context.execute(
        BatchUpdateRequest<Note>(objectIDs: [ids[0]], propertiesToUpdate: [.set(\.title, "kept, updated")]))
    }
    _ = try await container.performBackgroundTask { context in
      try context.execute(BatchDeleteRequest(objectIDs: [ids[1]]))
    }
    var iterator = stream.makeAsyncIterator()
    let update = try #require(await iterator.next())
    let delete = try #require(await iterator.next())
    let (before, after, dropped) = try await viewer.perform { context in
      let note = try context.existingObject(with: ids[0])
      let before = note.title
      context.mergeChanges(update)
      context.mergeChanges(delete)
      return (before, note.title, try context.registeredObject(for: ids[1]) == nil)
    }
    #expect(before == "keep")
    #expect(after == "kept, updated")
    #expect(dropped)
  }
}
