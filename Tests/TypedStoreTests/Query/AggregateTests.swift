import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct AggregateTests {
  func people(function: String = #function) async throws -> PeopleStore {
    try await PeopleStore(
      function: function,
      { index, person in
        person.name = ["b", "café", "a", "cafe\u{301}z", "Z"][index % 5] + "\(index)"
        person.age = index * 3 % 17
        person.score = Double(index) / 2
        person.height = index % 3 == 0 ? nil : Float(index)
        person.birthday = index % 4 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(index * 1000))
        person.status = [Status.draft, .published, .archived][index % 3]
        person.nickname = index % 2 == 0 ? nil : "n\(index % 3)"
      }, count: 40)
  }

  @Test func aggregatesEqualSwiftsOverTheSameObjects() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let request = FetchRequest<Person>(predicate: #Predicate { $0.age > 4 })
      let objects = try context.fetch(request)
      #expect(try context.aggregate(.count, for: request) == objects.count)
      #expect(try context.aggregate(.sum(\.age), for: request) == objects.reduce(0) { $0 + $1.age })
      #expect(try context.aggregate(.sum(\.score), for: request) == objects.reduce(0) { $0 + $1.score })
      #expect(try context.aggregate(.min(\.age), for: request) == objects.map(\.age).min())
      #expect(try context.aggregate(.max(\.birthday), for: request) == objects.compactMap(\.birthday).max())
      #expect(try context.aggregate(.min(\.name), for: request) == objects.map(\.name).min())  // Swift's order
      #expect(try context.aggregate(.max(\.name), for: request) == objects.map(\.name).max())
      let average = try #require(try context.aggregate(.average(\.age), for: request))
      #expect(abs(average - Double(objects.reduce(0) { $0 + $1.age }) / Double(objects.count)) < 1e-9)
      #expect(try context.aggregate(.sum(\.height), for: request) == objects.compactMap(\.height).reduce(0, +))
      #expect(try context.aggregate(.min(\.height), for: request) == objects.compactMap(\.height).min())
    }
  }

  @Test func groupedAggregatesAreDictionariesByTheAttributesValues() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let objects = try context.fetch(FetchRequest<Person>())
      let counts = try context.aggregate(.count, for: FetchRequest<Person>(), groupedBy: \.status)
      #expect(counts == Dictionary(grouping: objects, by: \.status).mapValues(\.count))
      let ages = try context.aggregate(.max(\.age), for: FetchRequest<Person>(), groupedBy: \.nickname)
      #expect(ages == Dictionary(grouping: objects, by: \.nickname).mapValues { $0.map(\.age).max() })
    }
  }

  @Test func emptyResultsLimitsAndRefusals() async throws {
    let people = try await people()
    try await people.container.newBackgroundContext().perform { context in
      let none = FetchRequest<Person>(predicate: #Predicate { $0.age > 1000 })
      #expect(try context.aggregate(.count, for: none) == 0)
      #expect(try context.aggregate(.sum(\.age), for: none) == 0)
      #expect(try context.aggregate(.min(\.age), for: none) == nil)
      #expect(try context.aggregate(.average(\.score), for: none) == nil)
      var limited = FetchRequest<Person>(sortBy: [SortDescriptor(\.age, order: .reverse)])
      limited.fetchLimit = 5
      let top = try context.fetch(limited)
      #expect(try context.aggregate(.sum(\.age), for: limited) == top.reduce(0) { $0 + $1.age })
      #expect(throws: FetchError.self) { try context.aggregate(.max(\.token), for: FetchRequest<Person>()) }
    }
  }
}

// MARK: - Money: decimals, and grouping by a to-one relationship

@Suite struct MoneyAggregateTests {
  /// Amounts an order can have: cents, tenths binary floating point cannot hold, negative
  /// refunds, and values of 30 and more significant digits.
  static let amounts = [
    "0", "0.1", "0.2", "19.99", "5.25", "-5.25", "100", "0.01", "1234567890123456789012345678.12",
    "-999999999999999999999999999.999",
  ].map(Decimal.init(_:))

