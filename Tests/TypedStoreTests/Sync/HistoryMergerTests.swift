import Foundation
import Spawning
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Transaction numbers a hook saw, in order.
typealias NumberLog = Recorder<Int64>

/// Saves one note per title, each in a transaction of its own.
func save(_ titles: [String], in container: PersistentContainer, author: String? = nil) async throws {
  for title in titles {
    try await container.performBackgroundTask { context in
      context.transactionAuthor = author
      Note(context: context).title = title
      try context.save()
    }
  }
}

private func logging(_ merger: HistoryMerger, into log: NumberLog) {
  merger.addHook { event in log.add(event.transaction.transactionNumber) }
}

@Suite struct HistoryMergerTests {
  @Test func aNewConsumerStartsNowWhenAskedAndProcessesEveryLaterCommitOnceInOrder() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["before"], in: container)
    let start = try container.currentHistoryToken.transactionNumber
    var options = HistoryMerger.Options()
    options.startsAt = .now
    let merger = try HistoryMerger(container: container, consumer: "indexer", options: options)
    let log = NumberLog()
    logging(merger, into: log)
    try await merger.start()
    try await save((0..<10).map { "n\($0)" }, in: container)
    #expect(await log.wait(for: 10))
    await merger.stop()
    #expect(log.all == Array((start + 1)...(start + 10)))
    let row = try container.persistentStore.historyConsumers().first
    #expect(row?.name == "indexer")
    #expect(row?.checkpoint.transactionNumber == start + 10)
    // Checkpoint writes have no history of their own.
    #expect(try container.currentHistoryToken.transactionNumber == start + 10)
  }

  @Test func aRestartedConsumerCatchesUpFromItsCheckpointInStart() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let first = try HistoryMerger(container: container, consumer: "indexer", contexts: [container.viewContext])
    try await first.start()
    try await save(["a", "b"], in: container)
    try await Task.sleep(for: .milliseconds(100))
    await first.stop()
    let checkpoint = try #require(try container.persistentStore.historyConsumers().first).checkpoint
    try await save(["c", "d", "e"], in: container)  // while no merger runs
    let second = try HistoryMerger(container: container, consumer: "indexer")
    let log = NumberLog()
    logging(second, into: log)
    try await second.start()  // returns once caught up
    #expect(log.all == [3, 4, 5].map { checkpoint.transactionNumber + $0 - 2 })
    await second.stop()
  }

  @Test func startingFromTheBeginningProcessesAllKeptHistory() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b", "c"], in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "archiver", options: options)
    let log = NumberLog()
    logging(merger, into: log)
    try await merger.start()
    #expect(log.all == [1, 2, 3])
    await merger.stop()
  }

  @Test func aHookThatThrowsStopsTheConsumerAtThatTransactionAndItIsProcessedAgainLater() async throws {
    struct Refused: Error {}
    let container = try PersistentContainer.makeTest(model: notesModel)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.checkpointInterval = .zero
    let merger = try HistoryMerger(container: container, consumer: "picky", options: options)
    let log = NumberLog()
    merger.addHook { event in
      if event.transaction.transactionNumber == 3 { throw Refused() }
      log.add(event.transaction.transactionNumber)
    }
    try await save(["a", "b", "c", "d"], in: container)
    await #expect(throws: Refused.self) { try await merger.start() }
    #expect(log.all == [1, 2])
    #expect(merger.error is Refused)
    #expect(!merger.isRunning)
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 2)
    let again = try HistoryMerger(container: container, consumer: "picky", options: options)
    let second = NumberLog()
    logging(again, into: second)
    try await again.start()
    #expect(second.all == [3, 4], "the failed transaction is processed again: at least once")
    await again.stop()
  }

  @Test func itMergesIntoItsContextsAndAHookMayReplaceThatMerge() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    let live = container.newBackgroundContext()
    try await live.perform { context in for id in ids { _ = try context.existingObject(with: id).title } }
    let merger = try HistoryMerger(container: container, consumer: "ui", contexts: [live])
    let skipped = ids[1]
    merger.addHook { event in
      if event.updated(Note.self).contains(skipped) { event.mergesIntoContexts = false }
    }
    try await merger.start()
    for (id, title) in zip(ids, ["a2", "b2"]) {
      try await container.performBackgroundTask { context in
        try context.existingObject(with: id).title = title
        try context.save()
      }
    }
    try await Task.sleep(for: .milliseconds(300))
    let titles = await live.perform { context in ids.map { (try? context.registeredObject(for: $0))?.title } }
    #expect(titles == ["a2", "b"])
    await merger.stop()
  }

  @Test func excludedAuthorsArePassedOverAndTheCheckpointMovesPastThem() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.excludedAuthors = ["me"]
    let merger = try HistoryMerger(container: container, consumer: "mine", options: options)
    let log = NumberLog()
    logging(merger, into: log)
    try await save(["x"], in: container, author: "me")
    try await save(["y"], in: container, author: "other")
    try await save(["z"], in: container, author: "me")
    try await merger.start()
    await merger.stop()
    #expect(log.all == [2])
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 3)
  }

  @Test func badInputIsATypedErrorAndLeavesTheStoreAsItWas() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    #expect(throws: HistoryError.invalidConsumerName("")) { try HistoryMerger(container: container, consumer: "") }
    var options = HistoryMerger.Options()
    options.lease = .zero
    #expect(throws: HistoryError.invalidLease(.zero)) {
      try HistoryMerger(container: container, consumer: "x", options: options)
    }
    var noHistory = StoreOptions()
    noHistory.recordsHistory = false
    let plain = try PersistentContainer.makeTest(model: notesModel, variant: "plain", options: noHistory)
    #expect(throws: HistoryError.historyNotRecorded) { try HistoryMerger(container: plain, consumer: "x") }
    #expect(throws: HistoryError.unknownConsumer("nobody")) {
      try container.persistentStore.removeHistoryConsumer(named: "nobody")
    }
    #expect(try container.persistentStore.historyConsumers().isEmpty)
  }

  @Test func aCheckpointOlderThanTheHorizonThrowsOrRefreshesAndGoesOnFromTheHorizon() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    let merger = try HistoryMerger(container: container, consumer: "slow", contexts: [container.viewContext])
    try await merger.start()
    await merger.stop()
    try await save(["b", "c"], in: container)
    try container.deleteHistory(before: try container.currentHistoryToken)  // past the consumer
    let expired = try HistoryMerger(container: container, consumer: "slow", contexts: [container.viewContext])
    await #expect(throws: HistoryError.self) { try await expired.start() }
    let live = container.newBackgroundContext()
    try await live.perform { context in _ = try context.existingObject(with: ids[0]).title }
    var options = HistoryMerger.Options()
    options.refreshesWhenCheckpointExpired = true
    let recovering = try HistoryMerger(container: container, consumer: "slow", contexts: [live], options: options)
    let log = NumberLog()
    logging(recovering, into: log)
    try await recovering.start()
    #expect(log.all == [3], "it goes on after the horizon: the oldest kept transaction is processed")
    await recovering.stop()
  }

  @Test func aCheckpointRowOfAnotherStoreIsRefused() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let other = UUID()
    try container.persistentStore.executeBehindTheStoresBack(
      HistoryConsumers.createSQL + "; INSERT INTO _history_consumer VALUES "
        + "('copied', '\(other.uuidString)', 7, 0, \(Date().timeIntervalSinceReferenceDate), 60)")
    let merger = try HistoryMerger(container: container, consumer: "copied", contexts: [container.viewContext])
    await #expect(throws: HistoryError.foreignStore(expected: container.persistentStore.identifier, found: other)) {
      try await merger.start()
    }
  }
}

