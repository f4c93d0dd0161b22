import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Sort descriptors that read an attribute of a related object (`\Book.shelf?.name`), through
/// up to three to-one relationships: the store's order equals Swift's own `SortDescriptor`
/// order of the same objects (nil first), with unsaved changes and in a fetched results
/// controller too.
@Suite struct SortThroughRelationshipTests {
  /// Swift's order for `descriptors`, ties by primary key (the store's tiebreak).
  private func swiftOrder<Entity: ManagedObject>(_ objects: [Entity], _ descriptors: [SortDescriptor<Entity>])
    -> [ManagedID<Entity>]
  {
    objects.sorted { left, right in
      for descriptor in descriptors {
        switch descriptor.compare(left, right) {
        case .orderedAscending: return true
        case .orderedDescending: return false
        case .orderedSame: continue
        }
      }
      return (left.objectKey?.value ?? 0) < (right.objectKey?.value ?? 0)
    }.map(\.managedID)
  }

  /// A shelf of each name, with one book "on <name>".
  private static func shelveBooks(_ names: [String], _ context: isolated ManagedObjectContext) {
    for name in names {
      let shelf = Shelf(context: context)
      shelf.name = name
      let book = Book(context: context)
      book.title = "on \(name)"
      book.shelf = shelf
    }
  }

