import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// `typedstore migrate`, and what `inspect` and `check` say of a migrated store, run as a user
/// runs the built tool: the model comes from a file, the JSON form an app writes with
/// `model.jsonRepresentation`.
@Suite struct MigrateCommandTests {
  /// A version 1 order store with two orders, closed; and the path of a file holding the JSON
  /// form of `target`.
  private func version1Store(migratingTo target: ManagedObject.Type, function: String = #function) throws -> (
    store: String, model: String
  ) {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(OrderV1.self), function: function)
    try container.viewContext.performAndWait { context in
      for number in 1...2 {
        let order = OrderV1(context: context)
        order.number = number
        order.customer = "customer \(number)"
      }
      try context.save()
    }
    let store = container.persistentStore.url.path
    let modelFile = store + ".model.json"
    try ManagedObjectModel(target).jsonRepresentation.write(to: URL(fileURLWithPath: modelFile))
    return (store, modelFile)
  }

  @Test func aDryRunPrintsThePlanAndChangesNothingThenTheMigrationRuns() throws {
    let (store, modelFile) = try version1Store(migratingTo: OrderAddOptional.self)
    let url = URL(fileURLWithPath: store)
    let version1 = try ManagedObjectModel(OrderV1.self).versionHash
    let version2 = try ManagedObjectModel(OrderAddOptional.self).versionHash

    let dryRun = try typedstore(["migrate", "--store", store, "--model", modelFile, "--dry-run"])
    #expect(dryRun.status == 0, "\(dryRun.stderr)")
    #expect(dryRun.stdout.contains("trackingNumber"), "\(dryRun.stdout)")
    #expect(try PersistentStore.metadataForPersistentStore(at: url).modelHash == version1)

    let json = try typedstore(["migrate", "--store", store, "--model", modelFile, "--dry-run", "--json"])
    #expect(json.status == 0, "\(json.stderr)")
    #expect(json.json["modelHash"] as? String == version2)
    #expect(json.json["storeModelHash"] as? String == version1)
    #expect((json.json["steps"] as? [Any])?.count == 1)
    #expect(try PersistentStore.metadataForPersistentStore(at: url).modelHash == version1)

    let migration = try typedstore(["migrate", "--store", store, "--model", modelFile])
    #expect(migration.status == 0, "\(migration.stderr)")
    #expect(migration.stderr.contains("migrated \(store)"))
    #expect(try PersistentStore.metadataForPersistentStore(at: url).modelHash == version2)
    let container = try PersistentContainer(
      name: "V2", model: ManagedObjectModel(OrderAddOptional.self), storeURL: url)
    let orders = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<OrderAddOptional>()).map { "\($0.customer) \($0.trackingNumber ?? "nil")" }
    }
    #expect(orders.sorted() == ["customer 1 nil", "customer 2 nil"])

    // Run again, there is nothing to do.
    let again = try typedstore(["migrate", "--store", store, "--model", modelFile])
    #expect(again.status == 0 && !again.stderr.contains("migrated"), "\(again.stdout)\(again.stderr)")
  }

  @Test func inspectShowsTheVersionHistoryAndCheckPassesAfterAMigration() throws {
    let (store, modelFile) = try version1Store(migratingTo: OrderAddOptional.self)
    #expect(try typedstore(["migrate", "--store", store, "--model", modelFile]).status == 0)
    let versions = try PersistentStore(url: URL(fileURLWithPath: store)).inspect().modelVersions
    #expect(versions.map(\.number) == [1, 2])
    #expect(versions[0].migrationTransaction == nil)
    let marker = try #require(versions[1].migrationTransaction)
    #expect(versions[1].versionHash == (try ManagedObjectModel(OrderAddOptional.self).versionHash))

    let text = try typedstore(["inspect", "--store", store])
    #expect(text.stdout.contains("model versions:\n"), "\(text.stdout)")
    #expect(text.stdout.contains("created"))
    #expect(text.stdout.contains("migrated in transaction \(marker.transactionNumber)"), "\(text.stdout)")
    let json = try typedstore(["inspect", "--store", store, "--json"])
    let listed = json.json["modelVersions"] as? [[String: Any]] ?? []
    #expect(listed.count == 2)
    #expect(listed.last?["migrationTransaction"] as? Int64 == marker.transactionNumber)

    let check = try typedstore(["check", "--store", store])
    #expect(check.status == 0, "\(check.stdout)")
  }

  @Test func aRefusedMigrationExitsOneAndLeavesTheStoreAsItWas() throws {
    // From JSON alone an added required attribute has no default: a custom stage is needed.
    let (store, modelFile) = try version1Store(migratingTo: OrderAddDefault.self)
    let before = try storeRows(path: store)
    let run = try typedstore(["migrate", "--store", store, "--model", modelFile])
    #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
    #expect(run.stdout.contains("priority"), "\(run.stdout)")
    #expect(run.stderr.contains("cannot be migrated"), "\(run.stderr)")
    #expect(try storeRows(path: store) == before)
    #expect(
      try PersistentStore.metadataForPersistentStore(at: URL(fileURLWithPath: store)).modelHash
        == (try ManagedObjectModel(OrderV1.self).versionHash))
  }

  @Test func checkFindsAColumnTheStampedModelDoesNotKnow() throws {
    let (store, _) = try version1Store(migratingTo: OrderAddOptional.self)
    #expect(try typedstore(["check", "--store", store]).status == 0)
    // What a migration half made by hand leaves: a column added, the stamp not moved.
    let connection = try SQLiteConnection(path: store, mode: .readWriteCreate)
    try connection.execute("ALTER TABLE \"Order\" ADD COLUMN trackingNumber TEXT")
    let check = try typedstore(["check", "--store", store])
    #expect(check.status == 1)
    #expect(check.stdout.contains("the stamped model does not know: trackingnumber"), "\(check.stdout)")
    try connection.execute("ALTER TABLE \"Order\" DROP COLUMN note")
    let again = try typedstore(["check", "--store", store])
    #expect(again.stdout.contains("lacks the stamped model's column(s) note"), "\(again.stdout)")
  }
}
