// An order service on one host, three processes and one store (docs/merging.md, "An order
// service"):
//
//   swift run typedstore-order-service api /tmp/orders.sqlite 100        # inserts 100 orders
//   swift run typedstore-order-service payments /tmp/orders.sqlite 100   # pays them, a few a save
//   swift run typedstore-order-service service /tmp/orders.sqlite /tmp/events.log
//
// The service runs two durable consumers. The shipper marks each paid order shipped and
// writes one outgoing message for it into the store, exactly once, with its checkpoint. The
// courier delivers each message (a line in the events file, with the change's key, fsynced)
// and deletes it with its checkpoint: at least once, never lost. Kill the service with
// SIGKILL at any moment and start it again: nothing is shipped twice or lost; a message may
// be delivered again, with the same key. SIGTERM stops it cleanly: the running hooks finish,
// the checkpoints are written, it prints "stopped" and exits 0.
//
// ORDER_SERVICE_KILL_AFTER_DELIVERIES=<n> makes the service kill itself (SIGKILL) right after
// its n-th delivery, before the message leaves the outbox: the next run delivers that message
// again, with the same key.
import Foundation
import Synchronization
import TypedStore

final class Order: ManagedObject {
  @Attribute var number: Int = 0
  @Attribute var isPaid = false
  @Attribute var isShipped = false
  /// How many times the shipper shipped it: 1 for every paid order, whatever was killed.
  @Attribute var shipments: Int = 0
}

final class OutboxMessage: ManagedObject {
  @Attribute var key: String = ""
  @Attribute var body: String = ""
}

/// The events file: each delivered message as a line "<key> <body>", written and fsynced
/// before the message leaves the outbox.
final class EventLog: Sendable {
  private let descriptor: Int32

  /// Opens the file for appending; a last line cut short (power lost while it was written)
  /// is cut off, so every line in the file is whole.
  init(path: String) throws {
    let existing = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
    if let last = existing.lastIndex(of: UInt8(ascii: "\n")), last + 1 < existing.count {
      try existing.prefix(through: last).write(to: URL(fileURLWithPath: path))
    } else if !existing.isEmpty && existing.last != UInt8(ascii: "\n") {
      try Data().write(to: URL(fileURLWithPath: path))
    }
    descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
    guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
  }

  func deliver(_ body: String, key: String) throws {
    let line = Array("\(key) \(body)\n".utf8)
    let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == line.count, fsync(descriptor) == 0 else { throw CocoaError(.fileWriteUnknown) }
  }
}

/// Prints a line at once (`print` buffers when the output is a pipe, and a killed process
/// would take the line with it).
func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func openStore(_ path: String) throws -> PersistentContainer {
  try PersistentContainer(
    name: "Orders", model: ManagedObjectModel(Order.self, OutboxMessage.self), storeURL: URL(fileURLWithPath: path))
}

/// The shipper: paid orders are shipped once, each with its outgoing message.
func startShipper(_ container: PersistentContainer) async throws -> HistoryMerger {
  var options = HistoryMerger.Options()
  options.startsAt = .beginning
  options.authors = ["payments"]
  let shipper = try HistoryMerger(container: container, consumer: "shipper", options: options)
  shipper.addTransactionalHook { event, context in
    for change in event.transaction.changes where change.changeType == .update {
      guard let id = change.objectID(as: Order.self), let order = try? context.existingObject(with: id),
        order.isPaid && !order.isShipped
      else { continue }
      order.isShipped = true
      order.shipments += 1
      let message = OutboxMessage(context: context)
      message.key = event.transaction.key(for: change).description
      message.body = "order \(order.number) shipped"
    }
  }
  try await shipper.start()
  return shipper
}

/// The courier: each message delivered with its key, then deleted with the checkpoint.
func startCourier(_ container: PersistentContainer, shipper: HistoryMerger, log: EventLog) async throws
  -> HistoryMerger
{
  var options = HistoryMerger.Options()
  options.startsAt = .beginning
  options.authors = [shipper.effectsAuthor]
  let courier = try HistoryMerger(container: container, consumer: "courier", options: options)
  let killAfter = Int(ProcessInfo.processInfo.environment["ORDER_SERVICE_KILL_AFTER_DELIVERIES"] ?? "")
  let deliveries = Atomic<Int>(0)
  courier.addTransactionalHook { event, context in
    for id in event.inserted(OutboxMessage.self) {
      guard let message = try? context.existingObject(with: id) else { continue }
      try log.deliver(message.body, key: message.key)
      if deliveries.add(1, ordering: .relaxed).newValue == killAfter { kill(getpid(), SIGKILL) }
      context.delete(message)
    }
  }
  try await courier.start()
  return courier
}

/// Runs the service until SIGTERM (or SIGINT): then both consumers stop, each after its
/// running hook, with its checkpoint written.
func runService(store: String, events: String) async throws {
  // Signals first: a SIGTERM that comes while the consumers catch up waits for them.
  let (stopRequests, stopRequested) = AsyncStream<Void>.makeStream()
  let sources = [SIGTERM, SIGINT].map { signal in
    Foundation.signal(signal, SIG_IGN)  // delivered to the source below, not to the default action
    let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
    source.setEventHandler { stopRequested.yield() }
    source.resume()
    return source
  }
  let container = try openStore(store)
  let log = try EventLog(path: events)
  let shipper = try await startShipper(container)
  let courier = try await startCourier(container, shipper: shipper, log: log)
  say("running")
  for await _ in stopRequests { break }
  withExtendedLifetime(sources) {}
  await courier.stop()
  await shipper.stop()
  if let error = shipper.error ?? courier.error { throw error }
  say("stopped")
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
  say("usage: typedstore-order-service api|payments <store> <orders> | service <store> <events file>")
  exit(64)
}
do {
  switch arguments[1] {
  case "api":
    let container = try openStore(arguments[2])
    let count = Int(arguments.count > 3 ? arguments[3] : "") ?? 100
    for number in 1...count {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = "api"
        Order(context: context).number = number
        try context.save()
      }
    }
  case "payments":
    // Pays every order, one to three a save, until the expected number are paid.
    let container = try openStore(arguments[2])
    let count = Int(arguments.count > 3 ? arguments[3] : "") ?? 100
    var paid = 0
    while paid < count {
      paid = try await container.performBackgroundTask { context in
        context.transactionAuthor = "payments"
        var request = FetchRequest<Order>(predicate: #Predicate { !$0.isPaid })
        request.fetchLimit = Int.random(in: 1...3)
        for order in try context.fetch(request) { order.isPaid = true }
        try context.save()
        return try context.count(for: FetchRequest<Order>(predicate: #Predicate { $0.isPaid }))
      }
      if paid < count { try await Task.sleep(for: .milliseconds(2)) }
    }
  case "service" where arguments.count == 4:
    try await runService(store: arguments[2], events: arguments[3])
  default:
    say("unknown role \(arguments[1])")
    exit(64)
  }
} catch {
  say("error: \(error)")
  exit(1)
}
