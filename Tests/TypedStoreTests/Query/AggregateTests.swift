import Foundation
import Testing
import TypedStore

@Suite struct AggregateTests {
  func people(function: String = #function) async throws -> PeopleStore {
    try await PeopleStore(
      function: function,
      { index, person in
        person.name = ["b", "café", "a", "cafe\u{301}z", "Z"][index % 5] + "\(index)"
        person.age = index * 3 % 17
        person.score = Double(index) / 2
        person.height = index % 3 == 0 ? nil : Float(index)
        person.birthday = index % 4 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(index * 1000))
        person.status = [Status.draft, .published, .archived][index % 3]
        person.nickname = index % 2 == 0 ? nil : "n\(index % 3)"
      }, count: 40)
  }

  @Test func aggregatesEqualSwiftsOverTheSameObjects() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let request = FetchRequest<Person>(predicate: #Predicate { $0.age > 4 })
      let objects = try context.fetch(request)
      #expect(try context.aggregate(.count, for: request) == objects.count)
      #expect(try context.aggregate(.sum(\.age), for: request) == objects.reduce(0) { $0 + $1.age })
      #expect(try context.aggregate(.sum(\.score), for: request) == objects.reduce(0) { $0 + $1.score })
      #expect(try context.aggregate(.min(\.age), for: request) == objects.map(\.age).min())
      #expect(try context.aggregate(.max(\.birthday), for: request) == objects.compactMap(\.birthday).max())
      #expect(try context.aggregate(.min(\.name), for: request) == objects.map(\.name).min())  // Swift's order
      #expect(try context.aggregate(.max(\.name), for: request) == objects.map(\.name).max())
      let average = try #require(try context.aggregate(.average(\.age), for: request))
      #expect(abs(average - Double(objects.reduce(0) { $0 + $1.age }) / Double(objects.count)) < 1e-9)
      #expect(try context.aggregate(.sum(\.height), for: request) == objects.compactMap(\.height).reduce(0, +))
      #expect(try context.aggregate(.min(\.height), for: request) == objects.compactMap(\.height).min())
    }
  }

  @Test func groupedAggregatesAreDictionariesByTheAttributesValues() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let objects = try context.fetch(FetchRequest<Person>())
      let counts = try context.aggregate(.count, for: FetchRequest<Person>(), groupedBy: \.status)
      #expect(counts == Dictionary(grouping: objects, by: \.status).mapValues(\.count))
      let ages = try context.aggregate(.max(\.age), for: FetchRequest<Person>(), groupedBy: \.nickname)
      #expect(ages == Dictionary(grouping: objects, by: \.nickname).mapValues { $0.map(\.age).max() })
    }
  }

  @Test func emptyResultsLimitsAndRefusals() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let none = FetchRequest<Person>(predicate: #Predicate { $0.age > 1000 })
      #expect(try context.aggregate(.count, for: none) == 0)
      #expect(try context.aggregate(.sum(\.age), for: none) == 0)
      #expect(try context.aggregate(.min(\.age), for: none) == nil)
      #expect(try context.aggregate(.average(\.score), for: none) == nil)
      var limited = FetchRequest<Person>(sortBy: [SortDescriptor(\.age, order: .reverse)])
      limited.fetchLimit = 5
      let top = try context.fetch(limited)
      #expect(try context.aggregate(.sum(\.age), for: limited) == top.reduce(0) { $0 + $1.age })
      #expect(throws: FetchError.self) { try context.aggregate(.max(\.amount), for: FetchRequest<Person>()) }
      #expect(throws: FetchError.self) { try context.aggregate(.max(\.token), for: FetchRequest<Person>()) }
    }
  }
}
