import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// docs/migration.md's examples, run: version 1 of the order service, then version 2 as the
/// page declares it.
enum MigrationDocVersion1 {
  final class Order: ManagedObject {
    @Attribute var number: Int = 0
    @Attribute var customer: String = ""
  }

  final class Client: ManagedObject {
    @Attribute var name: String = ""
  }
}

enum MigrationDoc {
  final class Order: ManagedObject {
    @Attribute var number: Int = 0
    @Attribute(originalName: "customer") var client: String = ""
    @Attribute var trackingNumber: String? = nil
    @Attribute var priority: Int = 3
  }

  final class Customer: ManagedObject {  // was `Client` in version 1
    override class var originalEntityName: String? { "Client" }
    @Attribute var name: String = ""
  }
}

@Suite struct MigrationDocTests {
  @Test func thePagesVersion2OpensAVersion1StoreAndKeepsEveryValue() throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(
        model: ManagedObjectModel(MigrationDocVersion1.Order.self, MigrationDocVersion1.Client.self))
      try container.viewContext.performAndWait { context in
        let order = MigrationDocVersion1.Order(context: context)
        order.number = 7
        order.customer = "ada"
        MigrationDocVersion1.Client(context: context).name = "grace"
        try context.save()
      }
      url = container.persistentStore.url
    }
    typealias Order = MigrationDoc.Order
    typealias Customer = MigrationDoc.Customer

    let report = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(Order.self, Customer.self))
    print(report)
    #expect(report.canMigrate)
    #expect(report.steps.flatMap(\.operations).contains { $0.kind == .renameEntity && $0.entity == "Customer" })

    let container = try PersistentContainer(
      name: "Orders", model: ManagedObjectModel(Order.self, Customer.self), storeURL: url)
    let values = try container.viewContext.performAndWait { context in
      let order = try context.fetch(FetchRequest<Order>()).first
      let customer = try context.fetch(FetchRequest<Customer>()).first
      return [order?.client, order?.trackingNumber ?? "nil", order.map { String($0.priority) }, customer?.name]
    }
    #expect(values == ["ada", "nil", "3", "grace"])
  }

  @Test func withInferenceOffTheOpenSaysAPlanIsNeeded() throws {
    let url: URL
    do {
      url = try PersistentContainer.makeTest(model: ManagedObjectModel(MigrationDocVersion1.Order.self))
        .persistentStore.url
    }
    var options = StoreOptions()
    options.shouldInferMappingModelAutomatically = false
    #expect(throws: MigrationError.self) {
      try PersistentContainer(
        name: "Orders", model: ManagedObjectModel(MigrationDoc.Order.self), storeURL: url, options: options)
    }
  }
}

/// docs/migration.md's staged migration, run: three versions of a customer, a custom stage
/// that splits a name.
enum MigrationPlanDoc {
  final class CustomerV1: ManagedObject {
    override class var entityName: String { "Customer" }
    @Attribute var name: String = ""
  }

  final class CustomerV2: ManagedObject {
    override class var entityName: String { "Customer" }
    @Attribute var name: String = ""
    @Attribute var firstName: String = ""
    @Attribute var lastName: String = ""
  }

  final class CustomerV3: ManagedObject {
    override class var entityName: String { "Customer" }
    @Attribute var firstName: String = ""
    @Attribute var lastName: String = ""
  }

  static func open(_ url: URL) throws -> PersistentContainer {
    let plan = MigrationPlan(
      versions: [
        .init("1", try ManagedObjectModel(CustomerV1.self)),
        .init("2", try ManagedObjectModel(CustomerV2.self)),
        .init("3", try ManagedObjectModel(CustomerV3.self)),
      ],
      stages: [
        .custom(didMigrate: { context in
          for customer in try context.fetch(FetchRequest<CustomerV2>()) {
            let parts = customer.name.split(separator: " ", maxSplits: 1)
            customer.firstName = parts.first.map(String.init) ?? ""
            customer.lastName = parts.count > 1 ? String(parts[1]) : ""
          }
        }),
        .lightweight,
      ])
    let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url)
    return container
  }

  /// The page's stage over many rows: a page at a time, each saved and then forgotten.
  static let batchedStage = MigrationStage.custom(didMigrate: { context in
    var request = FetchRequest<CustomerV2>()  // in primary-key order
    request.fetchLimit = 10_000
    while true {
      let page = try context.fetch(request)
      for customer in page {
        let parts = customer.name.split(separator: " ", maxSplits: 1)
        customer.firstName = parts.first.map(String.init) ?? ""
      }
      try context.save()
      context.reset()
      if page.count < 10_000 { break }
      request.fetchOffset += 10_000
    }
  })
}

@Suite struct MigrationPlanDocTests {
  @Test func thePagesPlanTakesAVersion1StoreToVersion3() throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: ManagedObjectModel(MigrationPlanDoc.CustomerV1.self))
      try container.viewContext.performAndWait { context in
        MigrationPlanDoc.CustomerV1(context: context).name = "Ada Lovelace"
        try context.save()
      }
      url = container.persistentStore.url
    }
    let container = try MigrationPlanDoc.open(url)
    let names = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<MigrationPlanDoc.CustomerV3>()).map { "\($0.firstName)|\($0.lastName)" }
    }
    #expect(names == ["Ada|Lovelace"])
  }

  @Test func theBatchedStageFillsEveryRowAPageAtATime() throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: ManagedObjectModel(MigrationPlanDoc.CustomerV1.self))
      try container.viewContext.performAndWait { context in
        _ = try context.execute(
          BatchInsertRequest<MigrationPlanDoc.CustomerV1>(count: 25_000) { index, customer in
            customer.name = "First\(index) Last"
          })
      }
      url = container.persistentStore.url
    }
    let plan = MigrationPlan(
      versions: [
        .init("1", try ManagedObjectModel(MigrationPlanDoc.CustomerV1.self)),
        .init("2", try ManagedObjectModel(MigrationPlanDoc.CustomerV2.self)),
      ],
      stages: [MigrationPlanDoc.batchedStage])
    let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url)
    let empty = try container.viewContext.performAndWait { context in
      try context.count(for: FetchRequest<MigrationPlanDoc.CustomerV2>(predicate: #Predicate { $0.firstName == "" }))
    }
    #expect(empty == 0)
  }

  @Test func plansIgnoreTheInferenceSwitchButNotTheMigrationSwitch() throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: ManagedObjectModel(MigrationPlanDoc.CustomerV1.self))
      url = container.persistentStore.url
    }
    let plan = MigrationPlan(
      versions: [
        .init("1", try ManagedObjectModel(MigrationPlanDoc.CustomerV1.self)),
        .init("2", try ManagedObjectModel(MigrationPlanDoc.CustomerV2.self)),
      ],
      stages: [.lightweight])
    var options = StoreOptions()
    options.shouldMigrateStoreAutomatically = false
    #expect(throws: StoreError.self) {
      try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url, options: options)
    }
    options = StoreOptions()
    options.shouldInferMappingModelAutomatically = false
    _ = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url, options: options)
  }
}
