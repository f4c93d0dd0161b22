import Foundation
import Testing
import TypedStore

@Suite struct BatchPredicateTests {
  func people(function: String = #function) async throws -> PeopleStore {
    try await PeopleStore(
      function: function,
      { index, person in
        person.name = "p\(index)"
        person.age = index
        person.nickname = index % 3 == 0 ? nil : "n\(index % 4)"
      }, count: 30)
  }

  @Test func batchUpdateChangesExactlyTheRowsThePredicateSelectsAndRecordsThem() async throws {
    let people = try await people()
    let predicate = #Predicate<Person> { $0.age >= 10 && $0.nickname != "n1" }
    let (_, expected) = try await people.compare(predicate)
    let start = try people.container.currentHistoryToken
    let count = try await people.container.newBackgroundContext().perform { context in
      var request = BatchUpdateRequest<Person>(predicate: predicate, propertiesToUpdate: [.set(\.active, true)])
      request.returnsObjectIDs = true
      return try context.execute(request).count
    }
    #expect(count == expected.count)
    let active = try await people.compare(#Predicate { $0.active }).sql
    #expect(active == expected)
    let history = try people.container.fetchHistory(HistoryRequest(after: start))
    #expect(history.count == 1)
    #expect(history.first?.changes.count == expected.count)
    #expect(
      history.first?.changes.allSatisfy { $0.changeType == .update && $0.updatedProperties == ["active"] } == true)
  }

  @Test func batchDeleteRemovesExactlyTheRowsThePredicateSelects() async throws {
    let people = try await people()
    let predicate = #Predicate<Person> { $0.nickname == nil || $0.age < 5 }
    let (_, doomed) = try await people.compare(predicate)
    let (_, all) = try await people.compare(#Predicate { _ in true })
    let deleted = try await people.container.newBackgroundContext().perform { context in
      try context.execute(BatchDeleteRequest<Person>(predicate: predicate)).count
    }
    #expect(deleted == doomed.count)
    let (_, left) = try await people.compare(#Predicate { _ in true })
    #expect(Set(left) == Set(all).subtracting(doomed))
    let last = try people.container.fetchHistory(HistoryRequest()).last
    #expect(last?.changes.filter { $0.changeType == .delete }.count == doomed.count)
  }

  @Test func anUntranslatablePredicateWritesNothing() async throws {
    let people = try await people()
    let before = try people.container.currentHistoryToken
    await #expect(throws: PredicateTranslationError.self) {
      try await people.container.newBackgroundContext().perform { context in
        _ = try context.execute(BatchDeleteRequest<Person>(predicate: #Predicate { $0.summary == "p1" }))
      }
    }
    #expect(try people.container.currentHistoryToken == before)
    #expect(try await people.compare(#Predicate { _ in true }).sql.count == 30)
  }
}
