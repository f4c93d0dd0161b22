import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Async hooks (`HistoryMerger.addHook(_:)` with an async closure): awaited one at a time, in
/// order, before the merge; `stop()` waits for the running one; a throw stops the consumer at
/// its transaction.
@Suite struct AsyncHookTests {
  private func saveNotes(_ count: Int, in container: PersistentContainer) async throws {
    try await save((0..<count).map { "n\($0)" }, in: container)
  }

  @Test func asyncHooksRunOneAtATimeInOrderBeforeTheMerge() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await saveNotes(5, in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "slow", options: options)
    let log = Recorder<String>()
    let running = Atomic<Int>(0)
    merger.addHook { event in
      let concurrent = running.add(1, ordering: .relaxed).newValue
      log.add("begin \(event.transaction.transactionNumber) \(concurrent)")
      try await Task.sleep(for: .milliseconds(5))  // an await: the async overload
      running.subtract(1, ordering: .relaxed)
      log.add("end \(event.transaction.transactionNumber)")
    }
    merger.addHook { event in log.add("sync \(event.transaction.transactionNumber)") }
    try await merger.start()  // returns once caught up: every hook has run
    await merger.stop()
    let expected = (1...5).flatMap { ["begin \($0) 1", "end \($0)", "sync \($0)"] }
    #expect(log.all == expected)
  }

  @Test func stopWaitsForTheRunningHookAndTheCheckpointIncludesItsTransaction() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let merger = try HistoryMerger(container: container, consumer: "slow")
    let started = Recorder<Int64>()
    let finished = Atomic<Bool>(false)
    merger.addHook { event in
      started.add(event.transaction.transactionNumber)
      try await Task.sleep(for: .milliseconds(300))
      finished.store(true, ordering: .releasing)
    }
    try await merger.start()
    try await saveNotes(1, in: container)
    #expect(await started.wait(for: 1))
    await merger.stop()
    let hookFinished = finished.load(ordering: .acquiring)
    #expect(hookFinished, "stop() returned only after the hook did")
    let row = try container.persistentStore.historyConsumers().first { $0.name == "slow" }
    #expect(row?.checkpoint.transactionNumber == started.all.first)
  }

  @Test func anAsyncHookThatThrowsStopsTheConsumerAtItsTransaction() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await saveNotes(3, in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "failing", options: options)
    merger.addHook { event in
      try await Task.sleep(for: .milliseconds(1))
      if event.transaction.transactionNumber == 2 { throw CocoaError(.featureUnsupported) }
    }
    await #expect(throws: CocoaError.self) { try await merger.start() }
    #expect(!merger.isRunning)
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 1)
  }

  @Test func underLoadEveryTransactionIsProcessedOnceInOrder() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let merger = try HistoryMerger(container: container, consumer: "busy")
    let log = Recorder<Int64>()
    merger.addHook { event in
      if event.transaction.transactionNumber % 7 == 0 { try await Task.sleep(for: .milliseconds(2)) }
      log.add(event.transaction.transactionNumber)
    }
    try await merger.start()
    let start = try container.currentHistoryToken.transactionNumber
    // Two writers at once, 150 saves each, while the hook keeps the merger behind.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<2 { group.addTask { try await saveNotes(150, in: container) } }
      try await group.waitForAll()
    }
    #expect(await log.wait(for: 300))
    await merger.stop()
    #expect(log.all == Array((start + 1)...(start + 300)))
  }
}
