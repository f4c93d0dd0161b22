import Foundation
import Observation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

// Entities that declare `Observable`, and one that does not.
final class Lamp: ManagedObject, Observable {
  @Attribute var name: String = ""
  @Attribute var watts: Int = 0
  @Relationship(deleteRule: .cascade) var bulbs: Set<Bulb>
}

final class Bulb: ManagedObject, Observable {
  @Attribute var color: String = ""
  @Relationship(inverse: \Lamp.bulbs) var lamp: Lamp?
}

class Fixture: ManagedObject, Observable {
  @Attribute var room: String = ""
}

/// A subentity: observable because its class inherits the conformance.
final class Spotlight: Fixture {
  @Attribute var beam: Double = 0
}

final class Switch: ManagedObject {
  @Attribute var label: String = ""
}

/// The test writer's `Event` entity, declared `Observable` in this process.
final class ObservedEvent: ManagedObject, Observable {
  override class var entityName: String { "Event" }
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
}

/// A service that watches one lamp, as server code would: an actor on its context's executor.
private actor LampWatcher: ModelActor {
  nonisolated let modelExecutor: ModelExecutor
  let modelContext: ModelContext
  private let lamp: Lamp

  init(container: PersistentContainer, id: ManagedID<Lamp>) throws {
    let context = container.newModelContext()
    context.automaticallyMergesChangesFromParent = true
    modelExecutor = context.executor
    modelContext = context
    lamp = try context.existingObject(with: id)
  }

  /// The lamp's name and wattage now and after every change, merged ones included.
  func states() -> Observations<String, Never> {
    Observations { [self] in "\(lamp.name) \(lamp.watts)" }
  }
}

private let lampModel: ManagedObjectModel = {
  do {
    return try ManagedObjectModel(Lamp.self, Bulb.self, Switch.self, Fixture.self, Spotlight.self)
  } catch {
    fatalError("the observation tests' model: \(error)")
  }
}()

/// How many times an observation's `onChange` ran.
private final class Changes: Sendable {
  private let count = Mutex(0)
  func add() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}

/// Tracks what `read` reads, as SwiftUI and `Observations` do; the result counts the changes.
private func observe(_ read: () -> Void) -> Changes {
  let changes = Changes()
  withObservationTracking(read, onChange: { changes.add() })
  return changes
}

