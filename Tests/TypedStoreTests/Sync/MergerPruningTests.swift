import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Pruning as PersistentHistoryTrackingKit's cleaner offers it (issue 31, item 5): by a merger
/// after merges, and limited to some authors.
@Suite struct MergerPruningTests {
  @Test func aMergerThatOnlyMergesPrunesAfterEveryNTransactions() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    var options = HistoryMerger.Options()
    options.pruning = HistoryMerger.Pruning(.consumed, .afterMerges(4))
    let merger = try HistoryMerger(
      container: container, consumer: "app", contexts: [container.viewContext], options: options)
    try await merger.start()
    // Another container on the file: the extension's commits, not this process's own.
    let writer = try PersistentContainer(
      name: "extension", model: notesModel, storeURL: container.persistentStore.url)
    try await save(["a", "b", "c"], in: writer)
    #expect(await eventually { merger.checkpoint.transactionNumber == 3 })
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 0, "3 of 4: not yet")
    #expect(merger.lastPruning == nil)
    try await save(["d"], in: writer)
    // The fourth: its checkpoint is written, and what is before it goes.
    #expect(await eventually { try container.persistentStore.historyHorizon().transactionNumber == 3 })
    #expect(merger.lastPruning?.deletedTransactions == 3)
    await merger.stop()
  }

  @Test func atMostOncePerIntervalAfterMerges() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    var options = HistoryMerger.Options()
    options.pruning = HistoryMerger.Pruning(.consumed, .atMostEvery(.seconds(3600)))
    let merger = try HistoryMerger(
      container: container, consumer: "app", contexts: [container.viewContext], options: options)
    try await save(["a", "b"], in: container)
    try await merger.start()  // the catch-up merges, then prunes once
    #expect(merger.lastPruning?.deletedTransactions == 1)
    try await save(["c", "d"], in: container)
    #expect(await eventually { merger.checkpoint.transactionNumber == 4 })
    try await Task.sleep(for: .milliseconds(50))
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 1, "not again within the hour")
    await merger.stop()
  }

  @Test func aMergerPruningSomeAuthorsSaysWhichTransactionHeldItBack() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    for author in ["app", "mirror", "app"] { try await save([author], in: container, author: author) }
    var options = HistoryMerger.Options()
    options.pruning = HistoryMerger.Pruning(.consumed, .afterMerges(1), authors: ["app"])
    let merger = try HistoryMerger(
      container: container, consumer: "app", contexts: [container.viewContext], options: options)
    try await merger.start()
    await merger.stop()
    let report = try #require(merger.lastPruning)
    #expect(report.deletedTransactions == 1 && report.horizon.transactionNumber == 1)
    #expect(report.heldBackByTransaction == .init(transactionNumber: 2, author: "mirror"))
  }

  @Test func aPruneLimitedToSomeAuthorsKeepsTheOthersAndWhatFollowsThem() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    for author in ["app", "widget", "mirror", "app"] { try await save([author], in: container, author: author) }
    let pruner = HistoryPruner(container: container)
    let report = try pruner.prune(.keepLast(0), authors: ["app", "widget"])
    #expect(report.deletedTransactions == 2, "1 and 2; 3 is the mirror's, kept with what follows")
    let kept = try container.fetchHistory(HistoryRequest(after: report.horizon))
    #expect(kept.map(\.author) == ["mirror", "app"])
    // The tool says the same.
    let run = try typedstore([
      "history", "prune", "--store", container.persistentStore.location, "--keep-last", "0", "--author", "app",
    ])
    #expect(run.status == 0 && run.stdout.contains("deleted 0 transactions; horizon 2"), "\(run.stdout)")
    #expect(run.stdout.contains("held back by transaction 3, whose author (mirror) is not an --author"))
    #expect(try pruner.prune(.keepLast(0)).deletedTransactions == 2, "without the limit, 3 and 4 go")
  }
}
