import Foundation
import Testing
import TypedStoreTesting

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

  @Test func fetchObjectIDsAndCountWithPendingChangesRegisterNoObject() async throws {
    let container = try await seeded()
    let outcome = try await container.newBackgroundContext().perform { context in
      // Held: one changed, one deleted; the other rows stay unregistered.
      let delta = try #require(
        try context.fetch(FetchRequest<Note>(predicate: #Predicate { $0.title == "delta" })).first)
      let alpha = try #require(
        try context.fetch(FetchRequest<Note>(predicate: #Predicate { $0.title == "alpha" })).first)
      delta.title = "aaa"
      context.delete(alpha)
      let new = Note(context: context)
      new.title = "bzz"
      let before = context.registeredObjects
      let request = FetchRequest<Note>(predicate: #Predicate { $0.title != "echo" }, sortBy: [SortDescriptor(\.title)])
      let ids = try context.fetchObjectIDs(for: request)
      let count = try context.count(for: request)
      let after = context.registeredObjects
      let fetched = try context.fetch(request).map(\.managedID)
      return (before == after, before.count, ids, count, fetched, new.managedID, delta.managedID)
    }
    #expect(outcome.0, "no object registered by fetchObjectIDs or count")
    #expect(outcome.1 == 3, "the changed note, the deleted one and the inserted one")
    #expect(outcome.2 == outcome.4, "the IDs a fetch returns, in its order")
    #expect(outcome.2.count == 5 && outcome.3 == 5)
    #expect(outcome.2.first == outcome.6 && outcome.2[2] == outcome.5)
  }

  @Test func fetchObjectIDsSortedThroughARelationshipWithPendingChangesRegistersNoObject() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      for (index, name) in ["b", "a", "c"].enumerated() {
        let shelf = Shelf(context: context)
        shelf.name = name
        let book = Book(context: context)
        book.title = "book \(index)"
        book.shelf = shelf
      }
      try context.save()
    }
    let outcome = try await container.newBackgroundContext().perform { context in
      let book = try #require(
        try context.fetch(FetchRequest<Book>(predicate: #Predicate { $0.title == "book 0" })).first)
      book.title = "book 0 changed"  // a pending change, read through by the sort below
      let added = Book(context: context)
      added.title = "new"
      let before = context.registeredObjects
      let request = FetchRequest<Book>(sortBy: [SortDescriptor(\.shelf?.name), SortDescriptor(\.title)])
      let ids = try context.fetchObjectIDs(for: request)
      let after = context.registeredObjects
      let entity = try #require(book.entity)
      let shelf = try #require(entity.relationships.first { $0.name == "shelf" })
      let shelfIsAFault = shelf.accessor.isFault(book)
      return (before == after, shelfIsAFault, ids, try context.fetch(request).map(\.managedID))
    }
    #expect(outcome.0)
    #expect(outcome.1, "the relationship loaded for the sort is a fault again")
    #expect(outcome.2 == outcome.3)
    #expect(outcome.2.count == 4)
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
      #expect(context.registeredObjects.isEmpty)  // no row was read into the context
      _ = try context.count(for: FetchRequest<Note>())
    }
  }
}

extension Note {
  /// A computed property that reads no attribute: not sortable in SQL.
  var managedIDString: String { "constant" }
}