/// Polls until `changes` has fired (false after 20 seconds).
private func fired(_ changes: Changes) async -> Bool {
  let deadline = Date().addingTimeInterval(20)
  while Date() < deadline {
    if changes.value > 0 { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return changes.value > 0  // a task resumed late may find it fired
}

@Suite struct ObservationTests {
  private func makeLamp(_ container: PersistentContainer, bulbs: Int = 2) async throws -> ManagedID<Lamp> {
    try await container.newBackgroundContext().perform { context in
      let lamp = Lamp(context: context)
      lamp.name = "desk"
      lamp.watts = 40
      for index in 0..<bulbs {
        let bulb = Bulb(context: context)
        bulb.color = "c\(index)"
        bulb.lamp = lamp
      }
      try context.save()
      return lamp.managedID
    }
  }

  @Test func aReadAttributeFiresWhenSetAndAnUnreadOneOrAnotherObjectDoesNot() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    try await container.newBackgroundContext().perform { context in
      let lamp = try context.existingObject(with: id)
      let other = Lamp(context: context)
      let changes = observe { _ = lamp.name }
      lamp.watts = 60  // not read
      other.name = "other"  // the same attribute of another object
      #expect(changes.value == 0)
      lamp.name = "bedside"
      #expect(changes.value == 1)
      #expect(lamp.name == "bedside")
    }
  }

  @Test func aSubentityOfAnObservableEntityReportsItsOwnAndInheritedAttributes() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    await container.newBackgroundContext().perform { context in
      let spot = Spotlight(context: context)
      let room = observe { _ = spot.room }
      let beam = observe { _ = spot.beam }
      spot.room = "hall"
      spot.beam = 30
      #expect(room.value == 1)
      #expect(beam.value == 1)
    }
  }

  @Test func anEntityThatDoesNotDeclareObservableReportsNothing() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    await container.newBackgroundContext().perform { context in
      let plain = Switch(context: context)
      let changes = observe { _ = plain.label }
      plain.label = "on"
      #expect(changes.value == 0)
      #expect(plain.observation == nil)
    }
  }

  @Test func rollbackFiresForTheAttributesItRestores() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    try await container.newBackgroundContext().perform { context in
      let lamp = try context.existingObject(with: id)
      lamp.name = "edited"
      let name = observe { _ = lamp.name }
      let watts = observe { _ = lamp.watts }
      context.rollback()
      #expect(name.value == 1)
      #expect(watts.value == 0)  // it did not change
      #expect(lamp.name == "desk")
    }
  }

  @Test func aSaveInAnotherContextFiresOnceMergedAndOnlyForWhatChanged() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    let viewer = container.newBackgroundContext()
    let (name, watts) = try await viewer.perform { context in
      context.automaticallyMergesChangesFromParent = true
      let lamp = try context.existingObject(with: id)
      return (observe { _ = lamp.name }, observe { _ = lamp.watts })
    }
    try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: id).name = "renamed"
      try context.save()
    }
    #expect(await fired(name))
    #expect(watts.value == 0)
    let merged = try await viewer.perform { context in try context.existingObject(with: id).name }
    #expect(merged == "renamed")
  }

  @Test func aCommitOfAnotherProcessFiresOnceMerged() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(ObservedEvent.self))
    let path = container.persistentStore.location
    let id = try await container.newBackgroundContext().perform { context in
      let event = ObservedEvent(context: context)
      event.sequence = 1
      try context.save()
      return event.managedID
    }
    let viewer = container.newBackgroundContext()
    let changes = try await viewer.perform { context in
      context.automaticallyMergesChangesFromParent = true
      let event = try context.existingObject(with: id)
      return observe { _ = event.sequence }
    }
    let writer = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), ["set", path, String(id.primaryKey ?? 0), "42"])
    #expect(writer.finish().contains("done"))
    #expect(await fired(changes))
    let merged = try await viewer.perform { context in try context.existingObject(with: id).sequence }
    #expect(merged == 42)
  }

  @Test func aRelationshipFiresOnBothSidesWhenEitherSideChanges() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    try await container.newBackgroundContext().perform { context in
      let lamp = try context.existingObject(with: id)
      let bulb = Bulb(context: context)
      let bulbs = observe { _ = lamp.bulbs.count }
      let bulbLamp = observe { _ = bulb.lamp }
      bulb.lamp = lamp  // the to-one side: the lamp's to-many changes with it
      #expect(bulbs.value == 1)
      #expect(bulbLamp.value == 1)
      #expect(lamp.bulbs.count == 3)

      let first = try #require(lamp.bulbs.first { $0 !== bulb })
      let firstLamp = observe { _ = first.lamp }
      let again = observe { _ = lamp.bulbs }
      lamp.$bulbs.remove(first)  // the helper on the to-many side: the bulb's to-one changes
      #expect(firstLamp.value == 1)
      #expect(again.value == 1)
      #expect(first.lamp == nil)
    }
  }

  @Test func aRelationshipChangedInAnotherContextFiresOnceMerged() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    let viewer = container.newBackgroundContext()
    let (bulbs, name) = try await viewer.perform { context in
      context.automaticallyMergesChangesFromParent = true
      let lamp = try context.existingObject(with: id)
      return (observe { _ = lamp.bulbs.count }, observe { _ = lamp.name })
    }
    try await container.newBackgroundContext().perform { context in
      let lamp = try context.existingObject(with: id)
      let bulb = Bulb(context: context)
      bulb.lamp = lamp
      try context.save()
    }
    #expect(await fired(bulbs))
    #expect(name.value == 0)
    let count = try await viewer.perform { context in try context.existingObject(with: id).bulbs.count }
    #expect(count == 3)
  }

  @Test func aSaveThatResolvesAConflictFromTheStoreFiresForWhatTheStoreChanged() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    let editor = container.newBackgroundContext()
    let name = try await editor.perform { context in
      context.mergePolicy = .storeTrump
      let lamp = try context.existingObject(with: id)
      return observe { _ = lamp.name }
    }
    try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: id).name = "theirs"
      try context.save()
    }
    try await editor.perform { context in
      let lamp = try context.existingObject(with: id)
      lamp.watts = 100
      #expect(name.value == 0)
      try context.save()  // a conflict: the row moved on; the store's name comes in
      #expect(name.value == 1)
      #expect(lamp.name == "theirs")
      #expect(lamp.watts == 100)
    }
  }

  @Test func aFetchThatReturnsANewerRowOfAnUnchangedObjectFiresForWhatDiffers() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    let viewer = container.newBackgroundContext()  // does not merge automatically
    let (name, watts) = try await viewer.perform { context in
      let lamp = try context.existingObject(with: id)
      return (observe { _ = lamp.name }, observe { _ = lamp.watts })
    }
    try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: id).watts = 75
      try context.save()
    }
    try await viewer.perform { context in
      #expect(watts.value == 0)
      let lamps = try context.fetch(FetchRequest<Lamp>())
      #expect(lamps.first?.watts == 75)
      #expect(watts.value == 1)
      #expect(name.value == 0)
    }
  }

  @Test func refreshingWithoutMergingFiresForWhatWasRead() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    try await container.newBackgroundContext().perform { context in
      let lamp = try context.existingObject(with: id)
      let changes = observe { _ = lamp.watts }
      context.refresh(lamp, mergeChanges: false)
      #expect(lamp.isFault)
      #expect(changes.value == 1)
      #expect(lamp.watts == 40)
    }
  }

  @Test func aDeletedRelatedObjectFiresItsPartnersSideOnceSaved() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    try await container.newBackgroundContext().perform { context in
      let lamp = try context.existingObject(with: id)
      let bulb = try #require(lamp.bulbs.first)
      let changes = observe { _ = lamp.bulbs }
      context.delete(bulb)
      try context.save()
      #expect(changes.value == 1)
      #expect(lamp.bulbs.count == 1)
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func observationsDeliversAnObjectsStatesAsAnotherContextChangesIt() async throws {
    let container = try PersistentContainer.makeTest(model: lampModel)
    let id = try await makeLamp(container)
    let watcher = try LampWatcher(container: container, id: id)
    var states = await watcher.states().makeAsyncIterator()
    #expect(await states.next() == "desk 40")
    try await container.newBackgroundContext().perform { context in
      try context.existingObject(with: id).watts = 60
      try context.save()
    }
    #expect(await states.next() == "desk 60")
  }
}
