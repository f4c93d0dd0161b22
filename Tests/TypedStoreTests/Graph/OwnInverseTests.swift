import Foundation
import Testing
import TypedStore
import TypedStoreTesting

/// People whose `friends` are their own inverse.
final class Neighbour: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: .itself) var friends: Set<Neighbour>
}

/// `Neighbour` before it had relationships.
final class NeighbourV1: ManagedObject {
  override class var entityName: String { "Neighbour" }
  @Attribute var name: String = ""
}

/// A relationship that is its own inverse (`inverse: .itself`, Core Data's inverse set to the
/// relationship itself): links are kept both ways, in memory and in the store.
@Suite struct OwnInverseTests {
  static func names(_ people: Set<Neighbour>) -> [String] { people.map(\.name).sorted() }

  @Test func linkingOneWayLinksBothWaysAndIsStoredSo() throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Neighbour.self))
    let model = container.managedObjectModel
    let friends = try #require(model.entity(named: "Neighbour")?.relationship(named: "friends"))
    #expect(friends.inverseName == "friends" && friends.kind == .toMany)
    try container.viewContext.performAndWait { context in
      let ada = Neighbour(context: context)
      ada.name = "Ada"
      let bob = Neighbour(context: context)
      bob.name = "Bob"
      let cy = Neighbour(context: context)
      cy.name = "Cy"
      ada.friends.insert(bob)
      cy.friends = [ada, bob]
      #expect(Self.names(bob.friends) == ["Ada", "Cy"])
      try context.save()
    }
    let other = container.newBackgroundContext()
    try other.performAndWait { context in
      let people = try context.fetch(FetchRequest<Neighbour>(sortBy: [SortDescriptor(\.name)]))
      #expect(people.map { Self.names($0.friends) } == [["Bob", "Cy"], ["Ada", "Cy"], ["Ada", "Bob"]])
      // Unlinking from either side, and deleting, leave no link behind.
      people[1].friends.remove(people[2])
      context.delete(people[1])
      try context.save()
    }
    try container.newBackgroundContext().performAndWait { context in
      let people = try context.fetch(FetchRequest<Neighbour>(sortBy: [SortDescriptor(\.name)]))
      #expect(people.map(\.name) == ["Ada", "Cy"])
      #expect(people.map { Self.names($0.friends) } == [["Cy"], ["Ada"]])
    }
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  @Test func addingThemIsAnInferredMigration() throws {
    let old = try PersistentContainer.makeTest(model: ManagedObjectModel(NeighbourV1.self))
    try old.viewContext.performAndWait { context in
      for name in ["Ada", "Bob"] { NeighbourV1(context: context).name = name }
      try context.save()
    }
    let url = old.persistentStore.url
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(Neighbour.self))
    #expect(report.canMigrate, "\(report)")
    let container = try PersistentContainer(
      name: "Neighbours", model: ManagedObjectModel(Neighbour.self), storeURL: url)
    try container.viewContext.performAndWait { context in
      let people = try context.fetch(FetchRequest<Neighbour>(sortBy: [SortDescriptor(\.name)]))
      people[0].friends = [people[1]]
      try context.save()
      #expect(people[1].friends.map(\.name) == ["Ada"])
    }
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  @Test func aPairThatBecomesItsOwnInverseIsRefused() throws {
    let old = try PersistentContainer.makeTest(model: ManagedObjectModel(PairedNeighbour.self))
    let url = old.persistentStore.url
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(Neighbour.self))
    #expect(!report.canMigrate)
    #expect(report.refusals.contains { "\($0)".contains("becomes its own inverse") }, "\(report)")
  }

  @Test func aDestinationOtherThanItsEntityIsRefused() {
    #expect(throws: ModelError.self) { try ManagedObjectModel(FarNeighbour.self, Neighbour.self) }
  }
}

/// `Neighbour` with `friends` and `friendOf` as a pair (each link stored once).
final class PairedNeighbour: ManagedObject {
  override class var entityName: String { "Neighbour" }
  @Attribute var name: String = ""
  @Relationship() var friends: Set<PairedNeighbour>
  @Relationship(inverse: \PairedNeighbour.friends) var friendOf: Set<PairedNeighbour>
}

/// A relationship declared as its own inverse whose destination is another entity.
final class FarNeighbour: ManagedObject {
  @Relationship(inverse: .itself) var neighbours: Set<Neighbour>
}
