import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

/// docs/merging.md's outbox recipe, as written there: a shipper marks paid orders shipped and
/// writes an outgoing message for each, exactly once, with its checkpoint; a courier delivers
/// each message with its per-change key and deletes it when the transport took it.
enum OutboxRecipe {
  final class Order: ManagedObject {
    @Attribute var number: Int = 0
    @Attribute var isPaid = false
    @Attribute var isShipped = false
  }

  final class OutboxMessage: ManagedObject {
    @Attribute var key: String = ""
    @Attribute var body: String = ""
  }

  /// What the courier hands messages to: a message queue, a webhook. This one records them.
  final class Transport: Sendable {
    let sent = Mutex<[(key: String, body: String)]>([])

    func send(_ body: String, idempotencyKey: String) throws {
      sent.withLock { $0.append((idempotencyKey, body)) }
    }
  }

  static func shipper(container: PersistentContainer) async throws -> HistoryMerger {
    let shipper = try HistoryMerger(container: container, consumer: "shipper")
    shipper.addTransactionalHook { event, context in
      for change in event.transaction.changes where change.changeType == .update {
        guard let id = change.objectID(as: Order.self), let order = try? context.existingObject(with: id),
          order.isPaid && !order.isShipped
        else { continue }
        order.isShipped = true
        let message = OutboxMessage(context: context)
        message.key = event.transaction.key(for: change).description
        message.body = "order \(order.number) shipped"
      }
    }
    try await shipper.start()
    return shipper
  }

  static func courier(container: PersistentContainer, shipper: HistoryMerger, transport: Transport) async throws
    -> HistoryMerger
  {
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.authors = [shipper.effectsAuthor]  // only the shipper's messages
    let courier = try HistoryMerger(container: container, consumer: "courier", options: options)
    courier.addTransactionalHook { event, context in
      for id in event.inserted(OutboxMessage.self) {
        guard let message = try? context.existingObject(with: id) else { continue }  // delivered already
        try transport.send(message.body, idempotencyKey: message.key)
        context.delete(message)  // with the checkpoint: the next run does not send it again
      }
    }
    try await courier.start()
    return courier
  }
}

@Suite struct OutboxRecipeTests {
  @Test func everyPaidOrderIsShippedOnceAndItsMessageDeliveredWithItsOwnKey() async throws {
    let model = try ManagedObjectModel(OutboxRecipe.Order.self, OutboxRecipe.OutboxMessage.self)
    let container = try PersistentContainer.makeTest(model: model)
    let transport = OutboxRecipe.Transport()
    let shipper = try await OutboxRecipe.shipper(container: container)
    let courier = try await OutboxRecipe.courier(container: container, shipper: shipper, transport: transport)
    try await container.performBackgroundTask { context in
      context.transactionAuthor = "api"
      for number in 1...6 { OutboxRecipe.Order(context: context).number = number }
      try context.save()
    }
    // Payments: three orders paid in one transaction, one in another; two stay unpaid.
    for numbers in [[1, 2, 3], [5]] {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = "payments"
        for order in try context.fetch(FetchRequest<OutboxRecipe.Order>()) where numbers.contains(order.number) {
          order.isPaid = true
        }
        try context.save()
      }
    }
    var delivered = false
    for _ in 0..<500 where !delivered {
      delivered = transport.sent.withLock { $0.count } >= 4
      try await Task.sleep(for: .milliseconds(10))
    }
    try await Task.sleep(for: .milliseconds(100))  // nothing more arrives
    await courier.stop()
    await shipper.stop()
    let sent = transport.sent.withLock { $0 }
    #expect(sent.map(\.body).sorted() == [1, 2, 3, 5].map { "order \($0) shipped" })
    #expect(Set(sent.map(\.key)).count == 4, "one key per change, also within one transaction")
    let (shipped, outbox) = try await container.performBackgroundTask { context in
      (
        try context.fetch(FetchRequest<OutboxRecipe.Order>()).filter(\.isShipped).map(\.number).sorted(),
        try context.count(for: FetchRequest<OutboxRecipe.OutboxMessage>())
      )
    }
    #expect(shipped == [1, 2, 3, 5])
    #expect(outbox == 0, "each message deleted once delivered")
  }
}
