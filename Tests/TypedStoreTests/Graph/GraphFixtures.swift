import Foundation
import TypedStore

// A model with every kind of relationship: one-to-many (Shelf.books ↔ Book.shelf, cascade),
// many-to-many (Book.tags ↔ Topic.books), ordered one-to-many three levels deep
// (Book.chapters → Chapter.pages, cascade), one-to-one with deny (Library.curator ↔
// Curator.library), and a subentity on a relationship typed to its parent (Novel: Book).

final class Shelf: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .cascade) var books: Set<Book>
  /// Computed: no attribute, though it reads one (predicates and sorts refuse it).
  var loudName: String { name.uppercased() }
}

class Book: ManagedObject {
  @Attribute var title: String = ""
  @Relationship(inverse: \Shelf.books, deleteRule: .nullify) var shelf: Shelf?
  @Relationship() var tags: Set<Topic>
  @Relationship(deleteRule: .cascade) var chapters: [Chapter]
  /// Computed through relationships: refused like any computed property.
  var shelfName: String? { shelf?.name }
  var tagCount: Int { tags.count }
}

final class Novel: Book {
  @Attribute var genre: String = ""
}

final class Topic: ManagedObject {
  @Attribute var label: String = ""
  @Relationship(inverse: \Book.tags) var books: Set<Book>
  var loudLabel: String { label.uppercased() }
}

final class Chapter: ManagedObject {
  @Attribute var number: Int = 0
  @Relationship(inverse: \Book.chapters, deleteRule: .nullify) var book: Book?
  @Relationship(deleteRule: .cascade) var pages: Set<Page>
}

final class Page: ManagedObject {
  @Attribute(preservedOnDeletion: true) var text: String = ""
  @Relationship(inverse: \Chapter.pages) var chapter: Chapter?
}

final class Library: ManagedObject {
  @Attribute var city: String = ""
  @Relationship(deleteRule: .deny) var curator: Curator?
}

final class Curator: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \Library.curator, required: true) var library: Library?
}

let graphModel: ManagedObjectModel = {
  do {
    return try ManagedObjectModel(
      Shelf.self, Book.self, Novel.self, Topic.self, Chapter.self, Page.self, Library.self, Curator.self)
  } catch {
    fatalError("graph model: \(error)")
  }
}()
