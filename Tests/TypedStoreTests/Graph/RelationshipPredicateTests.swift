import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// `#Predicate` through relationships, checked against Swift's own `predicate.evaluate` on
/// random graphs: to-one chains (nil included), to-many `count`, `isEmpty`,
/// `contains(where:)` and `allSatisfy`, many-to-many, subentities. Seeded; set
/// `TYPEDSTORE_PREDICATE_SEED` to replay a run, `TYPEDSTORE_PREDICATE_CASES` for more rounds.
@Suite struct RelationshipPredicateTests {
  private struct Generator {
    var state: UInt64
    mutating func next(_ bound: Int) -> Int {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int((state >> 33) % UInt64(bound))
    }
    mutating func pick<T>(_ values: [T]) -> T { values[next(values.count)] }
  }

  private static let names = ["", "a", "b", "Ä", "a b"]
  private static let labels = ["red", "blue", "", "é", "e\u{301}"]

  @Test func relationshipPredicatesReturnWhatSwiftEvaluates() async throws {
    let environment = ProcessInfo.processInfo.environment
    let seed = environment["TYPEDSTORE_PREDICATE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
    let rounds = environment["TYPEDSTORE_PREDICATE_CASES"].flatMap(Int.init).map { max(1, $0 / 20) } ?? 30
    print("relationship predicates: seed \(seed), \(rounds) rounds")
    let container = try PersistentContainer.makeTest(model: graphModel)
    let mismatches = try await container.newBackgroundContext().perform { context -> [String] in
      var random = Generator(state: seed)
      // A random graph: shelves, books and novels on some of them, topics, chapters.
      let shelves = (0..<6).map { _ in
        let shelf = Shelf(context: context)
        shelf.name = random.pick(Self.names)
        return shelf
      }
      let topics = Self.labels.map { label in
        let topic = Topic(context: context)
        topic.label = label
        return topic
      }
      var books: [Book] = []
      for index in 0..<40 {
        let book: Book = random.next(4) == 0 ? Novel(context: context) : Book(context: context)
        books.append(book)
        book.title = random.pick(Self.names)
        if random.next(5) > 0 { book.shelf = random.pick(shelves) }
        for topic in topics where random.next(3) == 0 { book.$tags.insert(topic) }
        for number in 0..<random.next(4) {
          let chapter = Chapter(context: context)
          chapter.number = (number + index) % 5
          book.$chapters.append(chapter)
        }
      }
      try context.save()

      var mismatches: [String] = []
      func check<Entity: ManagedObject>(
        _ context: isolated ManagedObjectContext, _ name: String, _ predicate: Predicate<Entity>
      ) throws {
        let stored = Set(try context.fetch(FetchRequest<Entity>(predicate: predicate)).map(\.managedID))
        let evaluated = Set(
          try context.fetch(FetchRequest<Entity>()).filter { try predicate.evaluate($0) }.map(\.managedID))
        if stored != evaluated { mismatches.append("\(name): SQL \(stored.count), Swift \(evaluated.count)") }
      }
      /// A predicate that reads a computed property: refused before the store is read.
      func refused<Entity: ManagedObject>(
        _ context: isolated ManagedObjectContext, _ name: String, _ predicate: Predicate<Entity>
      ) {
        do {
          _ = try context.fetch(FetchRequest<Entity>(predicate: predicate))
          mismatches.append("\(name): translated, though it reads a computed property")
        } catch PredicateTranslationError.unknownKeyPath(let text) {
          if text.contains("0x") { mismatches.append("\(name): named \(text)") }
        } catch {
          mismatches.append("\(name): \(error)")
        }
      }
      for round in 0..<rounds {
        let name = random.pick(Self.names)
        let label = random.pick(Self.labels)
        let count = random.next(4)
        let number = random.next(5)
        let tag = "seed \(seed) round \(round)"
        try check(context, "\(tag) shelf?.name == \(name)", #Predicate<Book> { $0.shelf?.name == name })
        try check(context, "\(tag) shelf?.name != \(name)", #Predicate<Book> { $0.shelf?.name != name })
        try check(context, "\(tag) shelf == nil", #Predicate<Book> { $0.shelf == nil })
        try check(context, "\(tag) shelf != nil && title", #Predicate<Book> { $0.shelf != nil && $0.title == name })
        try check(context, "\(tag) tags.contains label", #Predicate<Book> { $0.tags.contains { $0.label == label } })
        try check(
          context, "\(tag) tags.allSatisfy label", #Predicate<Book> { $0.tags.allSatisfy { $0.label != label } })
        try check(context, "\(tag) tags.isEmpty", #Predicate<Book> { $0.tags.isEmpty })
        try check(context, "\(tag) tags.count > \(count)", #Predicate<Book> { $0.tags.count > count })
        try check(context, "\(tag) chapters.count >= \(count)", #Predicate<Book> { $0.chapters.count >= count })
        try check(
          context, "\(tag) chapters.contains number", #Predicate<Book> { $0.chapters.contains { $0.number == number } })
        try check(context, "\(tag) shelf books.count", #Predicate<Shelf> { $0.books.count >= count })
        try check(context, "\(tag) shelf books.contains", #Predicate<Shelf> { $0.books.contains { $0.title == name } })
        try check(context, "\(tag) shelf !books.isEmpty", #Predicate<Shelf> { !$0.books.isEmpty })
        try check(
          context, "\(tag) topic books on shelf", #Predicate<Topic> { $0.books.contains { $0.shelf?.name == name } })
        try check(context, "\(tag) chapter book shelf", #Predicate<Chapter> { $0.book?.shelf?.name == name })
        try check(context, "\(tag) novel shelf?.name", #Predicate<Novel> { $0.shelf?.name == name && $0.title != "" })
        refused(context, "\(tag) shelfName (computed)", #Predicate<Book> { $0.shelfName == name })
        refused(context, "\(tag) shelf?.loudName (computed)", #Predicate<Book> { $0.shelf?.loudName == name })
        refused(context, "\(tag) tagCount (computed)", #Predicate<Book> { $0.tagCount > count })
        refused(context, "\(tag) novel shelfName (computed)", #Predicate<Novel> { $0.shelfName == name })
        refused(
          context, "\(tag) tags loudLabel (computed)", #Predicate<Book> { $0.tags.contains { $0.loudLabel == label } })
        let shelf = random.pick(shelves)
        // Objects by ID, as SwiftData compares persistentModelID.
        let shelfID = shelf.managedID
        let bookID = random.pick(books).managedID
        let bookIDs = (0..<random.next(4)).map { _ in random.pick(books).managedID }
        try check(context, "\(tag) shelf?.managedID == id", #Predicate<Book> { $0.shelf?.managedID == shelfID })
        try check(context, "\(tag) shelf?.managedID != id", #Predicate<Book> { $0.shelf?.managedID != shelfID })
        try check(context, "\(tag) managedID == id", #Predicate<Book> { $0.managedID == bookID })
        try check(context, "\(tag) ids.contains(managedID)", #Predicate<Book> { bookIDs.contains($0.managedID) })
        try check(
          context, "\(tag) books.contains managedID",
          #Predicate<Shelf> { $0.books.contains { $0.managedID == bookID } })
        try check(
          context, "\(tag) chapter book?.managedID", #Predicate<Chapter> { $0.book?.managedID == bookID })
        try check(
          context, "\(tag) chapter book tags",
          #Predicate<Chapter> { $0.book.flatMap { $0.tags.count } ?? 9 <= count })
      }
      return mismatches
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
  }
}

extension RelationshipPredicateTests {
  @Test func unsavedRelationshipEditsDecideAsSwiftWould() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      shelf.name = "inbox"
      let (kept, moved) = (Book(context: context), Book(context: context))
      kept.shelf = shelf
      moved.shelf = shelf
      try context.save()
      moved.shelf = nil  // unsaved
      let topic = Topic(context: context)
      topic.label = "new"
      kept.$tags.insert(topic)  // unsaved, and the topic itself is not saved either
      let onShelf = try context.fetch(FetchRequest<Book>(predicate: #Predicate { $0.shelf?.name == "inbox" }))
      #expect(onShelf == [kept])
      let tagged = try context.fetch(FetchRequest<Book>(predicate: #Predicate { !$0.tags.isEmpty }))
      #expect(tagged == [kept])
    }
  }
}

extension RelationshipPredicateTests {
  /// `managedID` in a predicate (SwiftData's `persistentModelID` comparisons): the row's key.
  /// An ID that names no row of this store (temporary, or another store's) matches no stored
  /// row; unsaved objects are asked in Swift. Before, reading `managedID` while translating
  /// stopped the program.
  @Test func predicatesCompareObjectsByID() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let other = try PersistentContainer.makeTest(model: graphModel, variant: "other")
    let foreignID = try await other.performBackgroundTask { context in
      let shelf = Shelf(context: context)
      try context.save()
      return shelf.managedID  // key 1 in its store, as the first shelf below
    }
    let (shelfID, bookIDs) = try await container.performBackgroundTask { context in
      let shelf = Shelf(context: context)
      shelf.name = "first"
      let books = (0..<3).map { index in
        let book = Book(context: context)
        book.title = "book \(index)"
        book.shelf = index < 2 ? shelf : nil
        return book
      }
      try context.save()
      return (shelf.managedID, books.map(\.managedID))
    }
    #expect(shelfID.untyped.primaryKey == foreignID.untyped.primaryKey)
    try await container.newBackgroundContext().perform { context in
      func titles(_ context: isolated ManagedObjectContext, _ predicate: Predicate<Book>) throws -> [String] {
        try context.fetch(FetchRequest<Book>(predicate: predicate, sortBy: [SortDescriptor(\.title)])).map(\.title)
      }
      let onShelf = try titles(context, #Predicate { $0.shelf?.managedID == shelfID })
      #expect(onShelf == ["book 0", "book 1"])
      let onForeignShelf = try titles(context, #Predicate { $0.shelf?.managedID == foreignID })
      #expect(onForeignShelf.isEmpty)
      let ids = [bookIDs[0], bookIDs[2]]
      let listed = try titles(context, #Predicate { ids.contains($0.managedID) })
      #expect(listed == ["book 0", "book 2"])
      // An unsaved book on the shelf, and one compared by its temporary ID.
      let shelf = try context.existingObject(with: shelfID)
      let new = Book(context: context)
      new.title = "book new"
      new.shelf = shelf
      let newID = new.managedID
      let withUnsaved = try titles(context, #Predicate { $0.shelf?.managedID == shelfID })
      #expect(withUnsaved == ["book 0", "book 1", "book new"])
      let byTemporaryID = try titles(context, #Predicate { $0.managedID == newID })
      #expect(byTemporaryID == ["book new"])
      context.rollback()
      // A batch request takes the same predicate.
      let deleted = try context.execute(
        BatchDeleteRequest<Book>(predicate: #Predicate { $0.shelf?.managedID == shelfID }))
      #expect(deleted.count == 2)
      let left = try titles(context, #Predicate { _ in true })
      #expect(left == ["book 2"])
    }
    // Checked without a store, as setPredicate does: translated, not evaluated.
    var request = FetchRequest<Book>()
    try request.setPredicate(#Predicate { $0.shelf?.managedID == shelfID })
    #expect(request.predicate != nil)
  }
}
