import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

// A catalogue whose e-books move from under `Book` to under `Media` (the same root, `Item`,
// so the same table): their rows keep their keys, lose `pages` and gain `format`.

enum CatalogueV1 {
  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  class Book: Item {
    override class var entityName: String { "Book" }
    @Attribute var pages: Int = 0
  }

  final class Ebook: Book {
    override class var entityName: String { "Ebook" }
    @Attribute var size: Int = 0
  }

  final class Media: Item {
    override class var entityName: String { "Media" }
    @Attribute var format: String = "cd"
    @Attribute var rating: Int? = 3
  }
}

enum CatalogueV2 {
  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  final class Book: Item {
    override class var entityName: String { "Book" }
    @Attribute var pages: Int = 0
  }

  class Media: Item {
    override class var entityName: String { "Media" }
    @Attribute var format: String = "cd"
    @Attribute var rating: Int? = 3
  }

  final class Ebook: Media {
    override class var entityName: String { "Ebook" }
    @Attribute var size: Int = 0
  }
}

/// Version 2 where `Media.format` has no constant default.
enum CatalogueNoDefault {
  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  final class Book: Item {
    override class var entityName: String { "Book" }
    @Attribute var pages: Int = 0
  }

  class Media: Item {
    override class var entityName: String { "Media" }
    @Attribute var format: String = "cd"
    @Attribute var serial: UUID = UUID()
  }

  final class Ebook: Media {
    override class var entityName: String { "Ebook" }
    @Attribute var size: Int = 0
  }
}

/// Version 1 where `Media` has a `serial` that differs per object.
enum CatalogueSerialV1 {
  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  class Book: Item {
    override class var entityName: String { "Book" }
    @Attribute var pages: Int = 0
  }

  final class Ebook: Book {
    override class var entityName: String { "Ebook" }
    @Attribute var size: Int = 0
  }

  final class Media: Item {
    override class var entityName: String { "Media" }
    @Attribute var format: String = "cd"
    @Attribute var serial: UUID = UUID()
  }
}

/// Versions 1 and 2 where books stand on shelves: an e-book leaving `Book` would leave its
/// shelf's links behind.
enum ShelvedCatalogueV1 {
  final class Shelf: ManagedObject {
    override class var entityName: String { "Shelf" }
    @Relationship(deleteRule: .nullify) var books: Set<Book>
  }

  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  class Book: Item {
    override class var entityName: String { "Book" }
    @Relationship(inverse: \Shelf.books) var shelf: Shelf?
  }

  final class Ebook: Book {
    override class var entityName: String { "Ebook" }
  }

  final class Media: Item {
    override class var entityName: String { "Media" }
  }
}

enum ShelvedCatalogueV2 {
  final class Shelf: ManagedObject {
    override class var entityName: String { "Shelf" }
    @Relationship(deleteRule: .nullify) var books: Set<Book>
  }

  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  final class Book: Item {
    override class var entityName: String { "Book" }
    @Relationship(inverse: \Shelf.books) var shelf: Shelf?
  }

  class Media: Item {
    override class var entityName: String { "Media" }
  }

  final class Ebook: Media {
    override class var entityName: String { "Ebook" }
  }
}

/// Version 2 where `Ebook` leaves the hierarchy: a root of its own, in a table of its own.
enum CatalogueOwnTable {
  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  final class Book: Item {
    override class var entityName: String { "Book" }
    @Attribute var pages: Int = 0
  }

  final class Media: Item {
    override class var entityName: String { "Media" }
    @Attribute var format: String = "cd"
  }

  final class Ebook: ManagedObject {
    override class var entityName: String { "Ebook" }
    @Attribute var name: String = ""
    @Attribute var size: Int = 0
  }
}

private func makeCatalogue(function: String = #function) throws -> URL {
  typealias V1 = CatalogueV1
  let container = try PersistentContainer.makeTest(
    model: ManagedObjectModel(V1.Item.self, V1.Book.self, V1.Ebook.self, V1.Media.self), function: function)
  try container.viewContext.performAndWait { context in
    let book = V1.Book(context: context)
    book.name = "paper"
    book.pages = 300
    let ebook = V1.Ebook(context: context)
    ebook.name = "digital"
    ebook.pages = 200
    ebook.size = 5
    let media = V1.Media(context: context)
    media.name = "album"
    media.format = "vinyl"
    try context.save()
  }
  return container.persistentStore.url
}

