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
      }),
      .lightweight,
    ])
}

/// `plan-open <store> <author> <start, ms since 1970>`: waits until the start time, prints
/// "migrating", opens the
/// store with `customerPlan` (migrating it if no one has), prints "opened", saves one customer
/// and prints "saved <primary key>". Prints "open failed: <error>" (exit 2) or "save failed:
/// <error>" (exit 3).
func planOpen(_ arguments: [String]) {
  guard arguments.count == 4, let start = Double(arguments[3]) else {
    fail("usage: plan-open <store> <author> <start ms>", code: 64)
  }
  let wait = start / 1000 - Date().timeIntervalSince1970
  if wait > 0 { Thread.sleep(forTimeInterval: wait) }
  say("migrating")
  let container: PersistentContainer
  do {
    var options = StoreOptions()
    options.busyTimeout = .seconds(30)
    container = try PersistentContainer(
      name: "Customers", migrationPlan: customerPlan(), storeURL: URL(fileURLWithPath: arguments[1]), options: options)
  } catch {
    say("open failed: \(error)")
    exit(2)
  }
  say("opened")
  do {
    let key = try container.newBackgroundContext().performAndWait { context in
      context.transactionAuthor = arguments[2]
      let customer = PlanCustomerV3(context: context)
      customer.firstName = arguments[2]
      try context.save()
      return customer.managedID.primaryKey ?? -1
    }
    say("saved \(key)")
  } catch {
    say("save failed: \(error)")
    exit(3)
  }
}
