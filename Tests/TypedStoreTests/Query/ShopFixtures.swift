import Foundation
import TypedStore

// A shop, for decimals and reports: customers (VIPs are a subentity) with orders (rush orders
// are a subentity) whose totals and tips are decimals, and a receipt per order, the side of a
// one-to-one whose key the order holds.

class Customer: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .nullify) var orders: Set<Order>
}

final class VIPCustomer: Customer {
  @Attribute var tier: Int = 0
}

class Order: ManagedObject {
  @Attribute var number: Int = 0
  @Attribute var total: Decimal = 0
  @Attribute var tip: Decimal? = nil
  @Relationship(inverse: \Customer.orders, deleteRule: .nullify) var customer: Customer?
  @Relationship(deleteRule: .cascade) var receipt: Receipt?
}

final class RushOrder: Order {
  @Attribute var fee: Decimal = 0
}

/// The other side of a one-to-one whose key `Order` holds.
final class Receipt: ManagedObject {
  @Attribute var code: String = ""
  @Relationship(inverse: \Order.receipt) var order: Order?
}

let shopModel: ManagedObjectModel = {
  do {
    return try ManagedObjectModel(Customer.self, VIPCustomer.self, Order.self, RushOrder.self, Receipt.self)
  } catch {
    fatalError("shop model: \(error)")
  }
}()

extension Decimal {
  /// A decimal written as text, read as Foundation reads it, or NaN, in the tests.
  init(_ text: String) {
    self = text == "NaN" ? .nan : Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
  }
}
