import Foundation
import Testing
import TypedStore
import TypedStoreTesting

@Suite struct BatchedFetchTests {
  @Test func batchedResultsEqualAFetchInContentAndOrder() async throws {
    let people = try await PeopleStore(
      { index, person in
        person.name = "p\(index)"
        person.age = (index * 37) % 101
      }, count: 2_500)
    try await people.container.newBackgroundContext().perform { context in
      var request = FetchRequest<Person>(
        predicate: #Predicate { $0.age > 20 }, sortBy: [SortDescriptor(\.age, order: .reverse)])
      request.fetchOffset = 3
      request.fetchLimit = 1_900
      let whole = try context.fetch(request).map(\.name)
      let batched = try context.fetch(request, batchSize: 128)
      #expect(batched.count == whole.count)
      #expect(batched.map(\.name) == whole)
      #expect(batched[1_000].name == whole[1_000])
      #expect(batched.last?.name == whole.last)
      #expect(throws: FetchError.self) { try context.fetch(request, batchSize: 0) }
    }
  }

  @Test func unsavedInsertsAndDeletesCount() async throws {
    let people = try await PeopleStore({ index, person in person.name = "p\(index)" }, count: 50)
    try await people.container.newBackgroundContext().perform { context in
      let inserted = Person(context: context)
      inserted.name = "new"
      let gone = try #require(try context.fetch(FetchRequest<Person>()).first)
      context.delete(gone)
      let batched = try context.fetch(FetchRequest<Person>(), batchSize: 7)
      #expect(batched.count == 50)
      #expect(batched.contains { $0 === inserted })
      #expect(!batched.contains { $0 === gone })
    }
  }

  @Test func earlierBatchesAreLetGoAndLaterDeletionsAreMarked() async throws {
    let people = try await PeopleStore({ index, person in person.name = "p\(index)" }, count: 20_000)
    try await people.container.newBackgroundContext().perform { context in
      do {
        let batched = try context.fetch(FetchRequest<Person>(), batchSize: 1_000)
        weak let first = batched[0]
        var names = 0
        for person in batched { names += person.name.isEmpty ? 0 : 1 }
        #expect(names == 20_000)
        #expect(first == nil)  // nobody holds the first batch any more
      }

      // A row deleted after the collection was made reads as a deleted object.
      let later = try context.fetch(FetchRequest<Person>(), batchSize: 100)
      let last = try #require(try context.fetchObjectIDs(for: FetchRequest<Person>()).last)
      _ = try context.execute(BatchDeleteRequest<Person>(objectIDs: [last]))
      #expect(try context.fetch(FetchRequest<Person>(), batchSize: 100).count == 19_999)
      #expect(later.count == 20_000)
      let gone = later[19_999]  // its batch is read now, without that row
      #expect(gone.managedID == last)
      _ = gone.name
      #expect(gone.isDeleted)
    }
  }
}

@Suite struct FaultFetchTests {
  @Test func objectsComeBackAsFaultsOfTheirConcreteEntityAndLoadWhenTouched() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      for index in 0..<6 {
        let note = index % 2 == 0 ? Note(context: context) : Checklist(context: context)
        note.title = "t\(index)"
      }
      try context.save()
    }
    try await container.newBackgroundContext().perform { context in
      var request = FetchRequest<Note>(
        predicate: #Predicate { $0.title != "t0" }, sortBy: [SortDescriptor(\.title)])
      request.returnsObjectsAsFaults = true
      let faults = try context.fetch(request)
      #expect(faults.count == 5)
      #expect(faults.allSatisfy { $0.isFault })
      #expect(faults.filter { $0 is Checklist }.count == 3)
      #expect(faults.map(\.title) == ["t1", "t2", "t3", "t4", "t5"])  // read now
      #expect(faults.allSatisfy { !$0.isFault })
    }
  }
}
