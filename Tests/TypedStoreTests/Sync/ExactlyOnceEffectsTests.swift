import Foundation
import Spawning
import Testing
import TypedStoreTesting

@testable import TypedStore

/// `HistoryMerger.addTransactionalHook(_:)`: a consumer's writes to the store commit with its
/// checkpoint, so each transaction's effects are saved exactly once, through crashes too.
@Suite struct ExactlyOnceEffectsTests {
  private func saveEvents(_ count: Int, in container: PersistentContainer, author: String = "api") async throws {
    for sequence in 0..<count {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = author
        let event = Event(context: context)
        event.source = author
        event.sequence = sequence
        try context.save()
      }
    }
  }

  /// The effects of each transaction, by the transaction's number.
  private func effects(in container: PersistentContainer) async throws -> [Int] {
    try await container.performBackgroundTask { context in
      var request = FetchRequest<Event>(predicate: #Predicate { $0.source == "effect" })
      request.sortDescriptors = [SortDescriptor(\.sequence)]
      return try context.fetch(request).map(\.sequence)
    }
  }

  private func recordingEffects(_ merger: HistoryMerger) {
    merger.addTransactionalHook { event, context in
      let effect = Event(context: context)
      effect.source = "effect"
      effect.sequence = Int(event.transaction.transactionNumber)
    }
  }

  @Test func effectsAndTheCheckpointCommitTogetherAndTheConsumerPassesOverItsOwn() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    try await saveEvents(3, in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    options.checkpointInterval = .seconds(3600)  // only the effects' saves write it
    let merger = try HistoryMerger(container: container, consumer: "shipper", options: options)
    recordingEffects(merger)
    try await merger.start()
    // Each of the three transactions got its effect in a transaction of its own, by the
    // consumer's author, and the checkpoint row moved with the last one.
    #expect(try await effects(in: container) == [1, 2, 3])
    let history = try container.fetchHistory(HistoryRequest())
    #expect(history.filter { $0.author == merger.effectsAuthor }.count == 3)
    #expect(history.filter { $0.author == "typedstore.consumer.shipper" }.count == 3)
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 3)
    // Later commits: each gets one effect; the effects' own transactions get none.
    try await saveEvents(2, in: container)
    let done = await eventually { try await effects(in: container).count == 5 }
    #expect(done)
    await merger.stop()
    let numbers = try container.fetchHistory(HistoryRequest()).filter { $0.author == "api" }.map(\.transactionNumber)
    #expect(try await effects(in: container) == numbers.map(Int.init))
  }

  @Test func aHookThatThrowsSavesNothingAndTheTransactionIsProcessedAgainLater() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    try await saveEvents(2, in: container)
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let failing = try HistoryMerger(container: container, consumer: "shipper", options: options)
    recordingEffects(failing)
    failing.addHook { event in
      if event.transaction.transactionNumber == 2 { throw CocoaError(.featureUnsupported) }
    }
    await #expect(throws: CocoaError.self) { try await failing.start() }
    // The first transaction's effect is saved; the second's, made before the throw, is not.
    #expect(try await effects(in: container) == [1])
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 1)
    let again = try HistoryMerger(container: container, consumer: "shipper", options: options)
    recordingEffects(again)
    try await again.start()
    await again.stop()
    #expect(try await effects(in: container) == [1, 2])
  }

  @Test func aConflictWithAnotherWriterRunsTheHooksAgain() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    try await saveEvents(1, in: container)
    let target = try await container.performBackgroundTask { context in
      try #require(try context.fetch(FetchRequest<Event>()).first).managedID
    }
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "counter", options: options)
    let runs = Recorder<Int>()
    merger.addTransactionalHook { event, context in
      guard event.transaction.author == "api" else { return }
      let row = try context.existingObject(with: target)
      runs.add(row.sequence)
      if runs.all.count == 1 {
        // Another writer changes the row between this read and the effects' save.
        try container.newBackgroundContext().performAndWait { other in
          try other.existingObject(with: target).sequence = 10
          try other.save()
        }
      }
      row.sequence += 1
    }
    try await merger.start()
    await merger.stop()
    #expect(runs.all == [0, 10])  // the second run read the other writer's value
    let final = try await container.performBackgroundTask { try $0.existingObject(with: target).sequence }
    #expect(final == 11)
  }
}

/// The Done-when of exactly-once effects: writer processes commit while a consumer process,
/// whose transactional hook records one effect per transaction, is killed with SIGKILL at
/// random moments and restarted; at the end every writer transaction has exactly one effect.
/// `TYPEDSTORE_SOAK=1` runs it for a minute.
@Suite(.serialized) struct ExactlyOnceEffectsProcessTests {
  private static let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"

