import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// Aggregates on PostgreSQL give a store file's answers, which are Swift's: `min` and `max` of
/// strings by Swift's order, groups of strings by canonical equivalence, decimals by value
/// (NaN first), exact sums of decimals; these are computed in Swift over the values SQL reads.
@Suite struct PostgreSQLAggregateTests {
  /// The same people and orders in a store of each engine.
  private static func stores() throws -> (file: PersistentContainer, postgreSQL: PersistentContainer, schema: String) {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let model = try ManagedObjectModel(
      Person.self, Customer.self, VIPCustomer.self, Order.self, RushOrder.self, Receipt.self)
    let file = try PersistentContainer.makeTest(model: model)
    let url = URL(string: server.url + (server.url.contains("?") ? "&" : "?") + "schema=\(schema)")!
    let postgreSQL = try PersistentContainer(name: "Aggregates", model: model, storeURL: url)
    for container in [file, postgreSQL] {
      let context = container.newModelContext()
      for index in 0..<40 {
        let person = Person(context: context)
        // "café" composed and decomposed: one group, and equal in Swift's order.
        person.name = ["b", "café", "a", "cafe\u{301}", "Z", "é"][index % 6] + (index % 4 == 0 ? "" : "\(index % 3)")
        person.nickname = index % 2 == 0 ? nil : ["n", "\u{212B}", "\u{00C5}"][index % 3]  // Å as Angstrom and A-ring
        person.age = index * 3 % 17
        person.score = Double(index) / 3
        person.status = [Status.draft, .published, .archived][index % 3]
      }
      let customers = (0..<3).map { index in
        let customer = Customer(context: context)
        customer.name = "c\(index)"
        return customer
      }
      for (number, total) in ["1", "1.00", "9", "9.5", "10", "100", "-2.25", "0.1", "0.3", "NaN", "0.30"].enumerated() {
        let order = Order(context: context)
        order.number = number
        order.total = Decimal(total)
        order.tip = number % 3 == 0 ? nil : Decimal(number) / 10
        order.customer = number % 4 == 3 ? nil : customers[number % 3]
      }
      try context.save()
    }
    return (file, postgreSQL, schema)
  }

  /// Every aggregate of the test, as text.
  private static func aggregates(_ context: ModelContext) throws -> [String] {
    let people = FetchRequest<Person>(predicate: #Predicate { $0.age > 2 })
    let orders = FetchRequest<Order>(predicate: #Predicate { $0.number != 9 })  // without the NaN
    let all = FetchRequest<Order>()
    var results: [String] = [
      "min name \(try context.aggregate(.min(\.name), for: people) ?? "nil")",
      "max name \(try context.aggregate(.max(\.name), for: people) ?? "nil")",
      "min nickname \(try context.aggregate(.min(\.nickname), for: people) ?? "nil")",
      "count people \(try context.aggregate(.count, for: people))",
      "sum total \(try context.aggregate(.sum(\.total), for: orders))",
      "average total \(String(describing: try context.aggregate(.average(\.total), for: orders)))",
      "min total \(String(describing: try context.aggregate(.min(\.total), for: all)))",
      "max total \(String(describing: try context.aggregate(.max(\.total), for: all)))",
      "sum tip \(try context.aggregate(.sum(\.tip), for: all))",
      "sum total with NaN \(try context.aggregate(.sum(\.total), for: all))",
    ]
    let byName = try context.aggregate(.count, for: FetchRequest<Person>(), groupedBy: \.name)
    results += byName.map { "count by name \($0.key.decomposedStringWithCanonicalMapping): \($0.value)" }.sorted()
    let ages = try context.aggregate(.max(\.age), for: FetchRequest<Person>(), groupedBy: \.nickname)
    results += ages.map { "max age by nickname \($0.key ?? "nil"): \(String(describing: $0.value))" }.sorted()
    let scores = try context.aggregate(.sum(\.score), for: people, groupedBy: \.name)
    results += scores.map { "sum score by name \($0.key.decomposedStringWithCanonicalMapping): \($0.value)" }.sorted()
    let totals = try context.aggregate(.sum(\.total), for: orders, groupedBy: \.customer)
    results += totals.map { "sum total by customer \($0.key?.primaryKey ?? -1): \($0.value)" }.sorted()
    let byTotal = try context.aggregate(.count, for: all, groupedBy: \.total)
    results += byTotal.map { "count by total \($0.key.isNaN ? "NaN" : "\($0.key)"): \($0.value)" }.sorted()
    return results
  }

  @Test func aggregatesOfStringsAndDecimalsAnswerAsOnAStoreFile() throws {
    let (file, postgreSQL, schema) = try Self.stores()
    defer {
      if let admin = try? PostgreSQLConnection(url: PostgreSQLTestServer.server().url) {
        _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE")
      }
    }
    let expected = try Self.aggregates(file.newModelContext())
    let found = try Self.aggregates(postgreSQL.newModelContext())
    #expect(
      found == expected,
      "PostgreSQL: \(found.filter { !expected.contains($0) }) file: \(expected.filter { !found.contains($0) })")

    // Swift's own answers over the same objects.
    let context = postgreSQL.newModelContext()
    let people = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age > 2 }))
    #expect(
      try context.aggregate(.min(\.name), for: FetchRequest<Person>(predicate: #Predicate { $0.age > 2 }))
        == people.map(\.name).min())
    let names = try context.aggregate(.count, for: FetchRequest<Person>(), groupedBy: \.name)
    let objects = try context.fetch(FetchRequest<Person>())
    #expect(names == Dictionary(grouping: objects, by: \.name).mapValues(\.count))
  }
}
