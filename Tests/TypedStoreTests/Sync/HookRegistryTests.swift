import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// The merger's hook registry (issue 31, item 4): ids, removal by id, by entity and operation
/// or all at once, a hook before another, `finish()`, and batch hooks.
@Suite struct HookRegistryTests {
  private func merger(_ container: PersistentContainer, _ name: String, contexts: [ManagedObjectContext] = [])
    throws -> HistoryMerger
  {
    try HistoryMerger(container: container, consumer: name, contexts: contexts)
  }

  @Test func hooksRunInOrderABeforeHookGoesInFrontAndRemovalsTakeEffect() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let merger = try merger(container, "ordered")
    let log = Recorder<String>()
    let a = merger.addHook { event in log.add("a\(event.transaction.transactionNumber)") }
    let b = merger.addHook { event in log.add("b\(event.transaction.transactionNumber)") }
    let c = try merger.addHook(before: b) { event in log.add("c\(event.transaction.transactionNumber)") }
    #expect(Set([a, b, c]).count == 3)
    try await merger.start()
    try await save(["one"], in: container)
    #expect(await log.wait(for: 3))
    #expect(log.all == ["a1", "c1", "b1"])

    #expect(merger.removeHook(c))
    #expect(!merger.removeHook(c), "gone already")
    try await save(["two"], in: container)
    #expect(await log.wait(for: 5))
    #expect(log.all.suffix(2) == ["a2", "b2"])

    // Before a removed hook: a typed error, and nothing is added.
    #expect(throws: HistoryError.unknownHook(c.description)) { try merger.addHook(before: c) { _ in log.add("x") } }
    merger.removeAllHooks()
    let d = merger.addHook { event in log.add("d\(event.transaction.transactionNumber)") }
    try await save(["three"], in: container)
    #expect(await log.wait(for: 6))
    #expect(log.all.last == "d3" && log.all.count == 6)
    #expect(d != a)
    await merger.stop()
  }

  @Test func anEntityHookRunsOnlyForItsEntityAndOperationAndIsRemovedByThem() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let merger = try merger(container, "scoped", contexts: [container.viewContext])
    let log = Recorder<String>()
    try merger.addHook(for: Folder.self, operation: .insert) { event in
      log.add("folder+\(event.transaction.transactionNumber)")
    }
    try merger.addHook(for: Note.self) { event in log.add("note\(event.transaction.transactionNumber)") }
    #expect(throws: HistoryError.self) { try merger.addHook(for: AllTypes.self) { _ in } }
    try await container.performBackgroundTask { context in
      Folder(context: context).name = "inbox"  // 1: a folder inserted
      try context.save()
      Checklist(context: context).title = "list"  // 2: a note subentity inserted
      try context.save()
      let folder = try #require(try context.fetch(FetchRequest<Folder>()).first)
      folder.name = "renamed"  // 3: a folder updated, not inserted
      try context.save()
    }
    try await merger.start()
    #expect(log.all == ["folder+1", "note2"])
    #expect(merger.removeHooks(for: Note.self, operation: .delete) == 0, "none for that operation")
    #expect(merger.removeHooks(for: Note.self) == 1)
    #expect(merger.removeHooks(for: Folder.self, operation: .insert) == 1)
    await merger.stop()
  }

  @Test func finishEndsThePipelineAndTheDefaultMergeForThatTransactionOnly() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    let live = container.newBackgroundContext()
    try await live.perform { context in _ = try context.existingObject(with: ids[0]).title }
    let merger = try merger(container, "finishing", contexts: [live])
    let later = Recorder<Int64>()
    merger.addHook { event in
      if event.transaction.author == "importer" { event.finish() }
    }
    merger.addHook { event in later.add(event.transaction.transactionNumber) }
    try await merger.start()
    for (author, title) in [("importer", "imported"), ("app", "edited")] {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = author
        try context.existingObject(with: ids[0]).title = title
        try context.save()
      }
      let current = try container.currentHistoryToken
      #expect(await eventually { merger.checkpoint == current }, "the checkpoint moves past a finished one too")
      let seen = try await live.perform { context in try context.existingObject(with: ids[0]).title }
      // Finished: not merged, so the live object still shows what it had; then merged.
      #expect(seen == (author == "importer" ? "a" : "edited"))
    }
    #expect(later.all == [1, 3], "the later hook never saw the finished transaction")
    await merger.stop()
  }

  @Test func batchHooksSeeOneReadsTransactionsAtOnceAndCanEndItsMerge() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b", "c", "d", "e"], in: container)
    let merger = try merger(container, "batched", contexts: [container.viewContext])
    let log = Recorder<String>()
    merger.addHook { event in
      log.add("t\(event.transaction.transactionNumber)")
      if event.transaction.transactionNumber == 2 { event.finish() }
    }
    merger.addBatchHook { batch in
      log.add("batch \(batch.transactions.map(\.transactionNumber)) notes \(batch.inserted(Note.self).count)")
    }
    try await merger.start()  // the catch-up reads all five at once
    await merger.stop()
    #expect(log.all == ["t1", "t2", "t3", "t4", "t5", "batch [1, 3, 4, 5] notes 4"])
    #expect(merger.checkpoint.transactionNumber == 5)

    // A batch hook that throws stops the consumer before the batch: all of it comes again.
    struct Refused: Error {}
    let failing = try HistoryMerger(container: container, consumer: "refusing", contexts: [container.viewContext])
    failing.addBatchHook { _ in throw Refused() }
    await #expect(throws: Refused.self) { try await failing.start() }
    #expect(
      try container.persistentStore.historyConsumers().first { $0.name == "refusing" }?.checkpoint.transactionNumber
        == 0)
  }

  @Test func anAsyncBatchHookIsAwaitedAndFinishSkipsTheBatchMerge() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a"], in: container)
    let live = container.newBackgroundContext()
    try await live.perform { context in _ = try context.existingObject(with: ids[0]).title }
    let merger = try merger(container, "async-batch", contexts: [live])
    let sizes = Recorder<Int>()
    merger.addBatchHook { (batch: inout HistoryMerger.BatchEvent) async throws in
      try await Task.sleep(for: .milliseconds(5))
      sizes.add(batch.transactions.count)
      batch.finish()
    }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).title = "changed"
      try context.save()
    }
    try await merger.start()
    await merger.stop()
    #expect(sizes.all == [2])
    let title = try await live.perform { context in try context.existingObject(with: ids[0]).title }
    #expect(title == "a", "a finished batch is not merged")
  }
}

