import Foundation
import Testing
import TypedStore
import TypedStoreTesting

final class Person: ManagedObject {
  @Attribute var name: String = ""
  @Attribute var nickname: String? = nil
  @Attribute var age: Int = 0
  @Attribute var score: Double = 0
  @Attribute var height: Float? = nil
  @Attribute var birthday: Date? = nil
  @Attribute var active: Bool = false
  @Attribute var flag: Bool? = nil
  @Attribute var token: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
  @Attribute var avatar: Data? = nil
  @Attribute var status: Status = .draft
  @Attribute var priority: Priority? = nil
  @Attribute var amount: Decimal = 0

  var summary: String { "\(name) (\(age))" }
}

let peopleModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Person.self) } catch { fatalError("fixture model: \(error)") }
}()

/// A store of people with the values given, and the fetch of a predicate against Swift's own
/// evaluation of it on the same objects.
struct PeopleStore {
  let container: PersistentContainer

  init(
    variant: String = "", function: String = #function, _ fill: @escaping @Sendable (Int, Person) -> Void, count: Int
  )
    async throws
  {
    container = try PersistentContainer.makeTest(model: peopleModel, variant: variant, function: function)
    try await container.performBackgroundTask { context in
      for index in 0..<count { fill(index, Person(context: context)) }
      try context.save()
    }
  }

  /// The names SQL selects and the names Swift's evaluation selects, each sorted.
  func compare(_ predicate: Predicate<Person>) async throws -> (sql: [String], swift: [String]) {
    try await container.newBackgroundContext().perform { context in
      let all = try context.fetch(FetchRequest<Person>())
      let swift = try all.filter { try predicate.evaluate($0) }.map(\.name).sorted()
      let sql = try context.fetch(FetchRequest(predicate: predicate)).map(\.name).sorted()
      return (sql, swift)
    }
  }
}

@Suite struct PredicateTranslationTests {
  static let names = ["ann", "Bob", "café", "cafe\u{301}", "", "a\r\nb", "zoë", "Ünïcode", "B", "bob"]

