import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

// Versions of a shelf of books for the relationship-kind migrations: a to-many made ordered
// and back, one-to-many made many-to-many and back. Each version's classes store themselves as
// the entity their version calls them (`entityName`).

enum ShelvesV1 {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: Set<Book>
    @Attribute var name: String = ""
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books) var shelf: Shelf?
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers) var books: Set<Book>
  }
}

/// `Shelf.books` ordered, `Reader.books` ordered.
enum ShelvesOrdered {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: [Book]
    @Attribute var name: String = ""
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books) var shelf: Shelf?
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers) var books: [Book]
  }
}

/// A book on several shelves (`Book.shelves`, was `shelf`), a reader of one book (`Reader.book`,
/// was `books`).
enum ShelvesReshaped {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: Set<Book>
    @Attribute var name: String = ""
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books, originalName: "shelf") var shelves: Set<Shelf>
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers, originalName: "books") var book: Book?
  }
}

/// Version 1's relationships again, from `ShelvesReshaped` (the renames point back) or
/// `ShelvesOrdered`, in a version of its own (shelves have a floor).
enum ShelvesBack {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: Set<Book>
    @Attribute var name: String = ""
    @Attribute var floor: Int = 0
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books, originalName: "shelves") var shelf: Shelf?
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers, originalName: "book") var books: Set<Book>
  }
}

/// `ShelvesOrdered` with books on several shelves: each shelf's list keeps its order.
enum ShelvesOrderedReshaped {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: [Book]
    @Attribute var name: String = ""
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books, originalName: "shelf") var shelves: Set<Shelf>
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers) var books: [Book]
  }
}

/// Back to one shelf a book, the shelves' lists still ordered (shelves have a floor: a
/// version of its own).
enum ShelvesOrderedBack {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: [Book]
    @Attribute var name: String = ""
    @Attribute var floor: Int = 0
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books, originalName: "shelves") var shelf: Shelf?
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers) var books: [Book]
  }
}

/// `ShelvesReshaped` with every reader's book required.
enum ShelvesRequiredBook {
  final class Shelf: ManagedObject {
    @Relationship(deleteRule: .nullify) var books: Set<Book>
    @Attribute var name: String = ""
  }

  final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Shelf.books, originalName: "shelf") var shelves: Set<Shelf>
    @Relationship() var readers: Set<Reader>
  }

  final class Reader: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: \Book.readers, required: true, originalName: "books") var book: Book?
  }
}

private func model(_ types: ManagedObject.Type...) throws -> ManagedObjectModel { try ManagedObjectModel(types) }

/// A version 1 store: two shelves, three books (two on the first shelf, added in reverse
/// title order), three readers of one book each, plus one reader of two books when `crowded`.
private func makeShelves(crowded: Bool = false, lonely: Bool = false, function: String = #function) throws -> URL {
  typealias V1 = ShelvesV1
  let container = try PersistentContainer.makeTest(
    model: model(V1.Shelf.self, V1.Book.self, V1.Reader.self), function: function)
  try container.viewContext.performAndWait { context in
    let first = V1.Shelf(context: context)
    first.name = "first"
    V1.Shelf(context: context).name = "second"
    var books: [V1.Book] = []
    for title in ["c", "b", "a"] {
      let book = V1.Book(context: context)
      book.title = title
      books.append(book)
    }
    books[0].shelf = first
    books[1].shelf = first
    for (index, name) in ["ann", "bob", "cy"].enumerated() {
      let reader = V1.Reader(context: context)
      reader.name = name
      reader.books = [books[index]]
    }
    if lonely { V1.Reader(context: context).name = "eve" }
    if crowded {
      let reader = V1.Reader(context: context)
      reader.name = "dee"
      reader.books = [books[0], books[1]]
    }
    try context.save()
  }
  return container.persistentStore.url
}

