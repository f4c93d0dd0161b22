import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

final class Member: ManagedObject {
  override class var uniquenessConstraints: [UniquenessConstraint] {
    [UniquenessConstraint(\Member.givenName, \Member.familyName)]
  }
  @Attribute var givenName: String = ""
  @Attribute var familyName: String = ""
  @Attribute var email: String? = nil
  @Relationship(deleteRule: .cascade) var badges: Set<Badge>
}

final class Badge: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \Member.badges) var owner: Member?
}

@Suite struct UniquenessTests {
  private let model: ManagedObjectModel = {
    do { return try ManagedObjectModel(Member.self, Badge.self) } catch { fatalError("\(error)") }
  }()

  private func seeded(function: String = #function) async throws -> (PersistentContainer, ManagedID<Member>) {
    let container = try PersistentContainer.makeTest(model: model, function: function)
    let id = try await container.newBackgroundContext().perform { context in
      let ada = Member(context: context)
      ada.givenName = "Ada"
      ada.familyName = "Lovelace"
      ada.email = "ada@old.example"
      try context.save()
      return ada.managedID
    }
    return (container, id)
  }

  @Test func aBatchInsertThatDuplicatesValuesThrowsUniqueConstraintViolationAndWritesNothing() async throws {
    let (container, _) = try await seeded()
    let error = await container.newBackgroundContext().perform { context -> (any Error)? in
      do {
        _ = try context.execute(
          BatchInsertRequest<Member>(count: 2) { index, member in
            member.givenName = "Ada"
            member.familyName = index == 0 ? "Byron" : "Lovelace"
          })
        return nil
      } catch {
        return error
      }
    }
    guard case StoreError.uniqueConstraintViolation(let entity, _)? = error else {
      Issue.record("unexpected \(String(describing: error))")
      return
    }
    #expect(entity == "Member")
    let count = try await container.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Member>())
    }
    #expect(count == 1)
  }

  @Test(.disabled(if: testsRunOnPostgreSQL, "reads SQLite's schema"))
  func aCompoundConstraintIsInTheModelAndTheSchema() throws {
    #expect(model.entity(for: Member.self)?.uniquenessConstraints == [["givenName", "familyName"]])
    #expect(String(decoding: model.jsonRepresentation, as: UTF8.self).contains("\"uniquenessConstraints\""))
    // The schema: a unique index over both columns, in the constraint's order.
    let container = try PersistentContainer.makeTest(model: model)
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readOnly)
    func strings(_ sql: String) throws -> [String] {
      let statement = try connection.statement(sql)
      defer { statement.reset() }
      var values: [String] = []
      while try statement.step() { values.append(statement.string(0)) }
      return values
    }
    let unique = try strings("SELECT name FROM pragma_index_list('Member') WHERE \"unique\" = 1")
    #expect(unique.contains("_unique_Member_givenName_familyName"))
    #expect(
      try strings("SELECT name FROM pragma_index_info('_unique_Member_givenName_familyName')") == [
        "givenName", "familyName",
      ])
  }

  @Test func theErrorPolicyNamesTheConstraintAndBothObjectsAndWritesNothing() async throws {
    let (container, id) = try await seeded()
    try await container.newBackgroundContext().perform { context in
      let twin = Member(context: context)
      twin.givenName = "Ada"
      twin.familyName = "Lovelace"
      let other = Member(context: context)
      other.givenName = "Ada"
      other.familyName = "Byron"  // no conflict
      do {
        try context.save()
        Issue.record("the save should have failed")
      } catch StoreError.uniquenessConflict(let conflicts) {
        #expect(conflicts.count == 1)
        #expect(conflicts[0].constraint == ["givenName", "familyName"])
        #expect(conflicts[0].objectID == twin.managedID.untyped && conflicts[0].conflictingID == id.untyped)
      }
    }
    let count = try await container.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Member>())
    }
    #expect(count == 1)
  }

  @Test func objectTrumpMergesTheInsertedObjectIntoTheStoredRowWithItsRelationships() async throws {
    let (container, id) = try await seeded()
    try await container.newBackgroundContext().perform { context in
      context.mergePolicy = .objectTrump
      let again = Member(context: context)
      again.givenName = "Ada"
      again.familyName = "Lovelace"
      again.email = "ada@new.example"
      let pet = Badge(context: context)
      pet.name = "Charles"
      pet.owner = again
      try context.save()
      // The inserted object became the stored row, with its values and its pet.
      #expect(again.managedID == id)
      #expect(again.email == "ada@new.example")
      #expect(pet.owner === again)
    }
    let (count, email, badges) = try await container.newBackgroundContext().perform { context in
      let ada = try context.existingObject(with: id)
      return (try context.count(for: FetchRequest<Member>()), ada.email, ada.badges.map(\.name))
    }
    #expect(count == 1 && email == "ada@new.example" && badges == ["Charles"])
  }

  @Test func storeTrumpKeepsTheStoredValuesAndAContextsOwnObjectForTheRow() async throws {
    let (container, id) = try await seeded()
    try await container.newBackgroundContext().perform { context in
      context.mergePolicy = .storeTrump
      let held = try context.existingObject(with: id)  // the context holds the row already
      let again = Member(context: context)
      again.givenName = "Ada"
      again.familyName = "Lovelace"
      again.email = "ada@new.example"
      try context.save()
      #expect(held.email == "ada@old.example")
      #expect(try context.registeredObject(for: id) === held)
      #expect(try context.count(for: FetchRequest<Member>()) == 1)
    }
  }

  @Test func twoObjectsOfOneSaveWithTheSameValuesConflictUnderEveryPolicy() async throws {
    let container = try PersistentContainer.makeTest(model: model)
    for policy in [MergePolicy.error, .objectTrump, .storeTrump] {
      let failed = await container.newBackgroundContext().perform { context -> Bool in
        context.mergePolicy = policy
        for _ in 0..<2 {
          let person = Member(context: context)
          person.givenName = "Grace"
          person.familyName = "Hopper"
        }
        do {
          try context.save()
          return false
        } catch {
          if case StoreError.uniquenessConflict = error { return true }
          return false
        }
      }
      #expect(failed, "\(policy)")
    }
  }
}