@Suite struct HistoryPrunerTests {
  private func consumer(
    _ name: String, at number: Int64, lease: Duration = .seconds(60), in container: PersistentContainer
  ) throws {
    try container.persistentStore.writeCheckpoint(consumer: name, number: number, lease: lease, advanced: true)
  }

  @Test func noPolicyDeletesWhatALiveConsumerHasNotRead() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save((0..<10).map { "n\($0)" }, in: container)
    try consumer("indexer", at: 4, in: container)
    let pruner = HistoryPruner(container: container)
    for policy in [HistoryPruningPolicy.keepLast(0), .olderThan(.zero), .before(try container.currentHistoryToken)] {
      let report = try pruner.prune(policy, dryRun: true)
      // Strictly before the checkpoint: transaction 4, the last the consumer read, is kept.
      #expect(report.deletedTransactions == 3)
      #expect(report.horizon.transactionNumber == 3)
      #expect(report.heldBackBy == ["indexer"])
    }
    let report = try pruner.prune(.keepLast(0))
    #expect(report.deletedTransactions == 3)
    #expect(try container.fetchHistory(HistoryRequest(after: report.horizon)).map(\.transactionNumber) == Array(4...10))
  }

  @Test func consumedDeletesBeforeTheLowestCheckpointAndNothingWithoutConsumers() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save((0..<6).map { "n\($0)" }, in: container)
    let pruner = HistoryPruner(container: container)
    #expect(try pruner.prune(.consumed).deletedTransactions == 0)
    try consumer("a", at: 5, in: container)
    try consumer("b", at: 3, in: container)
    let report = try pruner.prune(.consumed)
    #expect(report.deletedTransactions == 2, "before b's checkpoint, 3, which is kept")
    #expect(report.horizon.transactionNumber == 2)
    try pruner.store.removeHistoryConsumer(named: "b")
    #expect(try pruner.prune(.consumed).deletedTransactions == 2)
  }

  @Test func aStaleConsumerIsReportedAndPrunedPastOnlyWhenAsked() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save((0..<4).map { "n\($0)" }, in: container)
    try consumer("gone", at: 2, lease: .milliseconds(10), in: container)
    try await Task.sleep(for: .milliseconds(50))
    let pruner = HistoryPruner(container: container)
    let held = try pruner.prune(.keepLast(0))
    #expect(held.staleConsumers == ["gone"])
    #expect(held.deletedTransactions == 1)
    #expect(held.prunedPastStale.isEmpty)
    let past = try pruner.prune(.keepLast(0), includingStale: true)
    #expect(past.deletedTransactions == 3)
    #expect(past.prunedPastStale == ["gone"])
  }

  @Test func anArchiveSeesEveryTransactionFirstAndOneThatThrowsPrunesNothing() async throws {
    struct Full: Error {}
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save((0..<5).map { "n\($0)" }, in: container)
    let pruner = HistoryPruner(container: container)
    let seen = NumberLog()
    #expect(throws: Full.self) {
      try pruner.prune(.keepLast(1)) { transaction in
        if transaction.transactionNumber == 3 { throw Full() }
        seen.add(transaction.transactionNumber)
      }
    }
    #expect(try container.fetchHistory(HistoryRequest()).count == 5, "nothing pruned")
    let archived = NumberLog()
    let report = try pruner.prune(.keepLast(1)) { archived.add($0.transactionNumber) }
    #expect(archived.all == [1, 2, 3, 4])
    #expect(report.deletedTransactions == 4)
  }

  @Test func aDryRunChangesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save((0..<3).map { "n\($0)" }, in: container)
    let report = try HistoryPruner(container: container).prune(.keepLast(1), dryRun: true)
    #expect(report.isDryRun)
    #expect(report.deletedTransactions == 2)
    #expect(try container.fetchHistory(HistoryRequest()).count == 3)
  }
}

