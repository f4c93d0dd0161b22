import Foundation
import Spawning
import Testing
import TypedStoreTesting

@testable import TypedStore

// Classes for the model's refusals; each test builds a model of a few of them.
final class Orphan: ManagedObject {
  @Relationship() var friends: Set<Stranger>
}

final class Stranger: ManagedObject {
  @Attribute var name: String = ""
}

final class Left: ManagedObject {
  @Relationship(inverse: \Right.left) var right: Right?
  @Relationship() var others: Set<Right>
}

final class Right: ManagedObject {
  @Relationship(inverse: \Left.others) var left: Left?
}

@Suite struct RelationshipRulesTests {
  @Test func aRelationshipWithoutAnInverseIsRefusedNamingEntityAndProperty() {
    #expect(throws: ModelError.self) { try ManagedObjectModel(Orphan.self, Stranger.self) }
    do {
      _ = try ManagedObjectModel(Orphan.self, Stranger.self)
    } catch let error as ModelError {
      #expect(error.entity == "Orphan" && error.property == "friends")
      if case .invalidInverse = error.reason {} else { Issue.record("unexpected reason \(error.reason)") }
    } catch {
      Issue.record("unexpected error \(error)")
    }
  }

  /// Type-checks `lines` against the built TypedStore module; nil when this build's layout
  /// has no module folder to check against.
  private func typecheck(_ lines: [String], name: String) throws -> (status: Int32, output: String)? {
    let modules = builtProduct("typedstore").deletingLastPathComponent().appendingPathComponent("Modules")
    guard FileManager.default.fileExists(atPath: modules.path) else { return nil }  // another build layout
    let source = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).swift")
    try lines.joined(separator: "\n").write(to: source, atomically: true, encoding: .utf8)
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let process = POSIXProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
      "swiftc", "-typecheck", "-swift-version", "6", "-I", modules.path, "-Xcc",
      "-fmodule-map-file=\(packageRoot.path)/Sources/CSQLite/module.modulemap", source.path,
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
  }

  /// Type-checks a file that declares a relationship with `@Attribute` against the built
  /// TypedStore module: the compiler's error says to use `@Relationship`.
  @Test func declaringARelationshipWithAttributeSaysToUseRelationship() throws {
    guard
      let (status, text) = try typecheck(
        [
          "import TypedStore",
          "final class F: ManagedObject { @Attribute var name: String = \"\" }",
          "final class N: ManagedObject { @Attribute var folder: F? = nil }",
        ], name: "attribute-on-relationship")
    else { return }
    #expect(status != 0)
    #expect(text.contains("is a relationship: declare it with @Relationship"), "\(text)")
  }

  /// What docs/queries.md says of comparing objects in `#Predicate`: an object does not
  /// compile (it is not `Codable`), its `managedID` does.
  @Test func predicatesCompareIDsNotObjects() throws {
    func source(_ comparison: String) -> [String] {
      [
        "import Foundation", "import TypedStore",
        "final class F: ManagedObject { @Relationship(deleteRule: .nullify) var notes: Set<N> }",
        "final class N: ManagedObject { @Relationship(inverse: \\F.notes) var folder: F? }",
        "func make(_ f: F) -> Predicate<N> { \(comparison) }",
      ]
    }
    guard
      let (objectStatus, objectText) = try typecheck(
        source("let inbox = f; return #Predicate<N> { $0.folder == inbox }"), name: "predicate-object"),
      let (idStatus, idText) = try typecheck(
        source("let id = f.managedID; return #Predicate<N> { $0.folder?.managedID == id }"), name: "predicate-id")
    else { return }
    #expect(objectStatus != 0)
    #expect(objectText.contains("StandardPredicateExpression"), "\(objectText)")  // not Codable
    #expect(idStatus == 0, "\(idText)")
  }

  /// What docs/relationships.md says of naming the inverse on both sides, checked against this
  /// toolchain: the pair is a circular reference, while the same pair named on one side
  /// compiles. (Should a compiler accept the pair, this test fails: then both forms can be
  /// documented, and DesignExampleTests can use ../shared/DESIGN.md's model unchanged.)
  @Test func namingTheInverseOnBothSidesIsACircularReferenceAndOnOneSideCompiles() throws {
    func model(_ folderSide: String) -> [String] {
      [
        "import TypedStore",
        "final class Folder: ManagedObject {",
        "  @Attribute var name: String = \"\"",
        "  \(folderSide) var notes: Set<Note>",
        "}",
        "final class Note: ManagedObject {",
        "  @Attribute var title: String = \"\"",
        "  @Relationship(inverse: \\Folder.notes, deleteRule: .nullify) var folder: Folder?",
        "}",
      ]
    }
    guard
      let (bothStatus, bothText) = try typecheck(
        model("@Relationship(inverse: \\Note.folder, deleteRule: .cascade)"), name: "inverse-on-both-sides"),
      let (oneStatus, oneText) = try typecheck(
        model("@Relationship(deleteRule: .cascade)"), name: "inverse-on-one-side")
    else { return }
    #expect(bothStatus != 0)
    #expect(bothText.contains("circular reference"), "\(bothText)")
    #expect(oneStatus == 0, "\(oneText)")
  }

  @Test func aDestinationOutsideTheModelIsRefused() {
    do {
      _ = try ManagedObjectModel(Orphan.self)
      Issue.record("the model should have been refused")
    } catch let error as ModelError {
      #expect(error.reason == .destinationNotInModel("Stranger"))
    } catch {
      Issue.record("unexpected error \(error)")
    }
  }

  @Test func anInverseThatDoesNotPointBackIsRefused() {
    do {
      _ = try ManagedObjectModel(Left.self, Right.self)
      Issue.record("the model should have been refused")
    } catch let error as ModelError {
      if case .invalidInverse = error.reason {} else { Issue.record("unexpected reason \(error.reason)") }
    } catch {
      Issue.record("unexpected error \(error)")
    }
  }

  @Test func addingToOneShelfFromTwoContextsDoesNotConflict() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let shelfID = try await container.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      try context.save()
      return shelf.managedID
    }
    let first = container.newBackgroundContext()
    let second = container.newBackgroundContext()
    try await first.perform { context in
      let book = Book(context: context)
      book.shelf = try context.existingObject(with: shelfID)
    }
    try await second.perform { context in
      let book = Book(context: context)
      book.shelf = try context.existingObject(with: shelfID)
    }
    try await first.perform { try $0.save() }
    try await second.perform { try $0.save() }  // the default .error policy: no conflict
    let count = try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: shelfID).books.count
    }
    #expect(count == 2)
  }

  @Test func aDestinationWithAnAttributeNamedValueStillHasItsReferencesChecked() async throws {
    // The check once compared `pk = value` unqualified: with a destination column named
    // `value`, SQL read that column instead of the key looked for, and let a dangling key in.
    let model = try ManagedObjectModel(Gauge.self, Reading.self)
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let first = try PersistentContainer(name: "Gauges", model: model, storeURL: url)
    let second = try PersistentContainer(name: "Gauges", model: model, storeURL: url)
    let gone = try await first.newBackgroundContext().perform { context in
      let kept = Gauge(context: context)
      kept.value = 1  // its key is 1 too: a row whose key equals its value
      let gone = Gauge(context: context)
      try context.save()
      return gone.managedID
    }
    let stale = first.newBackgroundContext()
    try await stale.perform { context in _ = try context.existingObject(with: gone).value }
    try await second.newBackgroundContext().perform { context in
      context.delete(try context.existingObject(with: gone))
      try context.save()
    }
    let error = await stale.perform { context -> (any Error)? in
      do {
        Reading(context: context).gauge = try context.existingObject(with: gone)
        try context.save()
        return nil
      } catch {
        return error
      }
    }
    guard case StoreError.danglingReference(_, "gauge", let relatedID)? = error else {
      Issue.record("expected danglingReference, got \(String(describing: error))")
      return
    }
    #expect(relatedID == gone.untyped)
  }

  @Test func linkingToARowAnotherStoreConnectionDeletedThrowsDanglingReferenceAndWritesNothing() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let first = try PersistentContainer(name: "Graph", model: graphModel, storeURL: url)
    let second = try PersistentContainer(name: "Graph", model: graphModel, storeURL: url)
    let shelfID = try await first.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      try context.save()
      return shelf.managedID
    }
    let stale = first.newBackgroundContext()
    try await stale.perform { context in _ = try context.existingObject(with: shelfID).name }
    // The other connection deletes the shelf.
    try await second.newBackgroundContext().perform { context in
      context.delete(try context.existingObject(with: shelfID))
      try context.save()
    }
    let before = try first.persistentStore.fetchHistory(HistoryRequest()).count
    let error = await stale.perform { context -> (any Error)? in
      do {
        let book = Book(context: context)
        book.shelf = try context.existingObject(with: shelfID)
        try context.save()
        return nil
      } catch {
        return error
      }
    }
    guard case StoreError.danglingReference(let objectID, let relationship, let relatedID)? = error else {
      Issue.record("expected danglingReference, got \(String(describing: error))")
      return
    }
    #expect(objectID.entityName == "Book" && relationship == "shelf" && relatedID == shelfID.untyped)
    #expect(try first.persistentStore.fetchHistory(HistoryRequest()).count == before)
    let books = try await second.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Book>())
    }
    #expect(books == 0)
  }

  @Test func batchDeleteCascadesSetBased() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.newBackgroundContext().perform { context in
      for _ in 0..<3 {
        let shelf = Shelf(context: context)
        for _ in 0..<4 { Book(context: context).shelf = shelf }
      }
      _ = Book(context: context)
      try context.save()
      let result = try context.execute(BatchDeleteRequest<Shelf>())
      #expect(result.count == 3)
      #expect(try context.count(for: FetchRequest<Book>()) == 1)
    }
    let deletes = try container.persistentStore.fetchHistory(HistoryRequest()).last?.changes.filter {
      $0.changeType == .delete
    }
    #expect(deletes?.count == 15)
  }

  @Test func aDetachedObjectJoinsTheContextOfTheObjectItIsRelatedTo() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    try await container.newBackgroundContext().perform { context in
      let shelf = Shelf(context: context)
      let book = Book()
      book.title = "loose"
      shelf.$books.insert(book)
      #expect(book.isInserted)
      #expect(book.shelf === shelf)
      // Relationships set before insertion are linked when the object is inserted.
      let chapter = Chapter()
      let other = Book()
      other.chapters = [chapter]
      context.insert(other)
      #expect(chapter.book === other && chapter.isInserted)
      try context.save()
      #expect(try context.count(for: FetchRequest<Chapter>()) == 1)
    }
  }
}

