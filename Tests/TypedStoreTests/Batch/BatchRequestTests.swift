import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct BatchRequestTests {
  @Test func batchInsertWithPairsAndWithDraftsIsOneTransaction() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let start = try container.currentHistoryToken
    let (pairs, drafts) = try await container.performBackgroundTask { context in
      context.transactionAuthor = "importer"
      var request = BatchInsertRequest<Note>(rows: [
        [.set(\.title, "one"), .set(\.status, .published)],
        [.set(\.title, "two")],
      ])
      request.returnsObjectIDs = true
      let pairs = try context.execute(request)
      let drafts = try context.execute(
        BatchInsertRequest<Note>(count: 100) { index, note in
          note.title = "draft \(index)"
          note.createdAt = Date(timeIntervalSinceReferenceDate: Double(index))
        })
      return (pairs, drafts)
    }
    #expect(pairs.count == 2)
    #expect(pairs.objectIDs?.count == 2)
    #expect(drafts.count == 100)
    #expect(drafts.objectIDs == nil)
    let history = try container.fetchHistory(HistoryRequest(after: start))
    #expect(history.count == 2)
    #expect(history.map(\.author) == ["importer", "importer"])
    #expect(history[0].changes.compactMap { $0.objectID(as: Note.self) } == pairs.objectIDs)
    #expect(history[1].changes.count == 100)
    let (first, count, defaulted) = try await container.viewContext.perform { context in
      let first = try context.existingObject(with: pairs.objectIDs![0])
      let second = try context.existingObject(with: pairs.objectIDs![1])
      return ((first.title, first.status), try context.count(for: FetchRequest<Note>()), second.status)
    }
    #expect(first == ("one", .published))
    #expect(defaulted == .draft)  // unassigned attributes take their defaults
    #expect(count == 102)
  }

  @Test func batchUpdateSetsAttributesAndRecordsEveryRow() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b", "c"], in: container)
    let start = try container.currentHistoryToken
    let result = try await container.performBackgroundTask { context in
      var request = BatchUpdateRequest<Note>(
        objectIDs: [ids[0], ids[2]], propertiesToUpdate: [.set(\.title, "Updated")])
      request.returnsObjectIDs = true
      return try context.execute(request)
    }
    #expect(result.count == 2)
    #expect(result.objectIDs == [ids[0], ids[2]])
    let history = try container.fetchHistory(HistoryRequest(after: start))
    #expect(history.count == 1)
    #expect(history[0].changes.map(\.changeType) == [.update, .update])
    #expect(history[0].changes.allSatisfy { $0.updatedProperties == ["title"] })
    let all = try await container.performBackgroundTask { context in
      try context.execute(BatchUpdateRequest<Note>(propertiesToUpdate: [.set(\.status, .archived)]))
    }
    #expect(all.count == 3)
    let titles = try await container.newBackgroundContext().perform { context in
      try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map { "\($0.title):\($0.status)" }
    }
    #expect(titles == ["Updated:archived", "Updated:archived", "b:archived"])
  }

  @Test func batchUpdateBumpsRowVersionsSoStaleSavesConflict() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    let stale = container.newBackgroundContext()
    try await stale.perform { context in _ = try context.existingObject(with: ids[0]).title }
    _ = try await container.performBackgroundTask { context in
      try context.execute(BatchUpdateRequest<Note>(propertiesToUpdate: [.set(\.title, "batch")]))
    }
    let version = try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: ids[0]).rowVersion
    }
    #expect(version == 2)  // the save made version 1, the batch update bumped it
    try await stale.perform { context in
      try context.existingObject(with: ids[0]).title = "stale"
      let error = #expect(throws: StoreError.self) { try context.save() }
      guard case .mergeConflict(let conflicts) = error else {
        Issue.record("expected a merge conflict, got \(String(describing: error))")
        return
      }
      #expect(conflicts.first?.storeValues?["title"] == .text("batch"))
    }
  }

  @Test func batchDeleteRecordsTombstonesAndLeavesRegisteredObjectsAlone() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b", "c"], in: container)
    let uuids = try await container.viewContext.perform { context in
      try ids.map { try context.existingObject(with: $0).uuid }
    }
    let start = try container.currentHistoryToken
    let result = try await container.viewContext.perform { context in
      var request = BatchDeleteRequest(objectIDs: [ids[1]])
      request.returnsObjectIDs = true
      let result = try context.execute(request)
      // Not touched by the request itself:
      #expect(try context.registeredObject(for: ids[1]) != nil)
      return result
    }
    #expect(result.objectIDs == [ids[1]])
    let change = try #require(try container.fetchHistory(HistoryRequest(after: start)).first?.changes.first)
    #expect(change.changeType == .delete)
    #expect(change.tombstone?[\Note.uuid] == uuids[1])
    let all = try await container.performBackgroundTask { context in try context.execute(BatchDeleteRequest<Note>()) }
    #expect(all.count == 2)
    let left = try await container.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Note>())
    }
    #expect(left == 0)
  }

  @Test func batchRequestsRespectSubentities() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      Note(context: context).title = "note"
      Checklist(context: context).title = "list"
      try context.save()
    }
    let (lists, notesOnly) = try await container.performBackgroundTask { context in
      let lists = try context.execute(BatchUpdateRequest<Checklist>(propertiesToUpdate: [.set(\.itemCount, 9)]))
      var request = BatchDeleteRequest<Note>()
      request.includesSubentities = false
      return (lists, try context.execute(request))
    }
    #expect(lists.count == 1)
    #expect(notesOnly.count == 1)
    let remaining = try await container.newBackgroundContext().perform { context in
      try context.fetch(FetchRequest<Note>()).map { ($0 as? Checklist)?.itemCount ?? -1 }
    }
    #expect(remaining == [9])
  }

  @Test func invalidBatchRequestsThrowBeforeWriting() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let before = try container.currentHistoryToken
    try await container.performBackgroundTask { context in
      #expect(throws: BatchError.unknownEntity("Tag")) { try context.execute(BatchDeleteRequest<Tag>()) }
      #expect(throws: BatchError.invalidCount(-1)) {
        try context.execute(BatchInsertRequest<Note>(count: -1) { _, _ in })
      }
      _ = try context.count(for: FetchRequest<Note>())
    }
    #expect(try container.currentHistoryToken == before)
  }
}