@Suite struct AutomaticPruningTests {
  @Test func aStorePrunesAfterCommitsByItselfAndNeverPastALiveConsumer() async throws {
    var options = StoreOptions()
    options.automaticHistoryPruning = AutomaticHistoryPruning(.keepLast(2), afterCommits: 5)
    let container = try PersistentContainer.makeTest(model: notesModel, options: options)
    try await save((0..<4).map { "n\($0)" }, in: container)
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 0, "not yet: 4 commits")
    try await save(["n4"], in: container)  // the fifth: a prune keeps the last 2
    #expect(await eventually { try container.persistentStore.historyHorizon().transactionNumber == 3 })

    // A consumer that has read up to 6 holds it and everything after it, whatever the policy says.
    try container.persistentStore.writeCheckpoint(consumer: "indexer", number: 6, lease: .seconds(60), advanced: true)
    try await save((5..<15).map { "n\($0)" }, in: container)  // commits 6...15: two more prunes
    #expect(await eventually { try container.persistentStore.historyHorizon().transactionNumber == 5 })
    try await Task.sleep(for: .milliseconds(100))
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 5)
    #expect(try container.fetchHistory(HistoryRequest(after: container.persistentStore.historyHorizon())).count == 10)
  }
}

@Suite struct MergerLeaseTests {
  @Test func anIdleRunningMergerRenewsItsLeaseSoItIsNeverStale() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    var options = HistoryMerger.Options()
    options.lease = .milliseconds(400)
    let merger = try HistoryMerger(
      container: container, consumer: "idle", contexts: [container.viewContext], options: options)
    try await merger.start()
    let first = try #require(try container.persistentStore.historyConsumers().first)
    try await Task.sleep(for: .milliseconds(1_000))  // no commit at all: more than two leases
    let later = try #require(try container.persistentStore.historyConsumers().first)
    #expect(later.seenAt > first.seenAt)
    #expect(!later.isStale())
    await merger.stop()
    try await Task.sleep(for: .milliseconds(600))
    #expect(try container.persistentStore.historyConsumers().first?.isStale() == true, "stopped: its lease runs out")
  }
}