/// Batch hooks with transactional effects, and what two mergers of one name may not do.
@Suite struct BatchEffectsTests {
  private func effects(in container: PersistentContainer) async throws -> Int {
    try await container.viewContext.perform { context in
      try context.count(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "effect" }))
    }
  }

  private func effectsMerger(_ container: PersistentContainer) throws -> HistoryMerger {
    let merger = try HistoryMerger(container: container, consumer: "dup")
    merger.addTransactionalHook { event, context in
      for _ in event.inserted(Note.self) { Note(context: context).title = "effect" }
    }
    merger.addBatchHook { _ in }
    return merger
  }

  @Test func aBatchsEffectsCommitOnceWithTheCheckpointPastIt() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b", "c", "d"], in: container, author: "writer")
    let merger = try effectsMerger(container)
    try await merger.start()  // one batch: 1...4
    // The effects (transaction 5) committed with the checkpoint past the batch, at once.
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber ?? 0 >= 4)
    // The merger then reads its own effects' transaction, passes it over, and moves past it.
    #expect(await eventually { merger.checkpoint.transactionNumber == 5 })
    await merger.stop()
    #expect(try await effects(in: container) == 4)
    let history = try container.fetchHistory(HistoryRequest())
    #expect(history.filter { $0.author == merger.effectsAuthor }.count == 1, "one commit for the batch")
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 5)
  }

  @Test func twoMergersOfOneNameNeverSaveABatchsEffectsTwiceWhateverTheirBatches() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["a", "b", "c", "d", "e"], in: container, author: "writer")
    _ = try container.persistentStore.registerHistoryConsumer(name: "dup", startingAt: .beginning)
    let history = try container.fetchHistory(HistoryRequest())
    // One process read 1...3 and saved their effects; another read 1...5 at the same time.
    let first = try effectsMerger(container)
    _ = try first.runPipeline(first.state.withLock { $0.hooks }, on: Array(history.prefix(3)))
    #expect(try await effects(in: container) == 3)
    let second = try effectsMerger(container)
    #expect(throws: HistoryError.consumerMovedOn(consumer: "dup", transactionNumber: 1)) {
      _ = try second.runPipeline(second.state.withLock { $0.hooks }, on: history)
    }
    #expect(try await effects(in: container) == 3, "1...3 would have had their effects twice")
  }

  @Test func anIdOfAnotherMergerRemovesNothing() throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let one = try HistoryMerger(container: container, consumer: "one")
    let two = try HistoryMerger(container: container, consumer: "two")
    let id = one.addHook { _ in }
    two.addHook { _ in }
    #expect(!two.removeHook(id))
    #expect(throws: HistoryError.self) { try two.addHook(before: id) { _ in } }
    #expect(one.removeHook(id))
  }

  @Test func removingEveryHookOfAMergerWithNoContextStopsItWithATypedError() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let merger = try HistoryMerger(container: container, consumer: "emptied")
    merger.addHook { _ in }
    try await merger.start()
    merger.removeAllHooks()
    try await save(["a"], in: container)
    #expect(await eventually { merger.error as? HistoryError == .nothingToMerge(consumer: "emptied") })
    #expect(merger.checkpoint.transactionNumber == 0, "it passed over nothing")
  }
}
