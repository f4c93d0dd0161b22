import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// The rows of `MergePolicy`'s table (and docs/merging.md), one test per row, every policy.
@Suite struct MergePolicyTests {
  private static let elsewhereDate = Date(timeIntervalSinceReferenceDate: 1000)

  /// A note "read"/draft/no date, loaded by a context that will save with `policy`.
  private func setUp(_ policy: MergePolicy, function: String = #function) async throws -> (
    PersistentContainer, ManagedID<Note>, ManagedObjectContext
  ) {
    let container = try PersistentContainer.makeTest(model: notesModel, variant: "\(policy)", function: function)
    let id = try await saveNotes(["read"], in: container)[0]
    let here = container.newBackgroundContext()
    try await here.perform { context in
      context.mergePolicy = policy
      _ = try context.existingObject(with: id).title
    }
    return (container, id, here)
  }

  private func stored(_ container: PersistentContainer, _ id: ManagedID<Note>) async -> (String, Status, Date?)? {
    await container.newBackgroundContext().perform { context in
      guard let note = try? context.existingObject(with: id) else { return nil }
      return (note.title, note.status, note.createdAt)
    }
  }

  @Test(arguments: MergePolicy.allCases)
  func updatedHereAndUpdatedElsewhere(policy: MergePolicy) async throws {
    let (container, id, here) = try await setUp(policy)
    try await container.performBackgroundTask { context in
      let note = try context.existingObject(with: id)
      note.title = "elsewhere"
      note.createdAt = Self.elsewhereDate
      try context.save()
    }
    let before = try container.currentHistoryToken
    let outcome = try await here.perform { context in
      let note = try context.existingObject(with: id)
      note.title = "here"
      note.status = .published
      do {
        try context.save()
      } catch StoreError.mergeConflict(let conflicts) {
        return (conflicts, context.hasChanges, note.title, note.status, note.createdAt)
      }
      return ([], context.hasChanges, note.title, note.status, note.createdAt)
    }
    let row = try #require(await stored(container, id))
    switch policy {
    case .error:
      let conflict = try #require(outcome.0.first)
      #expect(outcome.0.count == 1)
      #expect(conflict.objectID == id.untyped)
      #expect(conflict.kind == .updatedElsewhere)
      #expect(conflict.attributes == ["title", "status", "createdAt"])
      #expect(conflict.readValues["title"] == .text("read"))
      #expect(conflict.storeValues?["title"] == .text("elsewhere"))
      #expect(conflict.objectValues["title"] == .text("here"))
      #expect(outcome.1, "nothing written, the changes stay pending")
      #expect(row.0 == "elsewhere" && row.1 == .draft && row.2 == Self.elsewhereDate)
      #expect(try container.currentHistoryToken == before)
    case .storeTrump:
      #expect(row.0 == "elsewhere" && row.1 == .published && row.2 == Self.elsewhereDate)
      let last = try #require(try container.fetchHistory(HistoryRequest(after: before)).first)
      #expect(last.changes.map(\.updatedProperties) == [["status"]], "history holds what was written")
    case .objectTrump:
      #expect(row.0 == "here" && row.1 == .published && row.2 == Self.elsewhereDate)
    case .overwrite:
      #expect(row.0 == "here" && row.1 == .published && row.2 == nil)
    case .rollback:
      #expect(row.0 == "elsewhere" && row.1 == .draft && row.2 == Self.elsewhereDate)
      #expect(try container.currentHistoryToken == before, "nothing of the object was written")
    }
    if policy != .error {
      #expect(outcome.0.isEmpty)
      #expect(!outcome.1)
      #expect(outcome.2 == row.0 && outcome.3 == row.1 && outcome.4 == row.2, "the object holds the row as committed")
      // The snapshot moved: a later save of the same object does not conflict.
      try await here.perform { context in
        context.mergePolicy = .error
        try context.existingObject(with: id).title = "later"
        try context.save()
      }
      #expect(await stored(container, id)?.0 == "later")
    }
  }

