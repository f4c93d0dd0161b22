import Foundation
import Spawning
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Examples/OrderService, run as a user would run it: an api process inserts orders, a
/// payments process pays them a few at a time, and the service (a shipper with exactly-once
/// effects, a courier delivering an outbox) is killed with SIGKILL at random moments and
/// started again, then stopped with SIGTERM. Every paid order is shipped exactly once, every
/// message is delivered at least once with its own key, and nothing is left in the outbox.
/// `TYPEDSTORE_SOAK=1` runs it with 2,000 orders.
@Suite(.serialized) struct OrderServiceTests {
  private static let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"
  private var service: URL { builtProduct("typedstore-order-service") }

  /// What the store says, read with SQL (the test does not declare the service's classes).
  private struct Tally {
    var orders = 0
    var paid = 0
    var shippedOnce = 0
    var shippedTwice = 0
    var outbox = 0
  }

  private func tally(_ path: String) throws -> Tally {
    let connection = try SQLiteConnection(path: path, mode: .readOnly)
    func count(_ sql: String) throws -> Int { Int(try connection.scalarInt(sql) ?? -1) }
    return Tally(
      orders: try count("SELECT count(*) FROM \"Order\""),
      paid: try count("SELECT count(*) FROM \"Order\" WHERE isPaid"),
      shippedOnce: try count("SELECT count(*) FROM \"Order\" WHERE isShipped AND shipments = 1"),
      shippedTwice: try count("SELECT count(*) FROM \"Order\" WHERE shipments > 1"),
      outbox: try count("SELECT count(*) FROM \"OutboxMessage\""))
  }

  @Test func theServiceKilledAndRestartedShipsOnceAndDeliversEveryMessage() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-order-service")
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let store = folder.appendingPathComponent("orders.sqlite").path
    let events = folder.appendingPathComponent("events.log").path
    let orders = Self.soak ? 2000 : 120
    let service = self.service
    let (kills, outputs) = try await offThePool { () -> (Int, [String]) in
      // The service first: it creates the store, and the api and payments follow. This first
      // run kills itself right after its third delivery, before the message leaves the
      // outbox: the next run delivers it again.
      var running = try SpawnedProcess(
        service, ["service", store, events], environment: ["ORDER_SERVICE_KILL_AFTER_DELIVERIES": "3"])
      #expect(running.waitForLine("running"), "\(running.transcript.all)")
      let api = try SpawnedProcess(service, ["api", store, String(orders)])
      let payments = try SpawnedProcess(service, ["payments", store, String(orders)])
      _ = running.finish(seconds: 60)
      #expect(running.process.terminationStatus != 0, "it killed itself after its third delivery")
      running = try SpawnedProcess(service, ["service", store, events])
      var kills = 0
      let deadline = Date().addingTimeInterval(Self.soak ? 60 : 4)
      while Date() < deadline || kills < 8 {
        Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.3))
        running.kill()
        kills += 1
        running = try SpawnedProcess(service, ["service", store, events])
      }
      let writers = [api.finish(), payments.finish()]
      #expect(running.waitForLine("running"), "\(running.transcript.all)")
      // Caught up: every paid order shipped and every message delivered.
      let caughtUp = Date().addingTimeInterval(60)
      while Date() < caughtUp, let now = try? tally(store),
        now.paid < orders || now.shippedOnce < orders || now.outbox > 0
      {
        Thread.sleep(forTimeInterval: 0.05)
      }
      Foundation.kill(running.process.processIdentifier, SIGTERM)
      let last = running.finish()
      return (kills, writers + [last, String(running.process.terminationStatus)])
    }
    #expect(kills >= 8)
    #expect(outputs[0].isEmpty && outputs[1].isEmpty, "api and payments: \(outputs[0]) \(outputs[1])")
    #expect(outputs[2].contains("stopped"), "SIGTERM stops it cleanly: \(outputs[2])")
    #expect(outputs[3] == "0")
    let final = try tally(store)
    #expect(final.orders == orders && final.paid == orders)
    #expect(final.shippedOnce == orders, "every paid order shipped once")
    #expect(final.shippedTwice == 0)
    #expect(final.outbox == 0)
    // Every message delivered, with one key per order; a repeat has the same key and body.
    let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
    var bodies: [String: String] = [:]
    for line in lines {
      let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
      guard parts.count == 2 else {
        Issue.record("a line without key and body: \(line)")
        continue
      }
      if let earlier = bodies[parts[0]] { #expect(earlier == parts[1], "a repeat carries its message again") }
      bodies[parts[0]] = parts[1]
    }
    #expect(Set(bodies.values) == Set((1...orders).map { "order \($0) shipped" }), "each order's message delivered")
    #expect(bodies.count == orders, "one key per order")
    #expect(lines.count > orders, "the message of the run that killed itself was delivered again")
    print("order service: \(kills) kills, \(lines.count - orders) messages delivered again")

    // Started again after the clean stop: it goes on, and delivers nothing twice.
    let again = try await offThePool { () -> (String, Int) in
      let restarted = try SpawnedProcess(service, ["service", store, events])
      #expect(restarted.waitForLine("running"))
      Thread.sleep(forTimeInterval: 0.3)
      Foundation.kill(restarted.process.processIdentifier, SIGTERM)
      return (restarted.finish(), Int(restarted.process.terminationStatus))
    }
    #expect(again.0.contains("stopped") && again.1 == 0)
    #expect(try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").count == lines.count)
  }
}
