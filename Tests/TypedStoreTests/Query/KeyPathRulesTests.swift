import Foundation
import Testing
import TypedStore
import TypedStoreTesting

// A key path names a stored attribute only when it is the `@Attribute` property itself:
// a computed property that reads one is still no attribute, and every place that turns a
// key path into a column refuses it with a typed error that names it readably.

final class ClubMember: ManagedObject {
  @Attribute var name: String = ""
  @Attribute var age: Int = 0
  @Relationship(deleteRule: .nullify) var club: Club?
  var shout: String { name.uppercased() }
  /// Returns `name` unchanged: an alias, which answers as the attribute.
  var alias: String { name }
  /// Returns and stores exactly `name`: Swift cannot tell it from the attribute.
  var settableAlias: String {
    get { name }
    set { name = newValue }
  }
  var upper: String {
    get { name.uppercased() }
    set { name = newValue.lowercased() }
  }
  var plain: Int = 0
  @Attribute public private(set) var joined: Int = 7
  @Attribute var nickname: String? = nil
  var displayName: String { name.isEmpty ? "Untitled" : name }
  var nick: String {
    get { nickname ?? "" }
    set { nickname = newValue }
  }
  var cappedAge: Int { min(age, 100) }
  var clubName: String? { club?.name }
  var clubAlias: Club? { club }
}

final class Club: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \ClubMember.club, deleteRule: .nullify) var members: Set<ClubMember>
  @Relationship(inverse: \Creature.club, deleteRule: .nullify) var creatures: Set<Creature>
  var shout: String { name.uppercased() }
  var displayName: String { name.isEmpty ? "Untitled" : name }
}

class Creature: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .nullify) var club: Club?
  var loud: String { name.uppercased() }
  var settableAlias: String {
    get { name }
    set { name = newValue }
  }
}

final class Hound: Creature {
  @Attribute var breed: String = ""
}

final class ComputedUnique: ManagedObject {
  override class var uniquenessConstraints: [UniquenessConstraint] {
    [UniquenessConstraint(\ComputedUnique.shout)]
  }
  @Attribute var name: String = ""
  var shout: String { name.uppercased() }
}

