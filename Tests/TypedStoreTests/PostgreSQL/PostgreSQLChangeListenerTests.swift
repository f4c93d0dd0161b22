import Foundation
import Testing
import TypedStore

@testable import TypedStorePostgreSQL

/// Following a PostgreSQL store's history from another connection, as another host does:
/// every transaction once, in commit order, through concurrent writers, a lost connection and
/// a server restart.
@Suite struct PostgreSQLChangeListenerTests {
  /// What a listener delivered.
  final class Delivered: Sendable {
    let events = Recorder<String>()
    let numbers = Recorder<Int64>()

    func record(_ event: PostgreSQLChangeListener.Event) {
      switch event {
      case .transactions(let transactions):
        for transaction in transactions { numbers.add(transaction.transactionNumber) }
      case .disconnected: events.add("disconnected")
      case .reconnected: events.add("reconnected")
      case .expired(let horizon): events.add("expired: \(horizon.transactionNumber)")
      case .failed(let message): events.add("failed: \(message)")
      case .modelChanged: events.add("model changed")
      }
    }
  }

  /// A store of the Shop model in a new schema of `server`; the listener checks the model.
  private static func store(on server: PostgreSQLTestServer.Server) throws
    -> (schema: String, identifier: UUID, model: ManagedObjectModel)
  {
    let schema = PostgreSQLTestServer.schemaName()
    let model = try ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses)
    let opened = try PostgreSQLStoreTables(schema: schema, model: model).open(
      on: PostgreSQLConnection(url: server.url))
    return (schema, opened.identifier, model)
  }

  private static func record(_ count: Int, author: String, schema: String, server: PostgreSQLTestServer.Server)
    async throws -> String
  {
    try await offThePool {
      let run = try SpawnedProcess(
        builtProduct("typedstore-test-writer"), ["pg-record", server.tcpURL, schema, author, String(count)])
      return run.finish().trimmingCharacters(in: .whitespacesAndNewlines)
    }
  }

  @Test func transactionsOfWriterProcessesArriveOnceEachInCommitOrder() async throws {
    let server = try PostgreSQLTestServer.server()
    let (schema, identifier, model) = try Self.store(on: server)
    let delivered = Delivered()
    let listener = try PostgreSQLChangeListener(
      url: server.tcpURL, schema: schema, storeIdentifier: identifier, model: model, after: 0,
      pollInterval: .seconds(3600), deliver: delivered.record)
    listener.start()
    defer { listener.stop() }
    // The first transaction is read once the listener listens (it listens, then reads): what
    // follows, with the poll an hour away, only the notifications can announce.
    #expect(try await Self.record(1, author: "first", schema: schema, server: server) == "recorded 1")
    #expect(await delivered.numbers.wait(for: 1, seconds: 30))
    try await Task.sleep(for: .milliseconds(50))  // its catch-up read has ended
    async let first = Self.record(30, author: "first", schema: schema, server: server)
    async let second = Self.record(30, author: "second", schema: schema, server: server)
    async let third = Self.record(30, author: "third", schema: schema, server: server)
    #expect(try await [first, second, third] == ["recorded 30", "recorded 30", "recorded 30"])
    #expect(await delivered.numbers.wait(for: 91, seconds: 30))
    #expect(delivered.numbers.all == Array(1...91))
    #expect(delivered.events.all.isEmpty)
    #expect(listener.position == 91)
  }

  @Test func aListenerRidesOutAServerRestartAndMissesNothing() async throws {
    let server = try PostgreSQLTestServer.ownServer()
    let (schema, identifier, model) = try Self.store(on: server)
    #expect(try await Self.record(5, author: "before", schema: schema, server: server) == "recorded 5")
    let delivered = Delivered()
    let listener = try PostgreSQLChangeListener(
      url: server.tcpURL, schema: schema, storeIdentifier: identifier, model: model, after: 2,
      pollInterval: .seconds(3600), retryInterval: .milliseconds(50), deliver: delivered.record)
    listener.start()
    defer { listener.stop() }
    #expect(await delivered.numbers.wait(for: 3, seconds: 30), "it catches up after its position")
    try PostgreSQLTestServer.stop(server)
    #expect(await delivered.events.wait(for: 1, seconds: 30))
    #expect(delivered.events.all == ["disconnected"])
    try PostgreSQLTestServer.restart(server)
    // Committed at once, perhaps before the listener is back: read when it is, not lost.
    #expect(try await Self.record(4, author: "after", schema: schema, server: server) == "recorded 4")
    #expect(await delivered.numbers.wait(for: 7, seconds: 30))
    #expect(delivered.numbers.all == Array(3...9))
    #expect(delivered.events.all == ["disconnected", "reconnected"])
  }
}