final class Hall: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .cascade) var seats: Set<Seat>
}

final class Seat: ManagedObject {
  override class var uniquenessConstraints: [UniquenessConstraint] {
    [UniquenessConstraint(\Seat.hall, \Seat.number)]
  }
  @Attribute var number: Int = 0
  @Relationship(inverse: \Hall.seats) var hall: Hall?
}

extension UniquenessTests {
  @Test func aToOneWhoseKeyTheRowHoldsCanBePartOfAConstraint() async throws {
    let model = try ManagedObjectModel(Hall.self, Seat.self)
    #expect(model.entity(for: Seat.self)?.uniquenessConstraints == [["hall", "number"]])
    let container = try PersistentContainer.makeTest(model: model)
    try await container.newBackgroundContext().perform { context in
      let (left, right) = (Hall(context: context), Hall(context: context))
      for hall in [left, right] {
        let seat = Seat(context: context)
        seat.number = 1
        seat.hall = hall  // the same number in two halls: allowed
      }
      try context.save()
      let twin = Seat(context: context)
      twin.number = 1
      twin.hall = left
      do {
        try context.save()
        Issue.record("the save should have failed")
      } catch StoreError.uniquenessConflict(let conflicts) {
        #expect(conflicts.map(\.constraint) == [["hall", "number"]])
      }
    }
  }
}

extension UniquenessTests {
  @Test func anUpdateThatCollidesWithAStoredRowIsAnErrorUnderEveryPolicy() async throws {
    let (container, _) = try await seeded()
    let otherID = try await container.newBackgroundContext().perform { context in
      let other = Member(context: context)
      other.givenName = "Ada"
      other.familyName = "Byron"
      try context.save()
      return other.managedID
    }
    for policy in [MergePolicy.error, .objectTrump, .storeTrump, .overwrite, .rollback] {
      let outcome = await container.newBackgroundContext().perform { context -> String in
        context.mergePolicy = policy
        do {
          try context.existingObject(with: otherID).familyName = "Lovelace"
          try context.save()
          return "saved"
        } catch StoreError.uniquenessConflict(let conflicts) {
          return conflicts.first?.objectID == otherID.untyped ? "conflict" : "conflict naming \(conflicts)"
        } catch {
          return "\(error)"
        }
      }
      #expect(outcome == "conflict", "\(policy)")
    }
  }
}