  func store(function: String = #function) async throws -> PeopleStore {
    try await PeopleStore(
      function: function,
      { index, person in
        person.name = Self.names[index % Self.names.count] + (index < Self.names.count ? "" : "\(index)")
        person.nickname = index % 3 == 0 ? nil : ["B", "b", "", "x"][index % 4]
        person.age = index * 7 % 50 - 10
        person.score = Double(index) / 4 - 2
        person.height = index % 4 == 0 ? nil : Float(index) * 0.5
        person.birthday = index % 5 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(index) * 86_400)
        person.active = index % 2 == 0
        person.flag = index % 3 == 0 ? nil : index % 3 == 1
        person.token = UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", index % 4))!
        person.status = [Status.draft, .published, .archived][index % 3]
        person.priority = index % 4 == 0 ? nil : (index % 2 == 0 ? .high : .low)
      }, count: 40)
  }

  @Test func comparisonsAndLogicMatchSwift() async throws {
    let people = try await store()
    let day = Date(timeIntervalSinceReferenceDate: 10 * 86_400)
    let predicates: [Predicate<Person>] = [
      #Predicate { $0.age > 5 },
      #Predicate { $0.age >= 5 && $0.score < 1.5 },
      #Predicate { $0.age == 4 || !$0.active },
      #Predicate { $0.active },
      #Predicate { !($0.age <= 0) },
      #Predicate { $0.age + 3 > $0.age * 2 - 5 },
      #Predicate { $0.score * 2 >= $0.score + 1 },
      #Predicate { ($0.height ?? 0) > 4 },
      #Predicate { ($0.birthday ?? day) <= day },
      #Predicate { $0.birthday.flatMap { $0 > day } ?? false },
      #Predicate { $0.active ? $0.age > 10 : $0.age < 0 },
    ]
    for predicate in predicates {
      let (sql, swift) = try await people.compare(predicate)
      #expect(sql == swift, "\(predicate)")
      #expect(!swift.isEmpty)
    }
  }

  @Test func nilFollowsSwiftNotSQL() async throws {
    let people = try await store()
    let high = Priority.high
    let predicates: [Predicate<Person>] = [
      #Predicate { $0.nickname != "B" },  // includes nil nicknames, as Swift does
      #Predicate { $0.nickname == "B" },
      #Predicate { $0.nickname == nil },
      #Predicate { $0.nickname != nil },
      #Predicate { $0.flag == true },
      #Predicate { $0.flag != true },
      #Predicate { $0.height == nil || $0.height == 1.5 },
      #Predicate { ($0.nickname ?? "none") == "none" },
      #Predicate { $0.priority == nil },
      #Predicate { $0.priority != high },
    ]
    for predicate in predicates {
      let (sql, swift) = try await people.compare(predicate)
      #expect(sql == swift, "\(predicate)")
    }
  }

  @Test func stringsCompareAsSwiftCompares() async throws {
    let people = try await store()
    let predicates: [Predicate<Person>] = [
      #Predicate { $0.name == "café" },  // also "cafe" + U+0301: canonically equivalent
      #Predicate { $0.name < "b" },
      #Predicate { $0.name >= "café" },
      #Predicate { $0.name.contains("é") },
      #Predicate { $0.name.contains("e") },  // not in "café": é is one character
      #Predicate { $0.name.contains("\r") },  // not in "a\r\nb": "\r\n" is one character
      #Predicate { $0.name.contains("") },
      #Predicate { $0.name.starts(with: "caf") },
      #Predicate { $0.name.starts(with: "B") },
      #Predicate { $0.name == "" },
      #Predicate { ($0.nickname ?? "").contains("b") },
    ]
    for predicate in predicates {
      let (sql, swift) = try await people.compare(predicate)
      #expect(sql == swift, "\(predicate)")
    }
    let (equivalent, _) = try await people.compare(#Predicate { $0.name == "café" })
    #expect(equivalent.count == 2)
  }

  @Test func collectionsEnumsDatesUUIDsAndData() async throws {
    let people = try await store()
    let ages = [4, 11, -10, 99]
    let nicknames: [String?] = [nil, "x"]
    let token = UUID(uuidString: "00000000-0000-0000-0000-000000000002")!
    let (published, archived, low) = (Status.published, Status.archived, Priority.low)
    let predicates: [Predicate<Person>] = [
      #Predicate { ages.contains($0.age) },
      #Predicate { nicknames.contains($0.nickname) },
      #Predicate { $0.status == published },
      #Predicate { $0.status != archived && $0.priority == low },
      #Predicate { $0.token == token },
      #Predicate { $0.avatar == nil },
    ]
    for predicate in predicates {
      let (sql, swift) = try await people.compare(predicate)
      #expect(sql == swift, "\(predicate)")
    }
  }

  @Test func whatCannotBeTranslatedThrowsBeforeTheStoreIsRead() async throws {
    let people = try await store()
    let random = UUID()
    let cases: [(Predicate<Person>, PredicateTranslationError)] = [
      (#Predicate { $0.summary == "x" }, .unknownKeyPath("")),
      (#Predicate { $0.token < random }, .unsupportedValue(type: "", operation: "")),
      (#Predicate { $0.nickname! == "x" }, .unsupportedExpression("")),
      (#Predicate { $0.age / 2 > 1 }, .unsupportedExpression("")),
      (#Predicate { $0.age % 2 == 0 }, .unsupportedExpression("")),
    ]
    for (predicate, expected) in cases {
      do {
        _ = try await people.container.newBackgroundContext().perform { context in
          try context.fetch(FetchRequest(predicate: predicate)).count
        }
        Issue.record("\(predicate) was translated")
      } catch let error as PredicateTranslationError {
        switch (error, expected) {
        case (.unknownKeyPath, .unknownKeyPath), (.unsupportedValue, .unsupportedValue),
          (.unsupportedExpression, .unsupportedExpression):
          break
        default: Issue.record("\(error) is not like \(expected)")
        }
        #expect(!error.description.isEmpty)
      }
    }
  }

  @Test func setPredicateKeepsThePreviousOneWhenTranslationFails() throws {
    var request = FetchRequest<Person>()
    try request.setPredicate(#Predicate { $0.age > 3 })
    #expect(throws: PredicateTranslationError.self) { try request.setPredicate(#Predicate { $0.summary == "x" }) }
    let kept = try #require(request.predicate)
    let person = Person()
    person.age = 4
    let selected = try kept.evaluate(person)
    #expect(selected)
  }

  @Test func countAndObjectIDsUseThePredicate() async throws {
    let people = try await store()
    let predicate = #Predicate<Person> { $0.age > 5 && $0.nickname != nil }
    let (_, swift) = try await people.compare(predicate)
    let (count, ids) = try await people.container.newBackgroundContext().perform { context in
      (
        try context.count(for: FetchRequest(predicate: predicate)),
        try context.fetchObjectIDs(for: FetchRequest(predicate: predicate))
      )
    }
    #expect(count == swift.count)
    #expect(ids.count == swift.count)
    var limited = FetchRequest(predicate: predicate, sortBy: [SortDescriptor(\.age)])
    limited.fetchLimit = 2
    let request = limited
    let firstTwo = try await people.container.newBackgroundContext().perform { context in
      try context.fetch(request).map(\.age)
    }
    #expect(firstTwo.count == 2 && firstTwo == firstTwo.sorted())
  }

  @Test func unsavedEditsCountAsSwiftWouldSeeThem() async throws {
    let people = try await store()
    try await people.container.newBackgroundContext().perform { context in
      let predicate = #Predicate<Person> { $0.age > 30 }
      let before = try context.fetch(FetchRequest(predicate: predicate))
      let outside = try #require(
        try context.fetch(FetchRequest<Person>(predicate: #Predicate<Person> { $0.age < 0 })).first)
      outside.age = 31  // unsaved: now selected
      let inside = try #require(before.first)
      inside.age = 1  // unsaved: no longer selected
      let inserted = Person(context: context)
      inserted.name = "new"
      inserted.age = 45
      let after = try context.fetch(FetchRequest(predicate: predicate))
      let candidates: [Person] = before.filter { $0 !== inside } + [outside, inserted]
      let expected = try candidates.filter { try predicate.evaluate($0) }
      #expect(Set(after.map(ObjectIdentifier.init)) == Set(expected.map(ObjectIdentifier.init)))
      #expect(try context.count(for: FetchRequest(predicate: predicate)) == expected.count)
    }
  }
}
