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
