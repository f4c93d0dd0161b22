import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Two writers that change one object's to-many side from stale copies: each save writes what
/// its context changed, and keeps what the other writer added or removed; a refresh (or
/// merge) shows the store's side with the unsaved changes on top.
@Suite struct ConcurrentLinkTests {
  /// Two containers on one new file, named after the test: two writers, each with its own
  /// connections.
  static func twoWriters(_ model: ManagedObjectModel, function: String = #function) throws -> (
    PersistentContainer, PersistentContainer
  ) {
    let url = PersistentContainer.testStoreURL(function: function)
    try PersistentContainer.destroyPersistentStore(at: url)
    return (
      try PersistentContainer(name: "Links", model: model, storeURL: url),
      try PersistentContainer(name: "Links", model: model, storeURL: url)
    )
  }

  @Test func aStaleManyToManyEditKeepsTheLinksAnotherWriterSaved() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let bookID = try await first.performBackgroundTask { context in
      let book = Book(context: context)
      book.title = "Dune"
      for label in ["old", "dropped", "new-a", "new-b"] {
        let topic = Topic(context: context)
        topic.label = label
      }
      let old = try context.fetch(FetchRequest<Topic>(predicate: #Predicate { $0.label == "old" }))
      let dropped = try context.fetch(FetchRequest<Topic>(predicate: #Predicate { $0.label == "dropped" }))
      book.tags = Set(old + dropped)
      try context.save()
      return book.managedID
    }
    let stale = first.newBackgroundContext()
    // The stale context loads the book's tags: old and dropped.
    try stale.performAndWait { context in
      let book = try context.existingObject(with: bookID)
      #expect(Set(book.tags.map(\.label)) == ["old", "dropped"])
    }
    // Another writer adds new-a and removes dropped.
    try await second.performBackgroundTask { context in
      let book = try context.existingObject(with: bookID)
      let topics = try context.fetch(FetchRequest<Topic>())
      book.$tags.insert(try #require(topics.first { $0.label == "new-a" }))
      book.$tags.remove(try #require(topics.first { $0.label == "dropped" }))
      try context.save()
    }
    // The stale context adds new-b, from its copy that still has dropped and lacks new-a.
    try stale.performAndWait { context in
      let book = try context.existingObject(with: bookID)
      let topics = try context.fetch(FetchRequest<Topic>(predicate: #Predicate { $0.label == "new-b" }))
      book.$tags.insert(try #require(topics.first))
      try context.save()
    }
    try await second.newBackgroundContext().perform { context in
      let book = try context.existingObject(with: bookID)
      #expect(Set(book.tags.map(\.label)) == ["old", "new-a", "new-b"])
    }
  }

  @Test func aWholeAssignmentFromAStaleCopyChangesOnlyWhatItChanges() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let bookID = try await first.performBackgroundTask { context in
      let book = Book(context: context)
      for label in ["kept", "unset", "other"] {
        let topic = Topic(context: context)
        topic.label = label
        if label != "other" { book.$tags.insert(topic) }
      }
      try context.save()
      return book.managedID
    }
    let stale = first.newBackgroundContext()
    let read = try stale.performAndWait { context in
      Set(try context.existingObject(with: bookID).tags.map(\.label))
    }
    #expect(read == ["kept", "unset"])
    try await second.performBackgroundTask { context in
      let book = try context.existingObject(with: bookID)
      let other = try #require(
        try context.fetch(FetchRequest<Topic>(predicate: #Predicate { $0.label == "other" })).first)
      book.$tags.insert(other)
      try context.save()
    }
    // The stale copy assigns the set it wants: it drops "unset", and never saw "other".
    try stale.performAndWait { context in
      let book = try context.existingObject(with: bookID)
      book.tags = book.tags.filter { $0.label == "kept" }
      try context.save()
    }
    let saved = try await second.newBackgroundContext().perform { context in
      Set(try context.existingObject(with: bookID).tags.map(\.label))
    }
    #expect(saved == ["kept", "other"])
  }

  /// The ordered many-to-many of `RelationshipRulesTests` (`Playlist.songs`).
  @Test func anOrderedManyToManyKeepsBothWritersLinksInTheStaleWritersOrderFirst() async throws {
    let (first, second) = try Self.twoWriters(try ManagedObjectModel(Playlist.self, Song.self))
    let playlistID = try await first.performBackgroundTask { context in
      let playlist = Playlist(context: context)
      for title in ["a", "b", "c", "d"] {
        let song = Song(context: context)
        song.title = title
        if title <= "b" { playlist.songs.append(song) }
      }
      try context.save()
      return playlist.managedID
    }
    func titles(_ container: PersistentContainer) async throws -> [String] {
      try await container.newBackgroundContext().perform { context in
        try context.existingObject(with: playlistID).songs.map(\.title)
      }
    }
    #expect(try await titles(second) == ["a", "b"])
    let stale = first.newBackgroundContext()
    let read = try stale.performAndWait { context in
      try context.existingObject(with: playlistID).songs.map(\.title)
    }
    #expect(read == ["a", "b"])
    // Another writer puts c first and removes a.
    try await second.performBackgroundTask { context in
      let playlist = try context.existingObject(with: playlistID)
      let songs = try context.fetch(FetchRequest<Song>())
      playlist.$songs.insert(try #require(songs.first { $0.title == "c" }), at: 0)
      playlist.$songs.remove(try #require(songs.first { $0.title == "a" }))
      try context.save()
    }
    #expect(try await titles(second) == ["c", "b"])
    // The stale copy ([a, b]) puts d first: the order is its list, less a (which the other
    // writer removed), then c, which it never saw.
    try stale.performAndWait { context in
      let playlist = try context.existingObject(with: playlistID)
      let d = try #require(try context.fetch(FetchRequest<Song>(predicate: #Predicate { $0.title == "d" })).first)
      playlist.$songs.insert(d, at: 0)
      try context.save()
    }
    #expect(try await titles(second) == ["d", "b", "c"])
    try await second.newBackgroundContext().perform { context in
      let c = try #require(try context.fetch(FetchRequest<Song>(predicate: #Predicate { $0.title == "c" })).first)
      #expect(c.playlists.map(\.managedID) == [playlistID])
    }
  }

  /// `refresh(_:mergeChanges: true)` (what merging another writer's transaction does) shows
  /// the store's links with the context's unsaved additions and removals on top, and the save
  /// still writes only those.
  @Test func aRefreshKeepsTheUnsavedLinkChangesOnTopOfTheStoresLinks() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let bookID = try await first.performBackgroundTask { context in
      let book = Book(context: context)
      for label in ["kept", "unset", "theirs", "dropped-by-them"] {
        let topic = Topic(context: context)
        topic.label = label
        if label == "kept" || label == "unset" || label == "dropped-by-them" { book.$tags.insert(topic) }
      }
      try context.save()
      return book.managedID
    }
    let stale = first.newBackgroundContext()
    // Unsaved: "unset" removed, a new topic "mine" added. The topics' sides are loaded too.
    try stale.performAndWait { context in
      for topic in try context.fetch(FetchRequest<Topic>()) { _ = topic.books.count }
      let book = try context.existingObject(with: bookID)
      book.$tags.remove(try #require(book.tags.first { $0.label == "unset" }))
      let mine = Topic(context: context)
      mine.label = "mine"
      book.$tags.insert(mine)
    }
    try await second.performBackgroundTask { context in
      let book = try context.existingObject(with: bookID)
      let topics = try context.fetch(FetchRequest<Topic>())
      book.$tags.insert(try #require(topics.first { $0.label == "theirs" }))
      book.$tags.remove(try #require(topics.first { $0.label == "dropped-by-them" }))
      try context.save()
    }
    let refreshed = try stale.performAndWait { context in
      let book = try context.existingObject(with: bookID)
      context.refresh(book, mergeChanges: true)
      #expect(book.hasChanges)
      // The topics another writer linked and unlinked agree with the book.
      for topic in try context.fetch(FetchRequest<Topic>()) {
        #expect(topic.books.contains { $0 === book } == book.tags.contains { $0 === topic }, "\(topic.label)")
      }
      let labels = Set(book.tags.map(\.label))
      try context.save()
      return labels
    }
    #expect(refreshed == ["kept", "mine", "theirs"])
    let saved = try await second.newBackgroundContext().perform { context in
      Set(try context.existingObject(with: bookID).tags.map(\.label))
    }
    #expect(saved == ["kept", "mine", "theirs"])
  }

  /// An ordered one-to-many (`Book.chapters`, positions in the chapters' rows): a stale
  /// reorder does not change the place of a chapter another writer moved to another book, and
  /// a chapter it never saw comes after its list.
  @Test func aStaleReorderLeavesAChapterMovedElsewhereWhereItWent() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let (oneID, twoID) = try await first.performBackgroundTask { context in
      let one = Book(context: context)
      let two = Book(context: context)
      for number in 1...4 {
        let chapter = Chapter(context: context)
        chapter.number = number
        if number <= 2 { one.chapters.append(chapter) }
        if number == 3 { two.chapters.append(chapter) }
      }
      try context.save()
      return (one.managedID, two.managedID)
    }
    func numbers(_ id: ManagedID<Book>) async throws -> [Int] {
      try await second.newBackgroundContext().perform { context in
        try context.existingObject(with: id).chapters.map(\.number)
      }
    }
    let stale = first.newBackgroundContext()
    let read = try stale.performAndWait { context in try context.existingObject(with: oneID).chapters.map(\.number) }
    #expect(read == [1, 2])
    // Another writer moves chapter 2 to the end of book two, and gives book one chapter 4.
    try await second.performBackgroundTask { context in
      let one = try context.existingObject(with: oneID)
      let two = try context.existingObject(with: twoID)
      let chapters = try context.fetch(FetchRequest<Chapter>())
      two.$chapters.append(try #require(chapters.first { $0.number == 2 }))
      one.$chapters.append(try #require(chapters.first { $0.number == 4 }))
      try context.save()
    }
    #expect(try await numbers(oneID) == [1, 4])
    #expect(try await numbers(twoID) == [3, 2])
    // The stale copy reverses book one's chapters: [2, 1].
    try stale.performAndWait { context in
      let one = try context.existingObject(with: oneID)
      one.chapters = one.chapters.reversed()
      try context.save()
    }
    #expect(try await numbers(oneID) == [1, 4])
    #expect(try await numbers(twoID) == [3, 2])
  }

  /// A one-to-many (`Shelf.books`, keys in the books' rows) with unsaved moves merges another
  /// writer's moves: the store's books with the context's moves on top.
  @Test func mergingKeepsUnsavedMovesOnTopOfAnotherWritersMoves() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let (shelfID, otherID) = try await first.performBackgroundTask { context in
      let shelf = Shelf(context: context)
      let other = Shelf(context: context)
      for title in ["stays", "theirs-out", "mine-out", "mine-in", "theirs-in"] {
        let book = Book(context: context)
        book.title = title
        book.shelf = title.hasSuffix("-in") ? other : shelf
      }
      try context.save()
      return (shelf.managedID, other.managedID)
    }
    let stale = first.newBackgroundContext()
    // Unsaved: "mine-out" goes to the other shelf, "mine-in" and a new book come in.
    try stale.performAndWait { context in
      let shelf = try context.existingObject(with: shelfID)
      let other = try context.existingObject(with: otherID)
      try #require(shelf.books.first { $0.title == "mine-out" }).shelf = other
      try #require(other.books.first { $0.title == "mine-in" }).shelf = shelf
      let new = Book(context: context)
      new.title = "mine-new"
      shelf.$books.insert(new)
    }
    try await second.performBackgroundTask { context in
      let shelf = try context.existingObject(with: shelfID)
      let other = try context.existingObject(with: otherID)
      try #require(shelf.books.first { $0.title == "theirs-out" }).shelf = other
      try #require(other.books.first { $0.title == "theirs-in" }).shelf = shelf
      try context.save()
    }
    // Merging the other writer's transaction refreshes the shelf (mergeChanges: true).
    let transaction = try #require(try second.fetchHistory(HistoryRequest()).last)
    let refreshed = try stale.performAndWait { context in
      let shelf = try context.existingObject(with: shelfID)
      _ = context.mergeChanges(StoreChanges(transaction))
      let titles = Set(shelf.books.map(\.title))
      try context.save()
      return titles
    }
    let expected: Set = ["stays", "mine-in", "mine-new", "theirs-in"]
    #expect(refreshed == expected)
    let saved = try await second.newBackgroundContext().perform { context in
      Set(try context.existingObject(with: shelfID).books.map(\.title))
    }
    #expect(saved == expected)
  }

  /// A delete rule judged on a stale copy: the context saw no curator, another writer gave the
  /// library one; the store's own check denies the delete, and nothing changes.
  @Test func aDenyRuleHoldsAgainstALinkTheDeletingContextNeverSaw() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let libraryID = try await first.performBackgroundTask { context in
      let library = Library(context: context)
      library.city = "Lyon"
      try context.save()
      return library.managedID
    }
    let stale = first.newBackgroundContext()
    let sawCurator = try stale.performAndWait { context in
      try context.existingObject(with: libraryID).curator != nil
    }
    #expect(!sawCurator)
    try await second.performBackgroundTask { context in
      let curator = Curator(context: context)
      curator.name = "Ada"
      curator.library = try context.existingObject(with: libraryID)
      try context.save()
    }
    let history = try first.fetchHistory(HistoryRequest()).count
    try stale.performAndWait { context in
      context.delete(try context.existingObject(with: libraryID))
      #expect {
        try context.save()
      } throws: { error in
        guard case StoreError.deleteDenied(let denials) = error else { return false }
        return denials.first?.objectID == libraryID.untyped && denials.first?.relationship == "curator"
      }
    }
    let (libraries, curators) = try await second.newBackgroundContext().perform { context in
      (try context.count(for: FetchRequest<Library>()), try context.count(for: FetchRequest<Curator>()))
    }
    #expect(libraries == 1 && curators == 1)
    #expect(try first.fetchHistory(HistoryRequest()).count == history)
  }

  /// The side of a many-to-many that does not write the join table (`Topic.books`) refreshes
  /// the same way: the store's links, with the context's unsaved changes on top.
  @Test func theOtherSideOfAManyToManyRefreshesTheSameWay() async throws {
    let (first, second) = try Self.twoWriters(graphModel)
    let topicID = try await first.performBackgroundTask { context in
      let topic = Topic(context: context)
      topic.label = "shared"
      for title in ["b1", "b2", "b3"] {
        let book = Book(context: context)
        book.title = title
        if title != "b3" { topic.$books.insert(book) }
      }
      try context.save()
      return topic.managedID
    }
    let stale = first.newBackgroundContext()
    // Unsaved: b2 removed, a new b4 added.
    try stale.performAndWait { context in
      let topic = try context.existingObject(with: topicID)
      topic.$books.remove(try #require(topic.books.first { $0.title == "b2" }))
      let b4 = Book(context: context)
      b4.title = "b4"
      topic.$books.insert(b4)
    }
    // Another writer links b3 and unlinks b1, from the books' side.
    try await second.performBackgroundTask { context in
      let topic = try context.existingObject(with: topicID)
      let books = try context.fetch(FetchRequest<Book>())
      try #require(books.first { $0.title == "b3" }).$tags.insert(topic)
      try #require(books.first { $0.title == "b1" }).$tags.remove(topic)
      try context.save()
    }
    let refreshed = try stale.performAndWait { context in
      let topic = try context.existingObject(with: topicID)
      context.refresh(topic, mergeChanges: true)
      let titles = Set(topic.books.map(\.title))
      try context.save()
      return titles
    }
    #expect(refreshed == ["b3", "b4"])
    let saved = try await second.newBackgroundContext().perform { context in
      Set(try context.existingObject(with: topicID).books.map(\.title))
    }
    #expect(saved == ["b3", "b4"])
  }
}