  /// Customers (two of them VIPs, a subentity), and orders (some of them rush orders, a
  /// subentity) with random totals and tips, some without a customer, some with a receipt.
  func shop(seed: UInt64 = 22, function: String = #function) async throws -> PersistentContainer {
    let container = try PersistentContainer.makeTest(model: shopModel, function: function)
    try await container.performBackgroundTask { context in
      var rng = SeededGenerator(state: seed)
      func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
      let customers: [Customer] = (0..<6).map { index in
        let customer = index % 3 == 0 ? VIPCustomer(context: context) : Customer(context: context)
        customer.name = "customer \(index)"
        return customer
      }
      for number in 0..<80 {
        let order = number % 5 == 0 ? RushOrder(context: context) : Order(context: context)
        order.number = number
        order.total = pick(Self.amounts)
        order.tip = Bool.random(using: &rng) ? nil : pick(Self.amounts)
        order.customer = Int.random(in: 0..<7, using: &rng) == 0 ? nil : pick(customers)
        if number % 4 == 0 {
          let receipt = Receipt(context: context)
          receipt.code = "r\(number)"
          receipt.order = order
        }
      }
      try context.save()
    }
    return container
  }

  /// Swift's sum and mean of decimals, as the aggregates are documented to give them.
  static func sum(_ values: [Decimal]) -> Decimal { values.reduce(0, +) }
  static func average(_ values: [Decimal]) -> Decimal? {
    values.isEmpty ? nil : sum(values) / Decimal(values.count)
  }