@Suite struct HierarchyMigrationTests {
  @Test func anEntityMovedWithinItsHierarchyKeepsItsRowsLosesWhatItLeftAndGainsDefaults() throws {
    let url = try makeCatalogue()
    typealias V2 = CatalogueV2
    let ids = try SQLiteConnection(path: url.path, mode: .readOnly).scalarText(
      "SELECT group_concat(pk) FROM (SELECT pk FROM Item ORDER BY pk)")
    let target = try ManagedObjectModel(V2.Item.self, V2.Book.self, V2.Media.self, V2.Ebook.self)
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: target)
    #expect(report.canMigrate, "\(report)")
    #expect(report.steps.flatMap(\.operations).contains { $0.kind == .moveEntity && $0.entity == "Ebook" })
    let container = try PersistentContainer(name: "Catalogue", model: target, storeURL: url)
    try container.viewContext.performAndWait { context in
      let ebooks = try context.fetch(FetchRequest<V2.Ebook>())
      #expect(
        ebooks.map { [$0.name, $0.format, String($0.size), String(describing: $0.rating)] } == [
          ["digital", "cd", "5", "Optional(3)"]
        ])
      let media = try context.fetch(FetchRequest<V2.Media>(sortBy: [SortDescriptor(\.name)])).map(\.name)
      #expect(media == ["album", "digital"], "an e-book is media now, and fetched as media")
      let books = try context.fetch(FetchRequest<V2.Book>()).map { "\($0.name) \($0.pages)" }
      #expect(books == ["paper 300"], "and no longer a book")
    }
    #expect(
      try SQLiteConnection(path: url.path, mode: .readOnly).scalarText(
        "SELECT group_concat(pk) FROM (SELECT pk FROM Item ORDER BY pk)") == ids)
    #expect(
      try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt(
        "SELECT count(*) FROM Item WHERE pages IS NOT NULL") == 1, "the e-book's pages are cleared")
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
  }

  @Test func aMoveUnderAnAncestorWhoseRequiredAttributeHasNoConstantDefaultIsRefused() throws {
    typealias V1 = CatalogueSerialV1
    typealias V2 = CatalogueNoDefault
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(V1.Item.self, V1.Book.self, V1.Ebook.self, V1.Media.self))
    try container.viewContext.performAndWait { context in
      V1.Ebook(context: context).name = "digital"
      V1.Media(context: context).name = "album"
      try context.save()
    }
    let url = container.persistentStore.url
    let before = try everything(url)
    #expect {
      try PersistentContainer(
        name: "Catalogue", model: ManagedObjectModel(V2.Item.self, V2.Book.self, V2.Media.self, V2.Ebook.self),
        storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable("Media", "serial", let change, .custom) = error else { return false }
      return change.contains("moved under Media")
    }
    #expect(try everything(url) == before)
  }

  @Test func aMoveToAnotherHierarchyIsRefused() throws {
    let url = try makeCatalogue()
    typealias V2 = CatalogueOwnTable
    let before = try everything(url)
    #expect {
      try PersistentContainer(
        name: "Catalogue", model: ManagedObjectModel(V2.Item.self, V2.Book.self, V2.Media.self, V2.Ebook.self),
        storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable("Ebook", nil, let change, .custom) = error else { return false }
      return change.contains("another hierarchy")
    }
    #expect(try everything(url) == before)
  }

  @Test func aMoveOutOfAnAncestorWithRelationshipsIsRefused() throws {
    typealias V1 = ShelvedCatalogueV1
    typealias V2 = ShelvedCatalogueV2
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(V1.Shelf.self, V1.Item.self, V1.Book.self, V1.Ebook.self, V1.Media.self))
    try container.viewContext.performAndWait { context in
      V1.Ebook(context: context).shelf = V1.Shelf(context: context)
      try context.save()
    }
    let url = container.persistentStore.url
    let before = try everything(url)
    #expect {
      try PersistentContainer(
        name: "Catalogue",
        model: ManagedObjectModel(V2.Shelf.self, V2.Item.self, V2.Book.self, V2.Media.self, V2.Ebook.self),
        storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable("Ebook", nil, let change, .custom) = error else { return false }
      return change.contains("moves out of Book")
    }
    #expect(try everything(url) == before)
  }
}