/// A following merger takes the transactions its process's remote-change monitor read
/// (`HistoryMerger.Inbox`) and reads history only for the rest (this process's own commits,
/// between them): with another process and this one saving at the same time, each
/// transaction is still processed once, in order, and merged.
@Suite struct HistoryMergerFollowingTests {
  @Test func remoteAndLocalCommitsInterleavedAreEachProcessedOnceInOrder() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let start = try container.currentHistoryToken.transactionNumber
    let context = container.newBackgroundContext()
    let merger = try HistoryMerger(container: container, consumer: "follower", contexts: [context])
    let log = NumberLog()
    logging(merger, into: log)
    try await merger.start()
    let count = 30
    let writer = POSIXProcess()
    writer.executableURL = builtProduct("typedstore-test-writer")
    writer.arguments = [container.persistentStore.location, "remote", String(count)]
    try writer.run()
    let local = container.newBackgroundContext()
    for sequence in 0..<count {
      try await local.perform { context in
        let event = Event(context: context)
        event.source = "local"
        event.sequence = sequence
        try context.save()
      }
    }
    writer.waitUntilExit()
    #expect(writer.terminationStatus == 0)
    #expect(await log.wait(for: 2 * count))
    await merger.stop()
    #expect(log.all == Array((start + 1)...(start + Int64(2 * count))))
    let merged = try await context.perform { context in
      try context.fetch(FetchRequest<Event>()).map(\.source)
    }
    #expect(merged.filter { $0 == "remote" }.count == count)
    #expect(
      try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == start + Int64(2 * count))
  }

  /// A commit of this process right after another process's: the merger takes the remote one
  /// from its inbox and must not take itself as caught up before it read the local one (it
  /// would then wait for the next wake-up, a quarter of its lease at idle).
  @Test func aLocalCommitRightAfterARemoteOneIsNotLeftUnread() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let merger = try HistoryMerger(container: container, consumer: "follower")
    let log = NumberLog()
    logging(merger, into: log)
    try await merger.start()
    let local = container.newBackgroundContext()
    for round in 1...15 {
      let writer = POSIXProcess()
      writer.executableURL = builtProduct("typedstore-test-writer")
      writer.arguments = [container.persistentStore.location, "remote", "1"]
      try writer.run()
      writer.waitUntilExit()
      try await local.perform { context in
        Event(context: context).sequence = round
        try context.save()
      }
      let newest = try container.currentHistoryToken.transactionNumber
      var seen = false
      for _ in 0..<200 where !seen {  // 2 s
        seen = log.all.last == newest
        if !seen { try await Task.sleep(for: .milliseconds(10)) }
      }
      #expect(seen, "round \(round): transaction \(newest) not processed")
      if !seen { break }
    }
    await merger.stop()
  }

  /// The inbox's part of the above, without the timing: a remote transaction reported with
  /// its history, then a local one reported with its number only.
  @Test func theInboxIsNotCaughtUpWhileALaterCommitWasReportedWithoutItsTransaction() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b"], in: container)
    let history = try container.fetchHistory(HistoryRequest())
    let inbox = HistoryMerger.Inbox()
    inbox.note(StoreChanges(reported: history[0]))  // another process's, as the monitor read it
    inbox.note(StoreChanges(history[1]))  // one without its transaction, as this process's are
    let taken = try #require(inbox.take(after: 0))
    #expect(taken.run.map(\.transactionNumber) == [1])
    #expect(!taken.reachesLatest, "transaction 2 is still to read")
    #expect(inbox.take(after: 1) == nil)
  }
}