  @Test func decimalAggregatesEqualSwiftsOverTheSameObjects() async throws {
    let container = try await shop()
    try await container.newBackgroundContext().perform { context in
      let fifty = Decimal(50)
      var limited = FetchRequest<Order>(sortBy: [SortDescriptor(\.number, order: .reverse)])
      limited.fetchLimit = 7
      var ownOnly = FetchRequest<Order>()
      ownOnly.includesSubentities = false
      for request in [
        FetchRequest<Order>(), FetchRequest<Order>(predicate: #Predicate { $0.total > fifty }), limited, ownOnly,
        FetchRequest<Order>(predicate: #Predicate { $0.total > fifty && $0.total < fifty }),
      ] {
        let objects = try context.fetch(request)
        let totals = objects.map(\.total)
        let tips = objects.compactMap(\.tip)
        #expect(try context.aggregate(.sum(\.total), for: request) == Self.sum(totals))
        #expect(try context.aggregate(.sum(\.tip), for: request) == Self.sum(tips))
        #expect(try context.aggregate(.min(\.total), for: request) == totals.min())
        #expect(try context.aggregate(.max(\.total), for: request) == totals.max())
        #expect(try context.aggregate(.min(\.tip), for: request) == tips.min())
        #expect(try context.aggregate(.max(\.tip), for: request) == tips.max())
        let average = try context.aggregate(.average(\.total), for: request)
        #expect(average == Self.average(totals))
        #expect(try context.aggregate(.average(\.tip), for: request) == Self.average(tips))
        // Asked as a Double, the same mean, as the nearest Double.
        let asDouble: Double? = try context.aggregate(.average(\.total), for: request)
        #expect(asDouble == average.flatMap { Double($0.description) })
        #expect(try context.aggregate(.count, for: request) == objects.count)
      }
    }
  }

  /// Makes the store's orders those of these totals; a request for them all.
  static func replaceOrders(_ totals: [String], in context: isolated ManagedObjectContext) throws -> FetchRequest<Order>
  {
    for old in try context.fetch(FetchRequest<Order>()) { context.delete(old) }
    for total in totals { Order(context: context).total = Decimal(total) }
    try context.save()
    return FetchRequest<Order>()
  }

  @Test func decimalSumsAreExact() async throws {
    let container = try PersistentContainer.makeTest(model: shopModel)
    try await container.newBackgroundContext().perform { context in
      // Ten dimes are a dollar, where ten Doubles of 0.1 are not 1.
      #expect(
        try context.aggregate(.sum(\.total), for: Self.replaceOrders(Array(repeating: "0.1", count: 10), in: context))
          == 1)
      #expect((0..<10).reduce(0.0) { sum, _ in sum + 0.1 } != 1)
      #expect(try context.aggregate(.average(\.total), for: FetchRequest<Order>()) == Decimal("0.1"))
      // Thirty and more significant digits, none lost.
      let long = ["1234567890123456789012345678901.25", "98765432109876543210.5", "0.26", "-0.01"]
      #expect(
        try context.aggregate(.sum(\.total), for: Self.replaceOrders(long, in: context))
          == Decimal("1234567890222222221122222222112"))
      #expect(Self.sum(long.map(Decimal.init(_:))) == Decimal("1234567890222222221122222222112"))
      #expect(
        try context.aggregate(.average(\.total), for: FetchRequest<Order>()) == Self.average(long.map(Decimal.init(_:)))
      )
      // Where Swift's own sum depends on the order of the rows, a typed error: 10^38 + 0.5 has
      // 40 digits, and Swift's `+` drops the half, so that 10^38 + 0.5 - 10^38 is 0 in this
      // order and 0.5 in another.
      let huge = "100000000000000000000000000000000000000"
      let dependent = try Self.replaceOrders([huge, "0.5", "-" + huge], in: context)
      #expect(Decimal(huge) + Decimal("0.5") - Decimal(huge) != Decimal(huge) - Decimal(huge) + Decimal("0.5"))
      #expect(throws: FetchError.self) { try context.aggregate(.sum(\.total), for: dependent) }
      #expect(throws: FetchError.self) { try context.aggregate(.average(\.total), for: dependent) }
      // NaN is a Decimal like any other: it makes the sum NaN and is the smallest value.
      let withNaN = try Self.replaceOrders(["1", "NaN", "2"], in: context)
      #expect(try context.aggregate(.sum(\.total), for: withNaN).isNaN)
      #expect(try context.aggregate(.min(\.total), for: withNaN)?.isNaN == true)
      #expect(try context.aggregate(.max(\.total), for: withNaN) == [Decimal(1), .nan, 2].max())
      #expect(try context.aggregate(.average(\.total), for: withNaN)?.isNaN == true)
      // The largest Decimal alone is its own sum; twice it is beyond what a sum holds exactly.
      let max = Decimal.greatestFiniteMagnitude.description
      #expect(
        try context.aggregate(.sum(\.total), for: Self.replaceOrders([max], in: context)) == .greatestFiniteMagnitude)
      let twice = try Self.replaceOrders([max, max], in: context)
      #expect(throws: FetchError.self) { try context.aggregate(.sum(\.total), for: twice) }
      // No rows, or only nil: what the other aggregates give.
      let none = try Self.replaceOrders([], in: context)
      #expect(try context.aggregate(.sum(\.total), for: none) == 0)
      #expect(try context.aggregate(.sum(\.tip), for: none) == 0)
      #expect(try context.aggregate(.min(\.total), for: none) == nil)
      #expect(try context.aggregate(.average(\.total), for: none) == nil)
      _ = try Self.replaceOrders(["3"], in: context)
      #expect(try context.aggregate(.sum(\.tip), for: FetchRequest<Order>()) == 0)
      #expect(try context.aggregate(.average(\.tip), for: FetchRequest<Order>()) == nil)
    }
  }

  @Test func groupingByADecimalMakesOneGroupOfEqualValues() async throws {
    let container = try await shop()
    // Another tool writes 19.99 as 19.990 and 100 as 1e2: the same values in Swift.
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
    try connection.execute(#"UPDATE "Order" SET "total" = '19.990' WHERE "total" = '19.99' AND "number" % 2 = 0"#)
    try connection.execute(#"UPDATE "Order" SET "total" = '1e2' WHERE "total" = '100' AND "number" % 2 = 0"#)
    #expect(try connection.scalarInt(#"SELECT count(*) FROM "Order" WHERE "total" IN ('19.990', '1e2')"#) ?? 0 > 0)
    try await container.newBackgroundContext().perform { context in
      let objects = try context.fetch(FetchRequest<Order>())
      let counts = try context.aggregate(.count, for: FetchRequest<Order>(), groupedBy: \.total)
      #expect(counts == Dictionary(grouping: objects, by: \.total).mapValues(\.count))
      let tips = try context.aggregate(.sum(\.tip), for: FetchRequest<Order>(), groupedBy: \.total)
      #expect(tips == Dictionary(grouping: objects, by: \.total).mapValues { Self.sum($0.compactMap(\.tip)) })
      let fifty = Decimal(50)
      #expect(
        try context.fetch(FetchRequest<Order>(predicate: #Predicate { $0.total > fifty })).count
          == objects.filter { $0.total > fifty }.count)
    }
  }

  @Test func groupingByAToOneRelationshipKeysEachGroupByTheRelatedObjectsID() async throws {
    let container = try await shop()
    try await container.newBackgroundContext().perform { context in
      let fifty = Decimal(50)
      var limited = FetchRequest<Order>(sortBy: [SortDescriptor(\.number)])
      limited.fetchLimit = 9
      limited.fetchOffset = 3
      var ownOnly = FetchRequest<Order>(predicate: #Predicate { $0.total < fifty })
      ownOnly.includesSubentities = false
      for request in [
        FetchRequest<Order>(), FetchRequest<Order>(predicate: #Predicate { $0.total < fifty }), limited, ownOnly,
      ] {
        let groups = Dictionary(grouping: try context.fetch(request)) { $0.customer?.managedID }
        let revenue: [ManagedID<Customer>?: Decimal] = try context.aggregate(
          .sum(\.total), for: request, groupedBy: \.customer)
        #expect(revenue == groups.mapValues { Self.sum($0.map(\.total)) })
        #expect(try context.aggregate(.count, for: request, groupedBy: \.customer) == groups.mapValues(\.count))
        #expect(
          try context.aggregate(.max(\.total), for: request, groupedBy: \.customer)
            == groups.mapValues { $0.map(\.total).max() })
        #expect(
          try context.aggregate(.average(\.tip), for: request, groupedBy: \.customer)
            == groups.mapValues { Self.average($0.compactMap(\.tip)) })
      }
      // A group for the orders without a customer, and the IDs of VIPs name their entity.
      let counts = try context.aggregate(.count, for: FetchRequest<Order>(), groupedBy: \.customer)
      #expect(counts[nil] ?? 0 > 0)
      let vips = try context.fetch(FetchRequest<VIPCustomer>())
      #expect(!vips.isEmpty)
      for vip in vips {
        let id = try #require(vip.managedID.untyped.typed(as: Customer.self))
        #expect(id.untyped.entityName == "VIPCustomer")
        #expect(counts[id] == vip.orders.count)
      }
      // A to-many is no grouping: an object would be in several groups.
      #expect(throws: FetchError.self) {
        try context.aggregate(.count, for: FetchRequest<Customer>(), groupedBy: \.orders)
      }
      // A subentity's request groups by the relationship it inherits.
      let rush = try context.fetch(FetchRequest<RushOrder>())
      #expect(
        try context.aggregate(.sum(\.fee), for: FetchRequest<RushOrder>(), groupedBy: \.customer)
          == Dictionary(grouping: rush) { $0.customer?.managedID }.mapValues { Self.sum($0.map(\.fee)) })
    }
  }

  @Test func groupingByTheSideOfAOneToOneThatHoldsNoKey() async throws {
    let container = try await shop()
    try await container.newBackgroundContext().perform { context in
      let receipts = try context.fetch(FetchRequest<Receipt>())
      #expect(!receipts.isEmpty)
      let unrelated = Receipt(context: context)
      unrelated.code = "none"
      try context.save()
      let counts = try context.aggregate(.count, for: FetchRequest<Receipt>(), groupedBy: \.order)
      let all = try context.fetch(FetchRequest<Receipt>())
      #expect(counts == Dictionary(grouping: all) { $0.order?.managedID }.mapValues(\.count))
      #expect(counts[nil] == 1)
      // An order that is a rush order is named so.
      #expect(counts.keys.contains { $0?.untyped.entityName == "RushOrder" })
    }
  }

  @Test func groupingByARelationshipReadsTheSavedRowsWithUnsavedChangesAsAllAggregatesDo() async throws {
    let container = try await shop()
    let context = container.newModelContext()
    func revenue(_ orders: [Order]) -> [ManagedID<Customer>?: Decimal] {
      Dictionary(grouping: orders) { $0.customer?.managedID }.mapValues { Self.sum($0.map(\.total)) }
    }
    let saved = revenue(try context.fetch(FetchRequest<Order>()))
    // Unsaved: a new order of a saved customer, a new customer with an order, an order moved
    // to another customer, an order's customer removed, an order deleted, a total changed.
    let orders = try context.fetch(FetchRequest<Order>(sortBy: [SortDescriptor(\.number)]))
    let customers = try context.fetch(FetchRequest<Customer>(sortBy: [SortDescriptor(\.name)]))
    let extra = Order(context: context)
    extra.total = Decimal("7.77")
    extra.customer = customers[1]
    let newcomer = VIPCustomer(context: context)
    newcomer.name = "newcomer"
    let first = Order(context: context)
    first.total = Decimal("12.34")
    first.customer = newcomer
    orders[0].customer = customers[2]
    orders[1].customer = nil
    context.delete(orders[2])
    orders[3].total += Decimal("0.01")
    #expect(context.hasChanges)
    #expect(try context.aggregate(.sum(\.total), for: FetchRequest<Order>(), groupedBy: \.customer) == saved)
    try context.save()
    let now = try context.aggregate(.sum(\.total), for: FetchRequest<Order>(), groupedBy: \.customer)
    #expect(now == revenue(try context.fetch(FetchRequest<Order>())))
    #expect(now != saved)
    let newcomerID = try #require(newcomer.managedID.untyped.typed(as: Customer.self))
    #expect(now[newcomerID] == Decimal("12.34"))
  }
}
