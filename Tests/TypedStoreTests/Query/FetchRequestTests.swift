import Foundation
import Testing

@testable import TypedStore

@Suite struct FetchRequestTests {
  private func seeded(variant: String = "", function: String = #function) async throws -> PersistentContainer {
    let container = try PersistentContainer.makeTest(model: notesModel, variant: variant, function: function)
    try await container.performBackgroundTask { context in
      for (index, title) in ["delta", "alpha", "charlie", "bravo", "echo"].enumerated() {
        let note = Note(context: context)
        note.title = title
        note.createdAt = index.isMultiple(of: 2) ? Date(timeIntervalSinceReferenceDate: Double(index)) : nil
      }
      let list = Checklist(context: context)
      list.title = "foxtrot"
      list.itemCount = 2
      try context.save()
    }
    return container
  }

  @Test func sortsAscendingAndDescending() async throws {
    let container = try await seeded()
    let (up, down) = try await container.viewContext.perform { context in
      (
        try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title),
        try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title, order: .reverse)])).map(\.title)
      )
    }
    #expect(up == ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])
    #expect(down == up.reversed())
  }

  @Test func nilSortsFirstAscendingAndTiesKeepPrimaryKeyOrder() async throws {
    let container = try await seeded()
    let titles = try await container.viewContext.perform { context in
      try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.createdAt)])).map(\.title)
    }
    // nil dates (alpha, bravo, foxtrot in insertion order), then 0, 2, 4.
    #expect(titles == ["alpha", "bravo", "foxtrot", "delta", "charlie", "echo"])
  }

  @Test func limitAndOffsetSelectARange() async throws {
    let container = try await seeded()
    let (page, count) = try await container.viewContext.perform { context in
      let request = FetchRequest<Note>(sortBy: [SortDescriptor(\.title)], fetchLimit: 2, fetchOffset: 1)
      return (try context.fetch(request).map(\.title), try context.count(for: request))
    }
    #expect(page == ["bravo", "charlie"])
    #expect(count == 2)
  }

  @Test func subentitiesAreIncludedUnlessExcluded() async throws {
    let container = try await seeded()
    let (all, notesOnly, lists) = try await container.viewContext.perform { context in
      var request = FetchRequest<Note>()
      let all = try context.count(for: request)
      request.includesSubentities = false
      let notesOnly = try context.count(for: request)
      let lists = try context.fetch(FetchRequest<Checklist>()).map(\.itemCount)
      return (all, notesOnly, lists)
    }
    #expect(all == 6)
    #expect(notesOnly == 5)
    #expect(lists == [2])
  }

  @Test func pendingInsertsAndDeletesCountAndSort() async throws {
    let container = try await seeded()
    let (titles, ids, count, withoutPending) = try await container.newBackgroundContext().perform { context in
      let alpha = try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))[0]
      context.delete(alpha)
      let new = Note(context: context)
      new.title = "aardvark"
      let request = FetchRequest<Note>(sortBy: [SortDescriptor(\.title)], fetchLimit: 3)
      var stored = request
      stored.includesPendingChanges = false
      return (
        try context.fetch(request).map(\.title), try context.fetchObjectIDs(for: request),
        try context.count(for: FetchRequest<Note>()), try context.fetch(stored).map(\.title)
      )
    }
    #expect(titles == ["aardvark", "bravo", "charlie"])
    #expect(ids.first?.isTemporaryID == true)
    #expect(count == 6)
    #expect(withoutPending == ["alpha", "bravo", "charlie"])
  }

  @Test func pendingUpdatesReorderOnlyWhenTheyChangeASortKey() async throws {
    let container = try await seeded()
    let (byTitle, limited, counted) = try await container.newBackgroundContext().perform { context in
      let all = try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
      all[0].title = "zulu"  // alpha moves to the end of a title sort
      all[1].status = .archived  // bravo's change does not move it
      let byTitle = try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)], fetchLimit: 2))
      // Not sorted by a changed attribute: the store's order and limit apply as they are, and
      // the changed objects are the ones returned.
      let limited = try context.fetch(FetchRequest<Note>(fetchLimit: 2))
      let sameObjects = limited[0] === all[3] && limited[1] === all[0]  // delta, then alpha
      return (
        byTitle.map(\.title), limited.map(\.title) + [sameObjects ? "same" : "other"],
        try context.count(for: FetchRequest<Note>(sortBy: [SortDescriptor(\.title)], fetchLimit: 3))
      )
    }
    #expect(byTitle == ["bravo", "charlie"])
    #expect(limited == ["delta", "zulu", "same"])
    #expect(counted == 3)
  }

  @Test func untranslatableRequestsThrowBeforeReading() async throws {
    let container = try await seeded()
    try await container.viewContext.perform { context in
      #expect(throws: FetchError.self) {
        try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.managedIDString)]))
      }
      #expect(throws: FetchError.invalidRange("fetchLimit and fetchOffset must not be negative")) {
        try context.fetch(FetchRequest<Note>(fetchLimit: -1))
      }
      #expect(throws: FetchError.unknownEntity("Tag")) { try context.fetch(FetchRequest<Tag>()) }
      _ = try context.count(for: FetchRequest<Note>())
    }
  }
}

extension Note {
  /// A computed property that reads no attribute: not sortable in SQL.
  var managedIDString: String { "constant" }
}