@Suite struct RelationshipMigrationTests {
  @Test func aToManyMadeOrderedKeepsEveryLinkInPrimaryKeyOrder() throws {
    let url = try makeShelves()
    typealias V2 = ShelvesOrdered
    let report = try PersistentStore.migrationReport(
      forStoreAt: url, to: model(V2.Shelf.self, V2.Book.self, V2.Reader.self))
    #expect(report.canMigrate, "\(report)")
    #expect(
      report.steps.flatMap(\.operations).filter { $0.kind == .makeOrdered }.map(\.property) == ["books", "books"])
    let container = try PersistentContainer(
      name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
    try container.viewContext.performAndWait { context in
      let shelf = try context.fetch(FetchRequest<V2.Shelf>(predicate: #Predicate { $0.name == "first" }))[0]
      #expect(shelf.books.map(\.title) == ["c", "b"], "the order they read in: by primary key")
      shelf.books = [shelf.books[1], shelf.books[0]]
      let readers = try context.fetch(FetchRequest<V2.Reader>(sortBy: [SortDescriptor(\.name)]))
      #expect(readers.map { $0.books.map(\.title) } == [["c"], ["b"], ["a"]])
      try context.save()
    }
    let reopened = try PersistentContainer(
      name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
    let titles = try reopened.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<V2.Shelf>(predicate: #Predicate { $0.name == "first" }))[0].books.map(\.title)
    }
    #expect(titles == ["b", "c"], "the new order is stored")
    #expect(try reopened.persistentStore.checkConsistency().problems.isEmpty)
  }

  @Test func anOrderedToManyMadeUnorderedKeepsEveryLink() throws {
    let url = try makeShelves()
    typealias V2 = ShelvesOrdered
    typealias V3 = ShelvesBack
    _ = try PersistentContainer(
      name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
    let container = try PersistentContainer(
      name: "Shelves", model: model(V3.Shelf.self, V3.Book.self, V3.Reader.self), storeURL: url)
    try container.viewContext.performAndWait { context in
      let shelf = try context.fetch(FetchRequest<V3.Shelf>(predicate: #Predicate { $0.name == "first" }))[0]
      #expect(Set(shelf.books.map(\.title)) == ["b", "c"])
      let readers = try context.fetch(FetchRequest<V3.Reader>(sortBy: [SortDescriptor(\.name)]))
      #expect(readers.map { $0.books.map(\.title) } == [["c"], ["b"], ["a"]])
    }
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
  }

  @Test func oneToManyBecomesManyToManyAndBackKeepingEveryLink() throws {
    let url = try makeShelves()
    typealias V2 = ShelvesReshaped
    let report = try PersistentStore.migrationReport(
      forStoreAt: url, to: model(V2.Shelf.self, V2.Book.self, V2.Reader.self))
    #expect(report.canMigrate, "\(report)")
    let kinds = Set(report.steps.flatMap(\.operations).map(\.kind))
    #expect(kinds.isSuperset(of: [.moveLinksToJoinTable, .moveLinksToKeyColumn]))
    do {
      let container = try PersistentContainer(
        name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
      try container.viewContext.performAndWait { context in
        let books = try context.fetch(FetchRequest<V2.Book>(sortBy: [SortDescriptor(\.title)]))
        #expect(books.map { $0.shelves.map(\.name).sorted() } == [[], ["first"], ["first"]])
        let readers = try context.fetch(FetchRequest<V2.Reader>(sortBy: [SortDescriptor(\.name)]))
        #expect(readers.map { $0.book?.title } == ["c", "b", "a"])
        // A book on a second shelf: what version 1 could not say.
        let second = try context.fetch(FetchRequest<V2.Shelf>(predicate: #Predicate { $0.name == "second" }))[0]
        books[1].shelves.insert(second)
        try context.save()
      }
      #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
    }
    // Back to version 1's shapes: a book on two shelves cannot keep both, so it is refused,
    // unchanged; once it is on one shelf, every link comes back.
    typealias V3 = ShelvesBack
    let before = try everything(url)
    #expect {
      try PersistentContainer(
        name: "Shelves", model: model(V3.Shelf.self, V3.Book.self, V3.Reader.self), storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable("Book", "shelf", let change, .custom) = error else { return false }
      return change.contains("more than one link")
    }
    #expect(try everything(url) == before)
    do {
      let container = try PersistentContainer(
        name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
      try container.viewContext.performAndWait { context in
        let book = try context.fetch(FetchRequest<V2.Book>(predicate: #Predicate { $0.title == "b" }))[0]
        book.shelves = book.shelves.filter { $0.name == "second" }
        try context.save()
      }
    }
    let container = try PersistentContainer(
      name: "Shelves", model: model(V3.Shelf.self, V3.Book.self, V3.Reader.self), storeURL: url)
    try container.viewContext.performAndWait { context in
      let books = try context.fetch(FetchRequest<V3.Book>(sortBy: [SortDescriptor(\.title)]))
      #expect(books.map { $0.shelf?.name ?? "nil" } == ["nil", "second", "first"])
      let readers = try context.fetch(FetchRequest<V3.Reader>(sortBy: [SortDescriptor(\.name)]))
      #expect(readers.map { $0.books.map(\.title) } == [["c"], ["b"], ["a"]])
    }
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
  }

  @Test func manyToManyBecomesOneToManyWhenEveryRowHasOneLink() throws {
    let url = try makeShelves()
    typealias V2 = ShelvesReshaped
    let container = try PersistentContainer(
      name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
    let readers = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<V2.Reader>(sortBy: [SortDescriptor(\.name)])).map { $0.book?.title ?? "nil" }
    }
    #expect(readers == ["c", "b", "a"])
    let tables = try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt(
      "SELECT count(*) FROM sqlite_master WHERE name = '_join_Book_readers'")
    #expect(tables == 0, "the old join table is dropped")
  }

  @Test func aManyToManyMadeToOneIsRefusedWhileARowHasSeveralLinks() throws {
    let url = try makeShelves(crowded: true)
    typealias V2 = ShelvesReshaped
    let before = try everything(url)
    #expect {
      try PersistentContainer(
        name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable("Reader", "book", let change, .custom) = error else { return false }
      return change.contains("1 rows have more than one link")
    }
    #expect(try everything(url) == before)
  }

  @Test func aManyToManyMadeARequiredToOneIsRefusedWhileARowHasNoLink() throws {
    let url = try makeShelves(lonely: true)
    typealias V2 = ShelvesRequiredBook
    let before = try everything(url)
    #expect {
      try PersistentContainer(
        name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable("Reader", "book", let change, .custom) = error else { return false }
      return change.contains("1 rows have no link")
    }
    #expect(try everything(url) == before)
  }

  @Test func anOrderedListKeepsItsOrderThroughManyToManyAndBack() throws {
    let url = try makeShelves()
    typealias V2 = ShelvesOrdered
    typealias V3 = ShelvesOrderedReshaped
    typealias V4 = ShelvesOrderedBack
    let first = #Predicate<V2.Shelf> { $0.name == "first" }
    do {
      let container = try PersistentContainer(
        name: "Shelves", model: model(V2.Shelf.self, V2.Book.self, V2.Reader.self), storeURL: url)
      try container.viewContext.performAndWait { context in
        let shelf = try context.fetch(FetchRequest<V2.Shelf>(predicate: first))[0]
        shelf.books = [shelf.books[1], shelf.books[0]]  // b, c: not primary-key order
        try context.save()
      }
    }
    do {
      let container = try PersistentContainer(
        name: "Shelves", model: model(V3.Shelf.self, V3.Book.self, V3.Reader.self), storeURL: url)
      let titles = try container.viewContext.performAndWait { context in
        try context.fetch(FetchRequest<V3.Shelf>(predicate: #Predicate { $0.name == "first" }))[0].books.map(\.title)
      }
      #expect(titles == ["b", "c"], "the key column's order, copied into the join table")
    }
    let container = try PersistentContainer(
      name: "Shelves", model: model(V4.Shelf.self, V4.Book.self, V4.Reader.self), storeURL: url)
    try container.viewContext.performAndWait { context in
      let shelf = try context.fetch(FetchRequest<V4.Shelf>(predicate: #Predicate { $0.name == "first" }))[0]
      #expect(shelf.books.map(\.title) == ["b", "c"], "the join table's order, copied back into the key column's")
      let readers = try context.fetch(FetchRequest<V4.Reader>(sortBy: [SortDescriptor(\.name)]))
      #expect(readers.map { $0.books.map(\.title) } == [["c"], ["b"], ["a"]])
    }
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
  }
}