  @Test func effectsStayExactlyOnceThroughKillsOfTheConsumer() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let path = container.persistentStore.location
    let helper = builtProduct("typedstore-test-writer")
    let stop = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).stop").path
    try? FileManager.default.removeItem(atPath: stop)
    let perWriter = Self.soak ? 3000 : 150
    let kills = try await offThePool { () -> Int in
      let writers = try ["w1", "w2"].map { try SpawnedProcess(helper, [path, $0, String(perWriter)]) }
      var consumer = try SpawnedProcess(helper, ["effects-consumer", path, "shipper", stop])
      var kills = 0
      let deadline = Date().addingTimeInterval(Self.soak ? 60 : 3)
      while Date() < deadline || kills < 8 {
        Thread.sleep(forTimeInterval: Double.random(in: 0.02...0.15))
        consumer.kill()
        kills += 1
        consumer = try SpawnedProcess(helper, ["effects-consumer", path, "shipper", stop])
      }
      for writer in writers { _ = writer.finish() }
      _ = FileManager.default.createFile(atPath: stop, contents: nil)
      let output = consumer.finish()
      #expect(output.hasPrefix("done"), "\(output)")
      return kills
    }
    #expect(kills >= 8)
    let written = try container.fetchHistory(HistoryRequest()).filter { $0.author == "w1" || $0.author == "w2" }
    #expect(written.count == 2 * perWriter)
    let effects = try await container.performBackgroundTask { context in
      try context.fetch(FetchRequest<Event>(predicate: #Predicate { $0.source == "effect" })).map(\.sequence)
    }
    #expect(effects.sorted() == written.map { Int($0.transactionNumber) }, "each writer transaction once")
  }
}

/// What the review of the first version found: two mergers of one consumer name, changes
/// that undo each other, a filtered history read's change keys, and a follower that went
/// idle with a commit of its own process unread.
@Suite struct ConsumerEdgeTests {
  @Test func twoMergersOfOneNameNeverSaveEffectsForOneTransactionTwice() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let mergers = try (0..<2).map { _ in try HistoryMerger(container: container, consumer: "shipper", options: options)
    }
    for merger in mergers {
      merger.addTransactionalHook { event, context in
        let effect = Event(context: context)
        effect.source = "effect"
        effect.sequence = Int(event.transaction.transactionNumber)
      }
    }
    for sequence in 0..<20 {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = "api"
        Event(context: context).sequence = sequence
        try context.save()
      }
      if sequence == 5 { for merger in mergers { try? await merger.start() } }
    }
    try await Task.sleep(for: .milliseconds(300))
    for merger in mergers { await merger.stop() }
    let effects = try await container.performBackgroundTask { context in
      try context.fetch(FetchRequest<Event>(predicate: #Predicate { $0.source == "effect" })).map(\.sequence)
    }
    #expect(Set(effects).count == effects.count, "no transaction's effects saved twice: \(effects.sorted())")
    let stopped = mergers.compactMap { $0.error as? HistoryError }
    for error in stopped {
      guard case .consumerMovedOn = error else {
        Issue.record("unexpected error: \(error)")
        continue
      }
    }
  }

  @Test func effectsThatUndoThemselvesStillLetTheCheckpointBeWritten() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let id = try await container.performBackgroundTask { context in
      let event = Event(context: context)
      event.source = "api"
      try context.save()
      return event.managedID
    }
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "noop", options: options)
    merger.addTransactionalHook { _, context in
      let event = try context.existingObject(with: id)
      event.sequence = 7
      event.sequence = 0  // back as it was: the save commits nothing
    }
    try await merger.start()
    await merger.stop()
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 1)
  }

  @Test func aChangeKeepsItsIndexInAReadFilteredByEntity() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      Folder(context: context).name = "inbox"
      Note(context: context).title = "a"
      Folder(context: context).name = "archive"
      Note(context: context).title = "b"
      try context.save()
    }
    let all = try #require(try container.fetchHistory(HistoryRequest()).first)
    var request = HistoryRequest()
    request.entities = [Note.self]
    let notes = try #require(try container.fetchHistory(request).first)
    #expect(notes.changes.count == 2)
    let expected = all.changes.filter { $0.objectID.entityName == "Note" }.map { all.key(for: $0) }
    #expect(notes.changes.map { notes.key(for: $0) } == expected)
    #expect(Set(all.changes.map(\.index)) == [0, 1, 2, 3])
  }
}
