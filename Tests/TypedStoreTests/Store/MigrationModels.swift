import Foundation
import TypedStore

// Versions of an order service's model, for the migration tests. Every class stores itself
// as the entity its version calls it (`entityName`), so one test module holds them all.

/// Version 1: an order with a column of each kind the tests migrate.
final class OrderV1: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// Adds an optional attribute.
final class OrderAddOptional: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Attribute var trackingNumber: String? = nil
}

/// Adds a required attribute with a default.
final class OrderAddDefault: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Attribute var priority: Int = 3
}

/// Adds a required attribute whose default differs per object: not inferable.
final class OrderAddUUID: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Attribute var token: UUID = UUID()
}

/// Removes `receipt`.
final class OrderRemove: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
}

/// Renames `customer` to `client`.
final class OrderRename: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute(originalName: "customer") var client: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// `customer` becomes optional.
final class OrderToOptional: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String? = nil
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// `note` becomes required, with a default.
final class OrderToRequired: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String = "none"
  @Attribute var receipt: Data? = nil
}

/// `placed` becomes required, with a default that differs per object: not inferable.
final class OrderToRequiredNow: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date = Date()
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// `number` changes type: not inferable.
final class OrderTypeChange: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: String = ""
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// `customer` becomes unique and `number` indexed.
final class OrderUnique: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute(indexed: true) var number: Int = 0
  @Attribute(unique: true) var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// The order renamed `Purchase`.
final class PurchaseV2: ManagedObject {
  override class var entityName: String { "Purchase" }
  override class var originalEntityName: String? { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
}

/// An entity whose name sorts before `Order`: adding it moves `Order`'s entity code.
final class Invoice: ManagedObject {
  @Attribute var amount: Double = 0
}

/// A refund, added in version 2 with a to-one to its order.
final class Refund: ManagedObject {
  @Attribute var amount: Double = 0
  @Relationship(inverse: \OrderWithRefunds.refunds) var order: OrderWithRefunds?
}

/// The order of version 2 with refunds.
final class OrderWithRefunds: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Relationship(deleteRule: .cascade) var refunds: Set<Refund>
}

/// A label, added with a many-to-many to orders.
final class Label: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \OrderWithLabels.labels) var orders: Set<OrderWithLabels>
}

/// The order with labels.
final class OrderWithLabels: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Relationship(deleteRule: .nullify) var labels: Set<Label>
}

/// A ticket whose code is kept in the tombstone of a deleted ticket.
final class TicketV1: ManagedObject {
  override class var entityName: String { "Ticket" }
  @Attribute(preservedOnDeletion: true) var code: String = ""
}

/// The ticket with `code` renamed `reference`.
final class TicketV2: ManagedObject {
  override class var entityName: String { "Ticket" }
  @Attribute(originalName: "code", preservedOnDeletion: true) var reference: String = ""
}

/// A document, version 1: no subentities.
final class DocumentV1: ManagedObject {
  override class var entityName: String { "Document" }
  @Attribute var title: String = ""
}

/// The document of version 2, with a subentity.
class DocumentV2: ManagedObject {
  override class var entityName: String { "Document" }
  @Attribute var title: String = ""
}

/// A subentity added in version 2: its rows share the document table.
final class Memo: DocumentV2 {
  @Attribute var color: String = "red"
}

/// The label with `orders` renamed `purchases`: its join table is renamed.
final class LabelRenamed: ManagedObject {
  override class var entityName: String { "Label" }
  @Attribute var name: String = ""
  @Relationship(inverse: \OrderWithRenamedLabels.labels, originalName: "orders")
  var purchases: Set<OrderWithRenamedLabels>
}

/// The order whose labels' inverse was renamed.
final class OrderWithRenamedLabels: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Relationship(deleteRule: .nullify) var labels: Set<LabelRenamed>
}

/// The refund with `order` renamed `purchase`: its key column is renamed.
final class RefundRenamed: ManagedObject {
  override class var entityName: String { "Refund" }
  @Attribute var amount: Double = 0
  @Relationship(inverse: \OrderWithRenamedRefunds.refunds, originalName: "order") var purchase: OrderWithRenamedRefunds?
}

/// The order whose refunds' inverse was renamed.
final class OrderWithRenamedRefunds: ManagedObject {
  override class var entityName: String { "Order" }
  @Attribute var number: Int = 0
  @Attribute var customer: String = ""
  @Attribute var total: Double = 0
  @Attribute var placed: Date? = nil
  @Attribute var note: String? = nil
  @Attribute var receipt: Data? = nil
  @Relationship(deleteRule: .cascade) var refunds: Set<RefundRenamed>
}
