import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Where a consumer stands: in its process (`HistoryMerger.status`, `statusUpdates()`,
/// `lag()`), and from the store for any process (`HistoryConsumer.state`, its `failure`), as
/// `typedstore consumers list` shows it.
@Suite struct ConsumerStatusTests {
  private func save(_ count: Int, in container: PersistentContainer) async throws {
    try await TypedStoreTests.save((0..<count).map { "n\($0)" }, in: container)
  }

  private func state(of name: String, in container: PersistentContainer) throws -> HistoryConsumer.State? {
    let store = container.persistentStore
    let (newest, horizon) = (try store.currentHistoryToken(), try store.historyHorizon())
    return try store.historyConsumers().first { $0.name == name }?.state(newest: newest, horizon: horizon)
  }

  @Test func aMergerReportsItsStatusChangesAndItsLag() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(3, in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(
      container: container, consumer: "indexer", contexts: [container.viewContext], options: options)
    let updates = merger.statusUpdates()
    let seen = Recorder<String>()
    let listener = Task {
      for await status in updates {
        switch status {
        case .stopped: seen.add("stopped")
        case .catchingUp: seen.add("catching up")
        case .following: seen.add("following")
        case .failed(_, let number): seen.add("failed at \(number)")
        }
      }
    }
    #expect(
      try merger.lag()
        == HistoryMerger.Lag(
          transactions: 3, oldestUnread: try container.fetchHistory(HistoryRequest()).first?.timestamp))
    try await merger.start()
    #expect(try merger.lag().transactions == 0)
    guard case .following = merger.status else {
      Issue.record("not following: \(merger.status)")
      return
    }
    #expect(try state(of: "indexer", in: container) == .upToDate)
    await merger.stop()
    #expect(await seen.wait(for: 4))
    listener.cancel()
    #expect(seen.all == ["stopped", "catching up", "following", "stopped"])
    try await save(2, in: container)
    #expect(try state(of: "indexer", in: container) == .behind(transactions: 2))
  }

  @Test func aFailureIsRecordedInTheStoreUntilTheConsumerGoesPastIt() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(3, in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let failing = try HistoryMerger(container: container, consumer: "indexer", options: options)
    failing.addHook { event in
      if event.transaction.transactionNumber == 2 { throw CocoaError(.featureUnsupported) }
    }
    await #expect(throws: CocoaError.self) { try await failing.start() }
    guard case .failed(let error, 2) = failing.status else {
      Issue.record("status: \(failing.status)")
      return
    }
    #expect(error is CocoaError)
    guard case .failing(let failure) = try state(of: "indexer", in: container) else {
      Issue.record("state: \(String(describing: try state(of: "indexer", in: container)))")
      return
    }
    #expect(failure.transactionNumber == 2 && failure.message.contains("CocoaError"))
    // Another process's tool shows it as well.
    let listed = try typedstore(["consumers", "list", "--store", container.persistentStore.location])
    #expect(listed.stdout.contains("failing at 2:"), "\(listed.stdout)")
    // A run that processes it clears the record.
    let fixed = try HistoryMerger(
      container: container, consumer: "indexer", contexts: [container.viewContext], options: options)
    try await fixed.start()
    await fixed.stop()
    #expect(try state(of: "indexer", in: container) == .upToDate)
    #expect(try container.persistentStore.historyConsumers().first?.failure == nil)
  }

  @Test func staleAndExpiredConsumersSayWhichTheyAre() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(2, in: container)
    var options = HistoryMerger.Options()
    options.lease = .milliseconds(100)
    let merger = try HistoryMerger(
      container: container, consumer: "short", contexts: [container.viewContext], options: options)
    try await merger.start()
    await merger.stop()
    try await Task.sleep(for: .milliseconds(200))
    #expect(try state(of: "short", in: container) == .stale)
    try await save(2, in: container)
    _ = try HistoryPruner(container: container).prune(.keepLast(1), includingStale: true)
    #expect(try state(of: "short", in: container) == .expired)
  }
}
