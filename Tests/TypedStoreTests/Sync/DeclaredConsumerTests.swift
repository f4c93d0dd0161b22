import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// A consumer declared before its first run (`registerHistoryConsumer(name:startingAt:lease:)`,
/// `typedstore consumers add`) holds history back as a running one does.
@Suite struct DeclaredConsumerTests {
  @Test func aDeclaredConsumerHoldsPruningBackAndItsMergerStartsFromIt() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b"], in: container)
    let store = container.persistentStore
    let declared = try store.registerHistoryConsumer(name: "exporter", startingAt: .beginning)
    #expect(declared.checkpoint.transactionNumber == 0)
    try await save(["c"], in: container)
    let pruner = HistoryPruner(container: container)
    #expect(try pruner.prune(.consumed).deletedTransactions == 0)
    let report = try pruner.prune(.keepLast(0))
    #expect(report.deletedTransactions == 0 && report.heldBackBy == ["exporter"])
    // Declaring it again changes nothing.
    #expect(try store.registerHistoryConsumer(name: "exporter", startingAt: .now).checkpoint == declared.checkpoint)
    let merger = try HistoryMerger(container: container, consumer: "exporter")
    let log = NumberLog()
    merger.addHook { event in log.add(event.transaction.transactionNumber) }
    try await merger.start()
    await merger.stop()
    #expect(log.all == [1, 2, 3], "from its declared checkpoint, though its options say .now")
  }

  @Test func badDeclarationsAreTypedErrorsAndChangeNothing() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a"], in: container)
    let store = container.persistentStore
    let other = HistoryToken(storeIdentifier: UUID(), transactionNumber: 1)
    #expect(throws: HistoryError.self) { try store.registerHistoryConsumer(name: "x", startingAt: .after(other)) }
    let later = HistoryToken(storeIdentifier: store.identifier, transactionNumber: 5)
    #expect(throws: HistoryError.self) { try store.registerHistoryConsumer(name: "x", startingAt: .after(later)) }
    #expect(throws: HistoryError.self) { try store.registerHistoryConsumer(name: "") }
    #expect(throws: HistoryError.self) { try store.registerHistoryConsumer(name: "x", lease: .zero) }
    #expect(try store.historyConsumers().isEmpty)
    let first = HistoryToken(storeIdentifier: store.identifier, transactionNumber: 1)
    #expect(try store.registerHistoryConsumer(name: "x", startingAt: .after(first)).checkpoint == first)
  }

  @Test func aDeclaredConsumerPrunedPastWhileStaleIsToldItExpired() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try container.persistentStore.registerHistoryConsumer(name: "late", startingAt: .now, lease: .milliseconds(50))
    try await save(["a", "b"], in: container)
    try await Task.sleep(for: .milliseconds(100))
    let report = try HistoryPruner(container: container).prune(.keepLast(0), includingStale: true)
    #expect(report.prunedPastStale == ["late"])
    let merger = try HistoryMerger(container: container, consumer: "late")
    await #expect(throws: HistoryError.self) { try await merger.start() }
  }

  @Test func theToolDeclaresAConsumer() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b"], in: container)
    let path = container.persistentStore.location
    let added = try typedstore(["consumers", "add", "exporter", "--store", path, "--after", "1", "--json"])
    #expect(added.status == 0, "\(added.stderr)")
    #expect(
      added.json["checkpoint"] as? String
        == HistoryToken(
          storeIdentifier: container.persistentStore.identifier, transactionNumber: 1
        ).stringRepresentation)
    let listed = try typedstore(["consumers", "list", "--store", path])
    #expect(listed.stdout.contains("exporter") && listed.stdout.contains("behind (1)"), "\(listed.stdout)")
    let both = try typedstore(["consumers", "add", "x", "--store", path, "--after", "1", "--from-beginning"])
    #expect(both.status == 2)
    let bad = try typedstore(["consumers", "add", "y", "--store", path, "--after", "9"])
    #expect(bad.status != 0 && bad.stderr.contains("after the newest"), "\(bad.stderr)")
    #expect(try container.persistentStore.historyConsumers().map(\.name) == ["exporter"])
  }
}

/// No silent no-op (issue 31, item 3): a new consumer reads what it has not seen, a consumer
/// that cannot is told so, and a merger with nothing to merge into is refused.
@Suite struct MergerDefaultsTests {
  @Test func aNewConsumerReadsWhatWasCommittedBeforeItFirstStarted() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["by the extension", "while the app", "was not running"], in: container)
    let merger = try HistoryMerger(container: container, consumer: "app", contexts: [container.viewContext])
    let log = NumberLog()
    merger.addHook { event in log.add(event.transaction.transactionNumber) }
    try await merger.start()
    await merger.stop()
    #expect(log.all == [1, 2, 3], "the default start is the beginning")
  }

  @Test func aNewConsumerAtTheBeginningOfAPrunedStoreIsToldItExpiredAndNothingIsWritten() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b", "c"], in: container)
    try container.deleteHistory(before: try container.currentHistoryToken)  // 1 and 2 go
    let merger = try HistoryMerger(container: container, consumer: "late", contexts: [container.viewContext])
    let horizon = HistoryToken(storeIdentifier: container.persistentStore.identifier, transactionNumber: 2)
    await #expect(throws: HistoryError.tokenExpired(horizon: horizon)) { try await merger.start() }
    #expect(try container.persistentStore.historyConsumers().isEmpty, "no row left behind")
    #expect(throws: HistoryError.tokenExpired(horizon: horizon)) {
      try container.persistentStore.registerHistoryConsumer(name: "late", startingAt: .beginning)
    }
    #expect(try container.persistentStore.historyConsumers().isEmpty)
    // Taking what is kept is a choice the consumer makes: refresh, or declare after the horizon.
    var options = HistoryMerger.Options()
    options.refreshesWhenCheckpointExpired = true
    let live = container.newBackgroundContext()
    let held = try await live.perform { context in
      try #require(try context.fetch(FetchRequest<Note>(predicate: #Predicate { $0.title == "a" })).first).managedID
    }
    // A change no history records: only a refresh shows it to the live object.
    try container.persistentStore.executeBehindTheStoresBack(
      "UPDATE \"Note\" SET title = 'changed unseen' WHERE title = 'a'")
    let refreshing = try HistoryMerger(container: container, consumer: "late", contexts: [live], options: options)
    let log = NumberLog()
    refreshing.addHook { event in log.add(event.transaction.transactionNumber) }
    try await refreshing.start()
    await refreshing.stop()
    #expect(log.all == [3])
    let title = try await live.perform { context in try context.registeredObject(for: held)?.title }
    #expect(title == "changed unseen", "the contexts were refreshed")
    let declared = try container.persistentStore.registerHistoryConsumer(name: "other", startingAt: .after(horizon))
    #expect(declared.checkpoint == horizon)
  }

  @Test func aMergerWithNothingToMergeIntoIsRefusedAtStart() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let idle = try HistoryMerger(container: container, consumer: "idle")
    await #expect(throws: HistoryError.nothingToMerge(consumer: "idle")) { try await idle.start() }
    #expect(try container.persistentStore.historyConsumers().isEmpty)
    let hooked = try HistoryMerger(container: container, consumer: "hooked")
    hooked.addHook { _ in }
    try await hooked.start()
    await hooked.stop()
  }
}
