import Foundation
import TypedStore

// The three versions of `Customer` that `Tests/TypedStoreTests/Store/MigrationPlanModels.swift`
// also declares (a test module cannot import an executable's types): version 2 splits `name`
// into `firstName` and `lastName` in a custom stage, version 3 drops `name`.

final class PlanCustomerV1: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var name: String = ""
  @Attribute var email: String? = nil
}

final class PlanCustomerV2: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var name: String = ""
  @Attribute var firstName: String = ""
  @Attribute var lastName: String = ""
  @Attribute var email: String? = nil
}

final class PlanCustomerV3: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var firstName: String = ""
  @Attribute var lastName: String = ""
  @Attribute var email: String? = nil
}

func customerPlan() throws -> MigrationPlan {
  MigrationPlan(
    versions: [
      .init("1", try ManagedObjectModel(PlanCustomerV1.self)),
      .init("2", try ManagedObjectModel(PlanCustomerV2.self)),
      .init("3", try ManagedObjectModel(PlanCustomerV3.self)),
    ],
    stages: [
      .custom(didMigrate: { context in
        for customer in try context.fetch(FetchRequest<PlanCustomerV2>()) {
          let parts = customer.name.split(separator: " ", maxSplits: 1)
          customer.firstName = parts.first.map(String.init) ?? ""
          customer.lastName = parts.count > 1 ? String(parts[1]) : ""
        }
        // For a test that kills the process here: the stage's save done, the migration not
        // committed.
        if let pause = ProcessInfo.processInfo.environment["TYPEDSTORE_TEST_STAGE_PAUSE_MS"].flatMap(Double.init) {
          try context.save()
          say("staged")
          Thread.sleep(forTimeInterval: pause / 1000)
        }
      }),
      .lightweight,
    ])
}

/// `plan-open <store> <author> <start, ms since 1970>`: as `openAndSave`, opening the store
/// with `customerPlan()` (migrating it if no one has) and saving one customer.
func planOpen(_ arguments: [String]) {
  openAndSave(arguments, command: "plan-open") { url in
    var options = StoreOptions()
    options.busyTimeout = .seconds(30)
    return try PersistentContainer(name: "Customers", migrationPlan: customerPlan(), storeURL: url, options: options)
  } save: { context, author in
    let customer = PlanCustomerV3(context: context)
    customer.firstName = author
    try context.save()
    return customer.managedID.primaryKey ?? -1
  }
}