@Suite struct KeyPathRulesTests {
  /// A store per test: two chess club members and a hound (each test has its own file).
  private func makeContainer(function: String = #function) throws -> PersistentContainer {
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(ClubMember.self, Club.self, Creature.self, Hound.self), function: function)
    try container.viewContext.performAndWait { context in
      let chess = Club(context: context)
      chess.name = "Chess"
      for (name, age) in [("Ann", 30), ("bob", 20), ("Cy", 40)] {
        let member = ClubMember(context: context)
        member.name = name
        member.age = age
        member.club = chess
      }
      let hound = Hound(context: context)
      hound.name = "Rex"
      hound.breed = "beagle"
      hound.club = chess
      try context.save()
    }
    return container
  }

  private func unknownKeyPath(
    function: String = #function, _ body: @Sendable (isolated ManagedObjectContext) throws -> Void
  ) throws -> String {
    try makeContainer(function: function).viewContext.performAndWait { context in
      do {
        try body(context)
      } catch let error as PredicateTranslationError {
        guard case .unknownKeyPath(let text) = error else { return "other error: \(error)" }
        return text
      }
      return "no error"
    }
  }

  @Test func aComputedPropertyThatReadsAnAttributeIsNotThatAttributeInAPredicate() throws {
    for predicate in [
      #Predicate<ClubMember> { $0.shout == "ANN" }, #Predicate<ClubMember> { $0.shout == "Ann" },
      #Predicate<ClubMember> { $0.upper == "ANN" },
      #Predicate<ClubMember> { $0.plain == 0 }, #Predicate<ClubMember> { $0.clubName == "Chess" },
    ] {
      let text = try unknownKeyPath { _ = try $0.fetch(FetchRequest(predicate: predicate)) }
      #expect(text.hasPrefix("\\ClubMember."), "\(text)")
      #expect(!text.contains("0x"), "\(text)")
    }
  }

  @Test func theErrorNamesAComputedPropertyByItsTypeAndWhatItReads() throws {
    let text = try unknownKeyPath {
      _ = try $0.fetch(FetchRequest(predicate: #Predicate<ClubMember> { $0.shout == "" }))
    }
    #expect(text == "\\ClubMember.<computed String reading name>")
    let plain = try unknownKeyPath {
      _ = try $0.fetch(FetchRequest(predicate: #Predicate<ClubMember> { $0.plain == 0 }))
    }
    #expect(plain == "\\ClubMember.plain")
  }

  @Test func aComputedPropertyOfARelatedObjectIsRefusedToo() throws {
    let text = try unknownKeyPath { context in
      _ = try context.fetch(FetchRequest(predicate: #Predicate<ClubMember> { $0.club?.shout == "CHESS" }))
    }
    #expect(text.hasPrefix("\\Club."), "\(text)")
  }

  @Test func storedPropertiesStillTranslateOnTheObjectARelatedObjectAndASubentity() throws {
    let named = #Predicate<ClubMember> { $0.name == "Ann" }
    let inClub = #Predicate<ClubMember> { $0.club?.name == "Chess" }
    let hound = #Predicate<Hound> { $0.name == "Rex" }
    let houndInClub = #Predicate<Hound> { $0.club?.name == "Chess" }
    let counts = try makeContainer().viewContext.performAndWait { context in
      [
        try context.fetch(FetchRequest(predicate: named)).count,
        try context.fetch(FetchRequest(predicate: inClub)).count,
        try context.fetch(FetchRequest(predicate: hound)).count,
        try context.fetch(FetchRequest(predicate: houndInClub)).count,
      ]
    }
    #expect(counts == [1, 3, 1, 1])
  }

  @Test func aComputedSubentityPropertyWithoutASetterIsRefused() throws {
    let text = try unknownKeyPath { _ = try $0.fetch(FetchRequest(predicate: #Predicate<Hound> { $0.loud == "REX" })) }
    #expect(text.hasPrefix("\\Hound."), "\(text)")
  }

  private func unsupportedSortKey(_ descriptor: SortDescriptor<ClubMember>, function: String = #function) throws
    -> String?
  {
    try makeContainer(function: function).viewContext.performAndWait { context in
      do {
        _ = try context.fetch(FetchRequest<ClubMember>(sortBy: [descriptor]))
      } catch FetchError.unsupportedSortKey(let text) {
        return text
      }
      return nil
    }
  }

  @Test func sortingByAComputedPropertyThrowsUnsupportedSortKey() throws {
    for descriptor in [
      SortDescriptor(\ClubMember.shout), SortDescriptor(\ClubMember.displayName), SortDescriptor(\ClubMember.clubName),
      SortDescriptor(\ClubMember.club?.shout), SortDescriptor(\ClubMember.upper),
      SortDescriptor(\ClubMember.plain),
    ] {
      let text = try unsupportedSortKey(descriptor)
      #expect(text != nil, "\(descriptor)")
      #expect(text?.contains("0x") == false, "\(text ?? "")")
    }
    #expect(try unsupportedSortKey(SortDescriptor(\ClubMember.shout)) == "\\ClubMember.<computed String reading name>")
  }

  @Test func sortingByStoredPropertiesThroughRelationshipsAndInheritedOnesWorks() throws {
    try makeContainer().viewContext.performAndWait { context in
      let names = try context.fetch(FetchRequest<ClubMember>(sortBy: [SortDescriptor(\.age)])).map(\.name)
      #expect(names == ["bob", "Ann", "Cy"])
      let byClub = try context.fetch(
        FetchRequest<ClubMember>(sortBy: [SortDescriptor(\.club?.name), SortDescriptor(\.age)]))
      #expect(byClub.map(\.name) == ["bob", "Ann", "Cy"])
      #expect(try context.fetch(FetchRequest<Hound>(sortBy: [SortDescriptor(\.name)])).count == 1)
      #expect(try context.fetch(FetchRequest<Hound>(sortBy: [SortDescriptor(\.club?.name)])).count == 1)
    }
  }

  @Test func sectionsAggregatesBatchUpdatesAndPrefetchingRefuseComputedKeyPaths() throws {
    try makeContainer().viewContext.performAndWait { context in
      let controller = FetchedResultsController(
        fetchRequest: FetchRequest<ClubMember>(sortBy: [SortDescriptor(\.name)]), context: context,
        sectionNameKeyPath: \ClubMember.shout)
      #expect(throws: FetchError.unsupportedSortKey("\\ClubMember.<computed String reading name>")) {
        try controller.performFetch()
      }
      #expect {
        _ = try context.aggregate(.count, for: FetchRequest<ClubMember>(), groupedBy: \ClubMember.shout)
      } throws: { error in
        guard case FetchError.unsupportedAggregate(let text) = error else { return false }
        return !text.contains("0x")
      }
      var update = BatchUpdateRequest<ClubMember>()
      update.propertiesToUpdate = [.set(\ClubMember.upper, "x")]
      #expect {
        _ = try context.execute(update)
      } throws: { error in
        guard case BatchError.unsupportedKeyPath(let text) = error else { return false }
        return !text.contains("0x")
      }
      var prefetching = FetchRequest<ClubMember>()
      prefetching.relationshipKeyPathsForPrefetching = [\ClubMember.clubName]
      #expect {
        _ = try context.fetch(prefetching)
      } throws: { error in
        guard case FetchError.notARelationship(let text) = error else { return false }
        return !text.contains("0x")
      }
      // Nothing was written.
      let names = try context.fetch(FetchRequest<ClubMember>()).map(\.name).sorted()
      #expect(names == ["Ann", "Cy", "bob"])
    }
  }

  /// Computed properties that return the attribute for most values but not for all: nil,
  /// empty strings and extreme numbers are among the values each is tried with.
  @Test func aComputedPropertyThatChangesOnlySomeValuesIsRefused() throws {
    for predicate in [
      #Predicate<ClubMember> { $0.displayName == "Ann" }, #Predicate<ClubMember> { $0.nick == "" },
      #Predicate<ClubMember> { $0.cappedAge > 20 }, #Predicate<ClubMember> { $0.club?.displayName == "Chess" },
    ] {
      let text = try unknownKeyPath { _ = try $0.fetch(FetchRequest(predicate: predicate)) }
      #expect(text.hasPrefix("\\ClubMember.") || text.hasPrefix("\\Club."), "\(text)")
    }
    #expect(try unsupportedSortKey(SortDescriptor(\ClubMember.club?.displayName)) != nil)
  }

  /// A key path to an attribute whose setter is private is read-only outside its class: it
  /// still names the attribute.
  @Test func anAttributeWithAPrivateSetterIsStillAnAttribute() throws {
    let joined = #Predicate<ClubMember> { $0.joined == 7 }
    let counts = try makeContainer().viewContext.performAndWait { context in
      [
        try context.fetch(FetchRequest(predicate: joined)).count,
        try context.fetch(FetchRequest<ClubMember>(sortBy: [SortDescriptor(\.joined)])).count,
      ]
    }
    #expect(counts == [3, 3])
  }

  /// The one kind of computed property Swift gives no way to tell from the property it reads:
  /// one that returns that property's value unchanged, for every value (an alias). It is
  /// taken for the property, and answers exactly as the property does.
  @Test func anAliasThatReturnsAPropertyUnchangedAnswersAsThatProperty() throws {
    let alias = #Predicate<ClubMember> { $0.settableAlias == "Ann" || $0.alias == "Ann" }
    let name = #Predicate<ClubMember> { $0.name == "Ann" }
    let results = try makeContainer().viewContext.performAndWait { context in
      let all = try context.fetch(FetchRequest<ClubMember>())
      return [
        try context.fetch(FetchRequest(predicate: alias)).map(\.name),
        try context.fetch(FetchRequest(predicate: name)).map(\.name),
        try all.filter { try alias.evaluate($0) }.map(\.name),
        try context.fetch(FetchRequest<ClubMember>(sortBy: [SortDescriptor(\.clubAlias?.name), SortDescriptor(\.age)]))
          .map(\.name),
        all.sorted { $0.age < $1.age }.map(\.name),
      ]
    }
    #expect(results[0] == ["Ann"] && results[0] == results[1] && results[1] == results[2])
    #expect(results[3] == results[4])
  }

  @Test func aUniquenessConstraintOnAComputedPropertyIsAModelError() throws {
    #expect {
      _ = try ManagedObjectModel(ComputedUnique.self)
    } throws: { error in
      guard let error = error as? ModelError else { return false }
      return "\(error)".contains("computed") && !"\(error)".contains("0x")
    }
  }
}
