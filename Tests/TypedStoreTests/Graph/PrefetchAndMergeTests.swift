import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct PrefetchAndMergeTests {
  /// 20 shelves of 5 books each; every book has 2 chapters and a topic.
  private func fill(_ container: PersistentContainer) async throws {
    try await container.newBackgroundContext().perform { context in
      let topics = (0..<3).map { index in
        let topic = Topic(context: context)
        topic.label = "t\(index)"
        return topic
      }
      for s in 0..<20 {
        let shelf = Shelf(context: context)
        shelf.name = "s\(s)"
        for b in 0..<5 {
          let book = Book(context: context)
          book.title = "s\(s)b\(b)"
          book.shelf = shelf
          book.chapters = [Chapter(context: context), Chapter(context: context)]
          book.$tags.insert(topics[b % 3])
        }
      }
      try context.save()
    }
  }

  @Test(.disabled(if: testsRunOnPostgreSQL, "counts SQLite's statements"))
  func prefetchingLoadsEachRelationshipWithOneQueryNotOnePerObject() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await fill(container)
    try await container.newBackgroundContext().perform { context in
      let connection = try #require(try context.state.reader() as? SQLiteConnection)
      var request = FetchRequest<Shelf>()
      request.relationshipKeyPathsForPrefetching = [\.books]
      let before = connection.statementsRequested
      let shelves = try context.fetch(request)
      #expect(connection.statementsRequested - before == 2)  // the shelves, then all their books
      let afterPrefetch = connection.statementsRequested
      #expect(shelves.count == 20)
      #expect(shelves.allSatisfy { $0.books.count == 5 && $0.books.allSatisfy { !$0.isFault } })
      #expect(connection.statementsRequested == afterPrefetch)  // touching them read nothing more

      var books = FetchRequest<Book>()
      books.relationshipKeyPathsForPrefetching = [\.shelf, \.chapters, \.tags]
      let start = connection.statementsRequested
      let all = try context.fetch(books)
      let used = connection.statementsRequested - start
      #expect(all.count == 100)
      // books; shelves (already loaded: none); chapters; topic links, then topics
      #expect(used <= 5)
      let touched = connection.statementsRequested
      #expect(all.allSatisfy { $0.shelf != nil && $0.chapters.count == 2 && $0.tags.count == 1 })
      #expect(connection.statementsRequested == touched)
    }
    // Without prefetching, each shelf's books cost a query of their own.
    try await container.newBackgroundContext().perform { context in
      let connection = try #require(try context.state.reader() as? SQLiteConnection)
      let shelves = try context.fetch(FetchRequest<Shelf>())
      let before = connection.statementsRequested
      #expect(shelves.allSatisfy { $0.books.count == 5 })
      #expect(connection.statementsRequested - before == 20)
    }
  }

  /// What a prefetch files under each owner is what touching the relationship loads: for an
  /// owner with no related rows, for an ordered relationship (its order), and with a related
  /// object moved to another owner in memory and not saved.
  @Test func prefetchedRelationshipsHoldWhatLoadingThemOneByOneHolds() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await fill(container)
    try await container.newBackgroundContext().perform { context in
      let empty = Shelf(context: context)
      empty.name = "empty"
      let book = try context.fetch(FetchRequest<Book>(predicate: #Predicate { $0.title == "s3b1" }))[0]
      book.chapters = book.chapters.reversed() + [Chapter(context: context)]
      try context.save()
    }
    /// Each shelf's book titles, and each book's chapter keys in order, after moving one book
    /// (unsaved) from shelf s1 to shelf s2.
    @Sendable func snapshot(prefetching: Bool) async throws -> [String: [String]] {
      try await container.newBackgroundContext().perform { context in
        let moved = try context.fetch(FetchRequest<Book>(predicate: #Predicate { $0.title == "s1b0" }))[0]
        let target = try context.fetch(FetchRequest<Shelf>(predicate: #Predicate { $0.name == "s2" }))[0]
        moved.shelf = target
        var shelves = FetchRequest<Shelf>()
        var books = FetchRequest<Book>()
        if prefetching {
          shelves.relationshipKeyPathsForPrefetching = [\.books]
          books.relationshipKeyPathsForPrefetching = [\.chapters]
        }
        var result: [String: [String]] = [:]
        for shelf in try context.fetch(shelves) { result[shelf.name] = shelf.books.map(\.title).sorted() }
        for book in try context.fetch(books) {
          result["chapters of " + book.title] = book.chapters.map { "\($0.managedID)" }
        }
        return result
      }
    }
    let prefetched = try await snapshot(prefetching: true)
    let loaded = try await snapshot(prefetching: false)
    #expect(prefetched == loaded)
    #expect(prefetched["empty"] == [])
    #expect(prefetched["s1"]?.count == 4 && prefetched["s2"]?.count == 6)
    #expect(prefetched["chapters of s3b1"]?.count == 3)
  }

  @Test func aRelationshipFormThatDoesNotTranslateThrowsATypedErrorBeforeReading() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      Book(context: context).title = "kept"
      try context.save()
    }
    let (error, registered) = await container.newBackgroundContext().perform { context -> ((any Error)?, Int) in
      do {
        _ = try context.fetch(FetchRequest<Book>(predicate: #Predicate { $0.chapters.first?.number == 1 }))
        return (nil, context.registeredObjects.count)
      } catch {
        return (error, context.registeredObjects.count)
      }
    }
    #expect(error is PredicateTranslationError, "\(String(describing: error))")
    #expect(registered == 0)  // no row was read into the context
  }

  @Test func prefetchingSomethingThatIsNotARelationshipThrowsBeforeReading() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      Shelf(context: context).name = "kept"
      try context.save()
    }
    let (error, registered) = await container.newBackgroundContext().perform { context -> ((any Error)?, Int) in
      var request = FetchRequest<Shelf>()
      request.relationshipKeyPathsForPrefetching = [\.name]
      do {
        _ = try context.fetch(request)
        return (nil, context.registeredObjects.count)
      } catch {
        return (error, context.registeredObjects.count)
      }
    }
    #expect(error is FetchError)
    #expect(registered == 0)  // no row was read into the context
  }

  @Test func relationshipEditsAreHistoryUpdatesOfBothSidesAndMergeIntoOtherContexts() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let (inboxID, archiveID, bookID) = try await container.newBackgroundContext().perform { context in
      let inbox = Shelf(context: context)
      let archive = Shelf(context: context)
      let book = Book(context: context)
      book.shelf = inbox
      try context.save()
      return (inbox.managedID, archive.managedID, book.managedID)
    }
    // A second context has both shelves' books loaded, and merges automatically.
    let watcher = container.newBackgroundContext()
    let loaded = try await watcher.perform { context in
      context.automaticallyMergesChangesFromParent = true
      return try (
        context.existingObject(with: inboxID).books.count, context.existingObject(with: archiveID).books.count
      )
    }
    #expect(loaded == (1, 0))
    let before = try #require(try container.persistentStore.fetchHistory(HistoryRequest()).last?.token)
    try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: bookID).shelf = try context.existingObject(with: archiveID)
      try context.save()
    }
    let changes = try container.persistentStore.fetchHistory(HistoryRequest(after: before)).flatMap(\.changes)
    var updated: [String: [String]] = [:]
    for change in changes where change.changeType == .update {
      updated[change.objectID.description, default: []] += change.updatedProperties
    }
    #expect(updated[bookID.untyped.description] == ["shelf"])
    #expect(updated[inboxID.untyped.description] == ["books"])
    #expect(updated[archiveID.untyped.description] == ["books"])
    // The watcher's loaded sides follow.
    var merged = false
    for _ in 0..<200 {
      merged = try await watcher.perform { context in
        try context.existingObject(with: archiveID).books.count == 1
          && context.existingObject(with: inboxID).books.isEmpty
      }
      if merged { break }
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(merged)
    try await watcher.perform { context in
      let book = try context.existingObject(with: bookID)
      #expect(book.shelf === (try context.existingObject(with: archiveID)))
    }
  }
}
