import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct RelationshipTests {
  @Test func modelDescribesRelationshipsAndTheirStorage() throws {
    let book = try #require(graphModel.entity(for: Book.self))
    let shelf = try #require(book.relationship(named: "shelf"))
    #expect(shelf.kind == .toOne && shelf.destinationEntityName == "Shelf" && shelf.inverseName == "books")
    #expect(shelf.storage == .foreignKey(column: "shelf", orderColumn: nil))
    let chapters = try #require(book.relationship(named: "chapters"))
    #expect(chapters.kind == .ordered && chapters.deleteRule == .cascade)
    #expect(chapters.storage == .inverseForeignKey(column: "book", orderColumn: "_book_order"))
    let tags = try #require(book.relationship(named: "tags"))
    #expect(
      tags.storage
        == .joinTable(
          table: "_join_Book_tags", ownColumn: "source", otherColumn: "target", orderColumn: nil, isOwner: true))
    #expect(book.attributes.map(\.name) == ["title"])  // key columns are not attributes
    let novel = try #require(graphModel.entity(for: Novel.self))
    #expect(novel.relationships.map(\.name) == ["shelf", "tags", "chapters"])
    let json = String(decoding: graphModel.jsonRepresentation, as: UTF8.self)
    #expect(json.contains("\"relationships\""))
    #expect(json.contains("\"deleteRule\":\"cascade\""))
  }

  @Test func aModelWithoutRelationshipsKeepsItsVersionHash() throws {
    let json = String(decoding: notesModel.jsonRepresentation, as: UTF8.self)
    #expect(!json.contains("relationships"))
    // The hash of that JSON, pinned: a change to how a model without relationships is
    // written (and so to the hash its stores carry) fails here instead of refusing their stores.
    #expect(notesModel.versionHash == SHA256.hex(of: notesModel.jsonRepresentation))
    #expect(notesModel.versionHash == "1e2eb6bc5d8771c7ffbb74bddd84be06d595c5d57a4e06e6818dcc6bfebfaa4f")
  }

  @Test func settingOneSideUpdatesTheOtherInMemoryAtOnce() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.newBackgroundContext().perform { context in
      let inbox = Shelf(context: context)
      let archive = Shelf(context: context)
      let book = Book(context: context)
      book.shelf = inbox
      #expect(inbox.books.contains(where: { $0 === book }))
      book.shelf = archive
      #expect(!inbox.books.contains(where: { $0 === book }))
      #expect(archive.books == [book])
      archive.$books.remove(book)
      #expect(book.shelf == nil)
      inbox.books.insert(book)
      #expect(book.shelf === inbox)
      let tag = Topic(context: context)
      book.$tags.insert(tag)
      #expect(tag.books == [book])
      tag.books = []
      #expect(book.tags.isEmpty)
      let one = Chapter(context: context)
      let two = Chapter(context: context)
      book.chapters = [one, two]
      #expect(one.book === book && two.book === book)
      book.$chapters.insert(two, at: 0)
      #expect(book.chapters == [two, one])
      one.book = nil
      #expect(book.chapters == [two])
      try context.save()
      #expect(book.chapters == [two] && two.book === book && one.book == nil)
    }
  }

  @Test func graphSurvivesSaveAndAFreshFetchInAnotherContainer() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let container = try PersistentContainer(name: "Graph", model: graphModel, storeURL: url)
    let shelfID = try await container.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      shelf.name = "Inbox"
      let novel = Novel(context: context)
      novel.title = "N"
      novel.shelf = shelf
      let book = Book(context: context)
      book.title = "B"
      shelf.$books.insert(book)
      let red = Topic(context: context)
      red.label = "red"
      let blue = Topic(context: context)
      blue.label = "blue"
      book.tags = [red, blue]
      novel.$tags.insert(red)
      book.chapters = (1...5).map { number in
        let chapter = Chapter(context: context)
        chapter.number = number
        return chapter
      }
      book.$chapters.insert(book.chapters[4], at: 0)  // 5, 1, 2, 3, 4
      try context.save()
      return shelf.managedID
    }

    let other = try PersistentContainer(name: "Graph", model: graphModel, storeURL: url)
    try await other.newBackgroundContext().perform { context in
      let shelf = try context.existingObject(with: shelfID)
      #expect(shelf.books.count == 2)
      #expect(Set(shelf.books.map(\.title)) == ["N", "B"])
      let novel = try #require(shelf.books.first { $0.title == "N" })
      #expect(novel is Novel)  // the subentity's class, on a relationship typed to its parent
      #expect(novel.shelf === shelf)
      let book = try #require(shelf.books.first { $0.title == "B" })
      #expect(book.chapters.map(\.number) == [5, 1, 2, 3, 4])
      #expect(book.chapters.allSatisfy { $0.book === book })
      #expect(Set(book.tags.map(\.label)) == ["red", "blue"])
      let red = try #require(book.tags.first { $0.label == "red" })
      #expect(red.books == [book, novel])
      // A move saved in this container is seen by a fresh fetch in the first.
      book.$chapters.remove(book.chapters[0])
      novel.shelf = nil
      try context.save()
    }
    try await container.newBackgroundContext().perform { context in
      let shelf = try context.existingObject(with: shelfID)
      #expect(shelf.books.map(\.title) == ["B"])
      let book = try #require(shelf.books.first)
      #expect(book.chapters.map(\.number) == [1, 2, 3, 4])
      let chapters = try context.fetch(FetchRequest<Chapter>(sortBy: [SortDescriptor(\.number)]))
      #expect(chapters.map(\.number) == [1, 2, 3, 4, 5], "\(chapters.map { ($0.number, $0.book?.title ?? "-") })")
    }
  }

  @Test func cascadeReachesNeverLoadedRowsThreeLevelsDeepWithHistory() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let shelfID = try await container.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      for b in 0..<3 {
        let book = Book(context: context)
        book.title = "b\(b)"
        book.shelf = shelf
        for c in 0..<2 {
          let chapter = Chapter(context: context)
          chapter.number = c
          book.$chapters.append(chapter)
          for p in 0..<2 {
            let page = Page(context: context)
            page.text = "\(b).\(c).\(p)"
            chapter.$pages.insert(page)
          }
        }
      }
      let kept = Book(context: context)
      kept.title = "elsewhere"
      try context.save()
      return shelf.managedID
    }
    let before = try #require(try container.persistentStore.fetchHistory(HistoryRequest()).last?.token)
    // A fresh context: only the shelf is loaded; its books, chapters and pages never are.
    try await container.newBackgroundContext().perform { context in
      let shelf = try context.existingObject(with: shelfID)
      context.delete(shelf)
      try context.save()
      #expect(try context.count(for: FetchRequest<Book>()) == 1)
      #expect(try context.count(for: FetchRequest<Chapter>()) == 0)
      #expect(try context.count(for: FetchRequest<Page>()) == 0)
    }
    let transactions = try container.persistentStore.fetchHistory(HistoryRequest(after: before))
    #expect(transactions.count == 1)
    let deletes: [HistoryChange] = transactions[0].changes.filter { $0.changeType == HistoryChange.Kind.delete }
    var counts: [String: Int] = [:]
    for change in deletes { counts[change.objectID.entityName, default: 0] += 1 }
    #expect(counts == ["Shelf": 1, "Book": 3, "Chapter": 6, "Page": 12])
    let texts = deletes.compactMap { $0.tombstone?[\Page.text] }
    #expect(texts.count == 12)
  }

  @Test func nullifyClearsTheOtherSideInTheStoreAndInMemory() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let (bookID, chapterIDs) = try await container.newBackgroundContext().perform { context in
      let book = Book(context: context)
      book.chapters = [Chapter(context: context), Chapter(context: context)]
      try context.save()
      return (book.managedID, book.chapters.map(\.managedID))
    }
    let before = try #require(try container.persistentStore.fetchHistory(HistoryRequest()).last?.token)
    try await container.newBackgroundContext().perform { context in
      let loaded = try context.existingObject(with: chapterIDs[0])
      #expect(loaded.book != nil)
      let tag = Topic(context: context)
      try context.existingObject(with: bookID).$tags.insert(tag)
      try context.save()
      // Deleting the chapter's book cascades; deleting a tag nullifies the join rows.
      context.delete(tag)
      try context.save()
      #expect(try context.existingObject(with: bookID).tags.isEmpty)
    }
    let changes = try container.persistentStore.fetchHistory(HistoryRequest(after: before)).flatMap(\.changes)
    let tagUpdates = changes.filter { $0.changeType == .update && $0.objectID.entityName == "Book" }
    #expect(tagUpdates.allSatisfy { $0.updatedProperties == ["tags"] } && tagUpdates.count == 2)
  }

  @Test func denyThrowsNamingTheBlockersAndChangesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let libraryID = try await container.newBackgroundContext().perform { context in
      let library = Library(context: context)
      let curator = Curator(context: context)
      curator.library = library
      #expect(library.curator === curator)
      try context.save()
      return library.managedID
    }
    let before = try container.persistentStore.fetchHistory(HistoryRequest()).count
    try await container.newBackgroundContext().perform { context in
      let library = try context.existingObject(with: libraryID)
      context.delete(library)
      do {
        try context.save()
        Issue.record("the save should have been denied")
      } catch StoreError.deleteDenied(let denials) {
        #expect(denials.count == 1)
        #expect(denials[0].relationship == "curator")
        #expect(denials[0].relatedIDs.map(\.entityName) == ["Curator"])
      }
    }
    // The rule holds for rows no context loaded, too (the store checks it).
    try await container.newBackgroundContext().perform { context in
      do {
        _ = try context.execute(BatchDeleteRequest<Library>())
        Issue.record("the batch delete should have been denied")
      } catch StoreError.deleteDenied(let denials) {
        #expect(denials.first?.objectID == libraryID.untyped)
      }
      #expect(try context.count(for: FetchRequest<Library>()) == 1)
    }
    #expect(try container.persistentStore.fetchHistory(HistoryRequest()).count == before)
  }

  @Test func validationListsEveryFailureAndWritesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.newBackgroundContext().perform { context in
      _ = Curator(context: context)
      _ = Curator(context: context)
      do {
        try context.save()
        Issue.record("the save should have failed")
      } catch StoreError.validationFailed(let failures) {
        #expect(failures.count == 2)
        #expect(failures.allSatisfy { $0.property == "library" && $0.reason == .missingRequiredRelationship })
      }
    }
    let stored = try await container.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Curator>())
    }
    #expect(stored == 0)
  }

  @Test func rollbackRestoresBothSides() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let (shelfID, bookID) = try await container.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      let book = Book(context: context)
      book.shelf = shelf
      try context.save()
      return (shelf.managedID, book.managedID)
    }
    try await container.newBackgroundContext().perform { context in
      let shelf = try context.existingObject(with: shelfID)
      let book = try context.existingObject(with: bookID)
      let other = Shelf(context: context)
      book.shelf = other
      #expect(shelf.books.isEmpty)
      context.rollback()
      #expect(book.shelf === shelf)
      #expect(shelf.books == [book])
    }
  }
}