final class Playlist: ManagedObject {
  @Attribute var name: String = ""
  @Relationship() var songs: [Song]  // ordered many-to-many: the order is in the join table
}

final class Song: ManagedObject {
  @Attribute var title: String = ""
  @Relationship(inverse: \Playlist.songs) var playlists: Set<Playlist>
}

extension RelationshipRulesTests {
  @Test func anOrderedManyToManyKeepsEachListsOrderAcrossSaveAndFetch() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let model = try ManagedObjectModel(Playlist.self, Song.self)
    let container = try PersistentContainer(name: "Music", model: model, storeURL: url)
    let (morningID, eveningID) = try await container.newBackgroundContext().perform { context in
      let songs = ["a", "b", "c", "d"].map { title in
        let song = Song(context: context)
        song.title = title
        return song
      }
      let morning = Playlist(context: context)
      morning.songs = [songs[2], songs[0], songs[3]]
      let evening = Playlist(context: context)
      evening.songs = [songs[3], songs[2]]
      #expect(songs[3].playlists == [morning, evening])
      try context.save()
      morning.$songs.insert(songs[1], at: 0)  // b, c, a, d
      morning.$songs.remove(songs[0])  // b, c, d
      try context.save()
      return (morning.managedID, evening.managedID)
    }
    let other = try PersistentContainer(name: "Music", model: model, storeURL: url)
    try await other.newBackgroundContext().perform { context in
      #expect(try context.existingObject(with: morningID).songs.map(\.title) == ["b", "c", "d"])
      #expect(try context.existingObject(with: eveningID).songs.map(\.title) == ["d", "c"])
      let a = try context.fetch(FetchRequest<Song>(predicate: #Predicate { $0.title == "a" }))
      #expect(a.first?.playlists.isEmpty == true)
    }
  }
}

final class Gauge: ManagedObject {
  @Attribute var value: Int = 0
  @Relationship(deleteRule: .nullify) var readings: Set<Reading>
}

final class Reading: ManagedObject {
  @Relationship(inverse: \Gauge.readings) var gauge: Gauge?
}
