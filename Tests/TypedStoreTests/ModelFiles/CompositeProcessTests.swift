import Foundation
import ShopModel
import Testing
import TypedStore
import TypedStoreTesting

/// A composite attribute across processes: another process changes one element of a shopper's
/// address (the Shop bundle's composite) while this one holds an unsaved edit of another.
@Suite struct CompositeProcessTests {
  @Test func anotherProcessesElementMergesBesideAnUnsavedEditOfAnother() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let model = try ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses)
    let container = try PersistentContainer(name: "Shop", model: model, storeURL: url)
    let id = try await container.performBackgroundTask { context in
      let shopper = Shopper(context: context)
      shopper.email = "ada@example.com"
      shopper.address.street = "1 Rue"
      shopper.address.city = "Paris"
      shopper.address.postcode = "75001"
      try context.save()
      return shopper.managedID
    }
    let start = try container.currentHistoryToken
    let mine = container.newBackgroundContext()
    try await mine.perform { context in
      context.automaticallyMergesChangesFromParent = true
      try context.existingObject(with: id).address.postcode = "75002"  // not saved
    }
    let mover = try await offThePool {
      let run = try SpawnedProcess(
        builtProduct("typedstore-test-writer"), ["shopper-move", url.path, "ada@example.com", "Lyon"])
      return run.finish(seconds: 60)
    }
    #expect(mover.contains("moved"), "\(mover)")
    let merged = await eventually {
      try await mine.perform { context in try context.existingObject(with: id).address.city == "Lyon" }
    }
    #expect(merged)
    let (postcode, changed) = try await mine.perform { context in
      let shopper = try context.existingObject(with: id)
      return (shopper.address.postcode, Set(shopper.changedValues().keys))
    }
    #expect(postcode == "75002" && changed == ["address.postcode"])
    try await mine.perform { context in try context.save() }
    let saved = try await container.performBackgroundTask { context in try context.existingObject(with: id).address }
    var expected = Address()  // the generated struct: Sendable, so a perform block returns it
    expected.street = "1 Rue"
    expected.city = "Lyon"
    expected.postcode = "75002"
    #expect(saved == expected)
    let changes = try container.fetchHistory(HistoryRequest(after: start)).map { ($0.author, $0.changes) }
    #expect(changes.first?.0 == "mover")
    #expect(changes.first?.1.first?.updatedProperties == ["address.city"])
    #expect(changes.last?.1.first?.updatedProperties == ["address.postcode"])
  }
}