  @Test func aRelatedObjectsAttributeSortsAsSwiftSortsIt() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      let shelves = ["B", "A", "C"].map { name in
        let shelf = Shelf(context: context)
        shelf.name = name
        return shelf
      }
      for index in 0..<12 {
        let book = index % 3 == 0 ? Novel(context: context) : Book(context: context)
        book.title = "book \(11 - index < 10 ? "0" : "")\(11 - index)"  // one width: any string order agrees
        book.shelf = index % 4 == 3 ? nil : shelves[index % 3]
        let chapter = Chapter(context: context)
        chapter.number = index
        chapter.book = index % 5 == 4 ? nil : book
        let page = Page(context: context)
        page.text = "page \(index)"
        page.chapter = index % 6 == 5 ? nil : chapter
      }
      let library = Library(context: context)
      library.city = "no curator"
      for name in ["Zoe", "Ada"] {
        let other = Library(context: context)
        other.city = name
        let curator = Curator(context: context)
        curator.name = name
        curator.library = other
      }
      try context.save()
    }
    try await container.newBackgroundContext().perform { context in
      let books: [SortDescriptor<Book>] = [SortDescriptor(\.shelf?.name), SortDescriptor(\.title, order: .reverse)]
      for descriptors in [books, [SortDescriptor(\Book.shelf?.name, order: .reverse)]] {
        let fetched = try context.fetch(FetchRequest<Book>(sortBy: descriptors))
        #expect(fetched.map(\.managedID) == swiftOrder(fetched, descriptors))
        #expect(fetched.first?.shelf == nil || descriptors.count == 1)
      }
      // Two relationships deep, through books some of which are novels (a subentity).
      let pages: [SortDescriptor<Page>] = [SortDescriptor(\.chapter?.book?.title), SortDescriptor(\.text)]
      let fetchedPages = try context.fetch(FetchRequest<Page>(sortBy: pages))
      #expect(fetchedPages.count == 12)
      #expect(fetchedPages.map(\.managedID) == swiftOrder(fetchedPages, pages))
      // Three deep, the most a sort key may follow.
      let deepest: [SortDescriptor<Page>] = [SortDescriptor(\.chapter?.book?.shelf?.name, order: .reverse)]
      let byShelf = try context.fetch(FetchRequest<Page>(sortBy: deepest))
      #expect(byShelf.map(\.managedID) == swiftOrder(byShelf, deepest))
      // The side of a one-to-one that holds no key.
      let libraries: [SortDescriptor<Library>] = [SortDescriptor(\.curator?.name)]
      let fetchedLibraries = try context.fetch(FetchRequest<Library>(sortBy: libraries))
      #expect(fetchedLibraries.map(\.city) == ["no curator", "Ada", "Zoe"])
      // With a limit and an offset, which the store applies, and a batch at a time.
      let page = try context.fetch(FetchRequest<Book>(sortBy: books, fetchLimit: 4, fetchOffset: 3))
      let all = try context.fetch(FetchRequest<Book>(sortBy: books))
      #expect(page.map(\.managedID) == Array(all[3..<7]).map(\.managedID))
      let batched = try context.fetch(FetchRequest<Book>(sortBy: books), batchSize: 5)
      #expect(batched.map(\.managedID) == all.map(\.managedID))
    }
  }

  @Test func unsavedChangesSortByTheirValuesNow() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      Self.shelveBooks(["A", "B"], context)
      try context.save()
    }
    try await container.newBackgroundContext().perform { context in
      let request = FetchRequest<Book>(sortBy: [SortDescriptor(\.shelf?.name)])
      #expect(try context.fetch(request).map(\.title) == ["on A", "on B"])
      // Unsaved: shelf A renamed to C, and a new book on a new shelf "B+".
      let a = try #require(try context.fetch(FetchRequest<Shelf>(predicate: #Predicate { $0.name == "A" })).first)
      a.name = "C"
      #expect(try context.fetch(request).map(\.title) == ["on B", "on A"])  // an update alone
      // A book moved to the other shelf (its key changes, unsaved), and back.
      let onB = try #require(try context.fetch(FetchRequest<Book>(predicate: #Predicate { $0.title == "on B" })).first)
      onB.shelf = a
      #expect(try context.fetch(request).map(\.title) == ["on A", "on B"])  // both on "C" now, by key
      onB.shelf = try context.fetch(FetchRequest<Shelf>(predicate: #Predicate { $0.name == "B" })).first
      #expect(try context.fetch(request).map(\.title) == ["on B", "on A"])
      let shelf = Shelf(context: context)
      shelf.name = "B+"
      let book = Book(context: context)
      book.title = "on B+"
      book.shelf = shelf
      #expect(try context.fetch(request).map(\.title) == ["on B", "on B+", "on A"])
      try context.save()
      #expect(try context.fetch(request).map(\.title) == ["on B", "on B+", "on A"])
    }
  }

  @Test func aFetchedResultsControllerPlacesObjectsByARelatedAttribute() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      Self.shelveBooks(["A", "C"], context)
      try context.save()
      let controller = FetchedResultsController(
        fetchRequest: FetchRequest<Book>(sortBy: [SortDescriptor(\.shelf?.name)]), context: context)
      try controller.performFetch()
      #expect(controller.fetchedObjects.map(\.title) == ["on A", "on C"])
      let shelf = Shelf(context: context)
      shelf.name = "B"
      let book = Book(context: context)
      book.title = "on B"
      book.shelf = shelf
      try context.save()
      #expect(controller.fetchedObjects.map(\.title) == ["on A", "on B", "on C"])
      // Renaming a shelf moves none of the books (they did not change), as in Core Data.
      try #require(controller.fetchedObjects.first?.shelf).name = "D"
      try context.save()
      #expect(controller.fetchedObjects.map(\.title) == ["on A", "on B", "on C"])
      try controller.performFetch()
      #expect(controller.fetchedObjects.map(\.title) == ["on B", "on C", "on A"])
    }
  }

  /// Sections by a related attribute (Core Data's `sectionNameKeyPath` "shelf.name"): books
  /// without a shelf form the section with the empty name, first.
  @Test func sectionsMayGroupByARelatedAttribute() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      let shelves = ["A", "B"].map { name in
        let shelf = Shelf(context: context)
        shelf.name = name
        return shelf
      }
      for (title, shelf) in [("a1", 0), ("b1", 1), ("none", -1), ("a2", 0)] {
        let book = Book(context: context)
        book.title = title
        book.shelf = shelf < 0 ? nil : shelves[shelf]
      }
      try context.save()
      let controller = FetchedResultsController(
        fetchRequest: FetchRequest<Book>(sortBy: [SortDescriptor(\.shelf?.name), SortDescriptor(\.title)]),
        context: context, sectionNameKeyPath: \Book.shelf?.name)
      try controller.performFetch()
      #expect(controller.sections.map(\.name) == ["", "A", "B"])
      #expect(controller.sections.map { $0.objects.map(\.title) } == [["none"], ["a1", "a2"], ["b1"]])
      // A book moved to another shelf moves to that section.
      try #require(controller.sections[1].objects.first).shelf = shelves[1]
      try context.save()
      #expect(controller.sections.map { $0.objects.map(\.title) } == [["none"], ["a2"], ["a1", "b1"]])
    }
  }

  @Test func aKeyPathThatReadsNoSingleAttributeThrowsBeforeReading() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    await container.newBackgroundContext().perform { context in
      for request in [
        FetchRequest<Book>(sortBy: [SortDescriptor(\.tags.count)]),  // a to-many
        FetchRequest<Book>(sortBy: [SortDescriptor(\.shelf?.books.count)]),
      ] {
        #expect(throws: FetchError.self) { try context.fetch(request) }
      }
    }
  }
}
