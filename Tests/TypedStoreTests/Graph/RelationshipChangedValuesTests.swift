import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Committed and changed values of relationships, each kind of side (issue 25, item 3): a
/// to-one that holds its key, the to-many inverse of it, both sides of a many-to-many and an
/// ordered to-many, changed in a context that had not loaded them.
@Suite struct RelationshipChangedValuesTests {
  private func names(_ value: Any?) -> [String] {
    switch value {
    case let shelf as Shelf?: shelf.map { [$0.name] } ?? []
    case let topics as Set<Topic>: topics.map(\.label).sorted()
    case let books as Set<Book>: books.map(\.title).sorted()
    case let chapters as [Chapter]: chapters.map { "\($0.number)" }
    default: ["unexpected \(String(describing: value))"]
    }
  }

  @Test func committedValuesAreTheSavedRelatedObjectsWhileAChangeIsPending() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.performBackgroundTask { context in
      let first = Shelf(context: context)
      first.name = "A"
      Shelf(context: context).name = "B"
      let book = Book(context: context)
      book.title = "Dune"
      book.shelf = first
      let tag = Topic(context: context)
      tag.label = "t1"
      Topic(context: context).label = "t2"
      book.tags = [tag]
      let one = Chapter(context: context)
      one.number = 1
      let two = Chapter(context: context)
      two.number = 2
      book.chapters = [one, two]
      #expect(Set(book.changedValues().keys) == ["title", "shelf", "tags", "chapters"], "all of a new object")
      #expect(book.committedValues().isEmpty)
      try context.save()
    }
    try await container.performBackgroundTask { context in
      let book = try #require(try Book.first(in: context))
      let shelves = try Shelf.fetch(in: context, sortBy: [SortDescriptor(\.name)])
      let topics = try Topic.fetch(in: context, sortBy: [SortDescriptor(\.label)])
      #expect(book.changedValues().isEmpty)
      book.shelf = shelves[1]
      book.tags.insert(topics[1])
      book.chapters = book.chapters.reversed()

      #expect(names(book.committedValue(for: \Book.shelf) as Any?) == ["A"])
      #expect(names(book.committedValue(for: \Book.tags)) == ["t1"])
      #expect(names(book.committedValue(for: \Book.chapters)) == ["1", "2"])
      let committed = book.committedValues(forKeys: ["shelf", "tags", "title"])
      #expect(names(committed["shelf"]) == ["A"] && names(committed["tags"]) == ["t1"])
      #expect(committed["title"] as? String == "Dune" && committed.count == 3)

      let changed = book.changedValues()
      #expect(Set(changed.keys) == ["shelf", "tags", "chapters"])
      #expect(names(changed["shelf"]) == ["B"] && names(changed["tags"]) == ["t1", "t2"])
      #expect(names(changed["chapters"]) == ["2", "1"])

      // The inverse sides changed too, though this context had not loaded them.
      #expect(names(shelves[0].committedValue(for: \Shelf.books)) == ["Dune"])
      #expect(names(shelves[0].changedValues()["books"]).isEmpty)
      #expect(names(shelves[1].committedValue(for: \Shelf.books)).isEmpty)
      #expect(names(topics[1].committedValue(for: \Topic.books)).isEmpty)
      #expect(names(topics[1].changedValues()["books"]) == ["Dune"])
      #expect(names(topics[0].committedValue(for: \Topic.books)) == ["Dune"], "unchanged: its current value")
      #expect(topics[0].changedValues().isEmpty)

      try context.save()
      #expect(names(book.committedValue(for: \Book.shelf) as Any?) == ["B"])
      #expect(names(book.committedValue(for: \Book.tags)) == ["t1", "t2"])
      #expect(names(book.committedValue(for: \Book.chapters)) == ["2", "1"])
      #expect(book.changedValues().isEmpty && shelves[0].changedValues().isEmpty)
    }
  }
}