  @Test(arguments: MergePolicy.allCases)
  func updatedHereAndDeletedElsewhere(policy: MergePolicy) async throws {
    let (container, id, here) = try await setUp(policy)
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: id))
      try context.save()
    }
    let before = try container.currentHistoryToken
    let outcome = try await here.perform { context in
      let registered = try context.registeredObject(for: id)
      let note = try #require(registered)
      note.title = "here"
      do {
        try context.save()
      } catch StoreError.mergeConflict(let conflicts) {
        return (conflicts, note.isDeleted, try context.registeredObject(for: id) != nil)
      }
      return ([], note.isDeleted, try context.registeredObject(for: id) != nil)
    }
    let row = await stored(container, id)
    switch policy {
    case .error:
      #expect(outcome.0.map(\.kind) == [.deletedElsewhere])
      #expect(outcome.0.first?.storeValues == nil)
      #expect(outcome.0.first?.objectValues["title"] == .text("here"))
      #expect(row == nil)
    case .storeTrump, .rollback:
      #expect(outcome.0.isEmpty)
      #expect(outcome.1, "the deletion stands")
      #expect(!outcome.2)
      #expect(row == nil)
    case .objectTrump, .overwrite:
      #expect(outcome.0.isEmpty)
      #expect(!outcome.1)
      #expect(outcome.2)
      #expect(row?.0 == "here", "inserted again with the object's values")
      let history = try container.fetchHistory(HistoryRequest(after: before))
      #expect(history.flatMap(\.changes).map(\.changeType) == [.insert])
      #expect(history.flatMap(\.changes).map(\.objectID) == [id.untyped])
    }
  }

  @Test(arguments: MergePolicy.allCases)
  func deletedHereAndUpdatedElsewhere(policy: MergePolicy) async throws {
    let (container, id, here) = try await setUp(policy)
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).title = "elsewhere"
      try context.save()
    }
    let outcome = try await here.perform { context in
      let registered = try context.registeredObject(for: id)
      let note = try #require(registered)
      context.delete(note)
      do {
        try context.save()
      } catch StoreError.mergeConflict(let conflicts) {
        return (conflicts, note.isDeleted, note.title)
      }
      return ([], note.isDeleted, note.title)
    }
    let row = await stored(container, id)
    switch policy {
    case .error:
      #expect(outcome.0.map(\.kind) == [.deletedHereUpdatedElsewhere])
      #expect(outcome.0.first?.storeValues?["title"] == .text("elsewhere"))
      #expect(row?.0 == "elsewhere")
    case .storeTrump, .rollback:
      #expect(outcome.0.isEmpty)
      #expect(!outcome.1, "the row stays")
      #expect(outcome.2 == "elsewhere", "and the object takes its values")
      #expect(row?.0 == "elsewhere")
    case .objectTrump, .overwrite:
      #expect(outcome.0.isEmpty)
      #expect(row == nil, "the row is deleted")
    }
  }

  @Test(arguments: MergePolicy.allCases)
  func deletedHereAndDeletedElsewhereIsNoConflict(policy: MergePolicy) async throws {
    let (container, id, here) = try await setUp(policy)
    let start = try container.currentHistoryToken
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: id))
      try context.save()
    }
    try await here.perform { context in
      let registered = try context.registeredObject(for: id)
      context.delete(try #require(registered))
      try context.save()
      let pending = context.hasChanges
      #expect(!pending)
    }
    #expect(await stored(container, id) == nil)
    // Only the first deletion is in history: the second deleted nothing.
    let deletes = try container.fetchHistory(HistoryRequest(after: start)).flatMap(\.changes)
    #expect(deletes.map(\.changeType) == [.delete])
  }

  @Test func everyConflictOfASaveIsReportedAtOnce() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b", "c"], in: container)
    let here = container.newBackgroundContext()
    try await here.perform { context in for id in ids { _ = try context.existingObject(with: id).title } }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).title = "a2"
      context.delete(try context.existingObject(with: ids[1]))
      try context.save()
    }
    let conflicts = try await here.perform { context in
      for id in ids { try context.existingObject(with: id).status = .archived }
      do {
        try context.save()
      } catch StoreError.mergeConflict(let conflicts) {
        return conflicts
      }
      return []
    }
    #expect(Set(conflicts.map(\.objectID)) == [ids[0].untyped, ids[1].untyped])
    #expect(await stored(container, ids[2])?.1 == .draft, "nothing was written")
  }
}
