import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// `Decimal` attributes in `#Predicate`: compared, ranged and computed with by value, as
/// Swift's `Decimal` does, whatever the stored text's spelling. (`PredicateDifferentialTests`
/// checks the same on random predicates.)
@Suite struct DecimalPredicateTests {
  /// Orders whose totals text would order wrongly ("10" before "9") and whose tips include
  /// nil; another tool then spells some of them differently ("1.0", "9.50", "1e1").
  func orders(function: String = #function) async throws -> PersistentContainer {
    let container = try PersistentContainer.makeTest(model: shopModel, function: function)
    try await container.performBackgroundTask { context in
      let totals = ["1", "1", "9", "9.5", "10", "100", "-2.25", "0.1", "0.3", "NaN", "12345678901234567890.123456789"]
      for (number, total) in totals.enumerated() {
        let order = Order(context: context)
        order.number = number
        order.total = Decimal(total)
        order.tip = number % 3 == 0 ? nil : Decimal(number) / 10
      }
      try context.save()
    }
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
    try connection.execute(
      #"""
      UPDATE "Order" SET "total" = '1.0' WHERE "number" = 1;
      UPDATE "Order" SET "total" = '9.50' WHERE "number" = 3;
      UPDATE "Order" SET "total" = '1e1' WHERE "number" = 4;
      UPDATE "Order" SET "tip" = '0.20' WHERE "number" = 2
      """#)
    return container
  }

  /// The order numbers SQL selects, and those Swift's evaluation selects.
  func compare(_ container: PersistentContainer, _ predicate: Predicate<Order>) async throws -> ([Int], [Int]) {
    try await container.newBackgroundContext().perform { context in
      let all = try context.fetch(FetchRequest<Order>())
      let swift = try all.filter { try predicate.evaluate($0) }.map(\.number).sorted()
      let sql = try context.fetch(FetchRequest(predicate: predicate)).map(\.number).sorted()
      return (sql, swift)
    }
  }

  @Test func comparisonsRangesAndArithmeticAnswerAsSwiftsDecimal() async throws {
    let container = try await orders()
    let (one, nine, ten, tenth, rate) = (Decimal(1), Decimal(9), Decimal(10), Decimal("0.1"), Decimal("1.5"))
    let (fifth, threeTenths) = (Decimal("0.2"), Decimal("0.3"))
    let range = nine...ten
    let halfOpen = tenth..<one
    let tips: [Decimal?] = [nil, Decimal("0.2")]
    let predicates: [(String, Predicate<Order>)] = [
      ("== 1, stored as 1 and 1.0", #Predicate { $0.total == one }),
      ("!= 1", #Predicate { $0.total != one }),
      ("> 9, which text orders before 10", #Predicate { $0.total > nine }),
      ("<= 10", #Predicate { $0.total <= ten }),
      ("a range in the predicate", #Predicate { (nine...ten).contains($0.total) }),
      ("a half-open range", #Predicate { (tenth..<one).contains($0.total) }),
      ("a captured range", #Predicate { range.contains($0.total) }),
      ("a captured half-open range", #Predicate { halfOpen.contains($0.total) }),
      ("nil tip", #Predicate { $0.tip == nil }),
      ("tip != 0.2, nil included", #Predicate { $0.tip != fifth }),
      ("tips in a list with nil", #Predicate { tips.contains($0.tip) }),
      ("two attributes", #Predicate { $0.total > ($0.tip ?? ten) }),
      ("arithmetic of two attributes", #Predicate { $0.total + ($0.tip ?? tenth) >= ten }),
      ("times a captured rate", #Predicate { $0.total * rate > ten }),
      ("minus, and negation", #Predicate { -($0.total - one) < tenth }),
      ("0.1 + 0.2 == 0.3 exactly", #Predicate { $0.total + tenth + tenth == threeTenths }),
      ("optional chaining", #Predicate { $0.tip.flatMap { $0 * ten > one } ?? false }),
    ]
    for (name, predicate) in predicates {
      let (sql, swift) = try await compare(container, predicate)
      #expect(sql == swift, "\(name)")
    }
  }

  @Test func rangesTranslateUnlessSwiftWouldStopOnThemWhichThrowsBeforeTheStoreIsRead() async throws {
    let container = try await orders()
    let (low, high) = (Decimal(1), Decimal(2))
    let (sql, swift) = try await compare(container, #Predicate { (low...high).contains($0.total) })
    #expect(sql == swift)
    #expect(sql == [0, 1])
    for predicate in [
      #Predicate<Order> { (high...low).contains($0.total) },
      #Predicate<Order> { (high..<low).contains($0.total) },
      #Predicate<Order> { ($0.total...high).contains(low) },
    ] {
      await #expect(throws: PredicateTranslationError.self) {
        try await container.newBackgroundContext().perform { context in
          _ = try context.fetch(FetchRequest(predicate: predicate))
        }
      }
    }
  }

  @Test func theQueriesGuidesExamplesRun() async throws {
    let container = try await orders()
    try await container.newBackgroundContext().perform { context in
      // docs/queries.md, "Decimals compare and compute as Swift's Decimal does"
      let (low, high) = (Decimal(string: "9.99")!, Decimal(100))
      let range = low...high
      let midRange = try context.fetch(FetchRequest<Order>(predicate: #Predicate { range.contains($0.total) }))
      let costly = try context.fetch(FetchRequest<Order>(predicate: #Predicate { $0.total + ($0.tip ?? 0) > high }))
      #expect(midRange.map(\.number).sorted() == [4, 5])
      #expect(costly.map(\.number) == [5, 10])
      // docs/queries.md, "Aggregates"
      let revenue = try context.aggregate(
        .sum(\.total), for: FetchRequest<Order>(predicate: #Predicate { $0.number < 9 }))
      let perCustomer = try context.aggregate(
        .sum(\.total), for: FetchRequest<Order>(predicate: #Predicate { $0.number < 9 }), groupedBy: \.customer)
      #expect(revenue == Decimal("128.65"))
      #expect(perCustomer == [nil: Decimal("128.65")])
    }
  }
}
