import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@_spi(Benchmarks) @testable import TypedStore

/// What a container published, in order.
private typealias Collector = Recorder<StoreChanges>

private func runWriter(_ arguments: [String]) throws -> SpawnedProcess {
  try SpawnedProcess(builtProduct("typedstore-test-writer"), arguments)
}

/// Polls `condition` on the context until it holds (false after `seconds`).
private func eventually(
  _ context: ManagedObjectContext, seconds: Double = 20,
  _ condition: @escaping @Sendable (isolated ManagedObjectContext) -> Bool
) async -> Bool {
  let deadline = Date().addingTimeInterval(seconds)
  while Date() < deadline {
    if await context.perform(condition) { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return await context.perform(condition)  // a task resumed late may find it holds
}

@Suite struct RemoteChangeTests {
  @Test func commitsOfAnotherProcessArePublishedOnceEachInCommitOrderMarkedRemote() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let collector = Collector()
    let observation = container.addStoreChangesObserver { collector.add($0) }
    let writer = try runWriter([container.persistentStore.location, "elsewhere", "20"])
    #expect(await collector.wait(for: 20))
    _ = writer.finish()
    let changes = collector.all
    #expect(changes.count == 20)
    #expect(changes.allSatisfy { $0.isRemote && $0.author == "elsewhere" })
    #expect(changes.allSatisfy { $0.processID == writer.process.processIdentifier })
    #expect(changes.allSatisfy { $0.inserted(Event.self).count == 1 })
    let numbers = changes.compactMap { $0.token?.transactionNumber }
    #expect(numbers == Array(numbers[0]..<(numbers[0] + 20)))
    // The same as reading the history of those transactions.
    let history = try container.fetchHistory(
      HistoryRequest(
        after: HistoryToken(storeIdentifier: container.persistentStore.identifier, transactionNumber: numbers[0] - 1)))
    #expect(history.map { Set($0.changes.map(\.objectID)) } == changes.map(\.insertedIDs))
    observation.cancel()
  }

  @Test func localAndRemoteCommitsAtTheSameTimeArePublishedOnceEachInCommitOrder() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let collector = Collector()
    let observation = container.addStoreChangesObserver { collector.add($0) }
    let writer = try runWriter([container.persistentStore.location, "elsewhere", "40"])
    let context = container.newBackgroundContext()
    for sequence in 0..<40 {
      try await context.perform { context in
        context.transactionAuthor = "here"
        Event(context: context).sequence = sequence
        try context.save()
      }
    }
    #expect(await collector.wait(for: 80))
    _ = writer.finish()
    try await Task.sleep(for: .milliseconds(50))  // nothing more may come
    let changes = collector.all
    let numbers = changes.compactMap { $0.token?.transactionNumber }
    #expect(changes.count == 80)
    #expect(numbers == Array(numbers[0]..<(numbers[0] + 80)), "each once, in commit order")
    #expect(changes.filter { $0.author == "here" }.allSatisfy { !$0.isRemote })
    #expect(changes.filter { $0.author == "elsewhere" }.allSatisfy { $0.isRemote })
    observation.cancel()
  }

  @Test func aContextThatMergesAutomaticallySeesAnotherProcessUpdateAndDeleteItsObjects() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let path = container.persistentStore.location
    _ = try runWriter([path, "maker", "2"]).finish()
    let context = container.newBackgroundContext()
    let ids = try await context.perform { context in
      context.automaticallyMergesChangesFromParent = true
      let events = try context.fetch(FetchRequest<Event>(sortBy: [SortDescriptor(\.sequence)]))
      #expect(events.map(\.sequence) == [0, 1])
      return events.map(\.managedID)
    }
    // Held by the context's executor's closure below, as a service holds its live objects.
    let (first, second) = (ids[0], ids[1])
    #expect(try runWriter(["set", path, String(first.primaryKey ?? 0), "42"]).finish().contains("done"))
    #expect(
      await eventually(context) { context in
        (try? context.registeredObject(for: first))?.sequence == 42
          || (try? context.existingObject(with: first).sequence) == 42
      })
    #expect(try runWriter(["delete", path, String(second.primaryKey ?? 0)]).finish().contains("done"))
    #expect(
      await eventually(context) { context in
        (try? context.fetch(FetchRequest<Event>()).count) == 1 && (try? context.registeredObject(for: second)) == nil
      })
  }

  @Test func historyPrunedWhileAProcessSleptIsReportedAsExpiredAndItsContextsRefresh() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let path = container.persistentStore.location
    _ = try runWriter([path, "maker", "1"]).finish()
    let id = try #require(
      try container.newBackgroundContext().performAndWait { try $0.fetchObjectIDs(for: FetchRequest<Event>()) }.first)
    let watcher = try runWriter(["expiry-watch", path, String(id.primaryKey ?? 0)])
    defer { watcher.kill() }
    #expect(try await offThePool { watcher.waitForLine("ready") })
    watcher.stop()
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).sequence = 77
      try context.save()
      for sequence in 1...3 {
        Event(context: context).sequence = sequence
        try context.save()
      }
    }
    let report = try HistoryPruner(container: container).prune(.keepLast(0))
    #expect(report.deletedTransactions == 5)
    kill(watcher.process.processIdentifier, SIGCONT)
    let line = "expired \(report.horizon.transactionNumber) sequence 77"
    #expect(
      try await offThePool { watcher.waitForLine(line) },
      "expected \(line); the watcher printed: \(watcher.transcript.all.joined())")
  }

  /// The read a commit wakes fails; the next poll reads again, with no further commit. Also
  /// while another file in the store's folder changes every 20 ms, more often than the poll
  /// (as a log or another store next to it would): its events wake the monitor and name other
  /// files, and must not put the poll off.
  @Test(.disabled(if: testsRunOnPostgreSQL, "a store file's change monitor"), arguments: [false, true])
  func aHistoryReadThatFailsIsRetriedAtThePollNotOnlyAtTheNextCommit(whileAnotherFileChanges: Bool)
    async throws
  {
    var options = StoreOptions()
    options.remoteChangePollInterval = .milliseconds(200)
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(Event.self), variant: "\(whileAnotherFileChanges)", options: options)
    let path = container.persistentStore.location
    let noise = path + ".noise"
    let stop = Atomic<Bool>(false)
    if whileAnotherFileChanges {
      Thread {
        var count = 0
        while !stop.load(ordering: .relaxed) {
          count += 1
          try? Data("\(count)\n".utf8).write(to: URL(fileURLWithPath: noise))
          usleep(20_000)
        }
      }.start()
    }
    defer {
      stop.store(true, ordering: .relaxed)
      try? FileManager.default.removeItem(atPath: noise)
    }
    let seen = Recorder<Int>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add(changes.inserted(Event.self).count) }
    }
    defer { observation.cancel() }
    try await Task.sleep(for: .milliseconds(300))  // the monitor has started and read once
    FaultInjection.monitorReads.withLock { $0[path] = 1 }
    defer { _ = FaultInjection.monitorReads.withLock { $0.removeValue(forKey: path) } }
    _ = try runWriter([path, "other", "1"]).finish()
    #expect(await seen.wait(for: 1, seconds: 10))
    #expect(FaultInjection.monitorReads.withLock { $0[path] } == 0)
  }

  @Test(.disabled(if: testsRunOnPostgreSQL, "a store file's change monitor"))
  func aMonitorWhoseReadConnectionFailsToOpenTriesAgainAtEachPoll() async throws {
    var options = StoreOptions()
    options.remoteChangePollInterval = .milliseconds(100)
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    FaultInjection.monitorOpens.withLock { $0[url.path] = 3 }
    defer { _ = FaultInjection.monitorOpens.withLock { $0.removeValue(forKey: url.path) } }
    let container = try PersistentContainer(
      name: "Test", model: ManagedObjectModel(Event.self), storeURL: url, options: options)
    let seen = Recorder<Int>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add(changes.inserted(Event.self).count) }
    }
    defer { observation.cancel() }
    _ = try runWriter([url.path, "other", "2"]).finish()  // while the monitor cannot open yet
    #expect(await seen.wait(for: 2, seconds: 10))
    #expect(seen.all == [1, 1])
    #expect(FaultInjection.monitorOpens.withLock { $0[url.path] } == 0)
  }

  @Test(.disabled(if: testsRunOnPostgreSQL, "a store file's change monitor"))
  func listenersWhosePositionCannotBeReadAtFirstStillHearLaterRemoteCommits() async throws {
    var options = StoreOptions()
    options.remoteChangePollInterval = .milliseconds(100)
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self), options: options)
    let path = container.persistentStore.location
    FaultInjection.publisherStarts.withLock { $0[path] = 1 }
    defer { _ = FaultInjection.publisherStarts.withLock { $0.removeValue(forKey: path) } }
    let seen = Recorder<Int>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add(changes.inserted(Event.self).count) }
    }
    defer { observation.cancel() }
    #expect(FaultInjection.publisherStarts.withLock { $0[path] } == 0)
    try await Task.sleep(for: .milliseconds(300))  // the monitor has taken the position
    _ = try runWriter([path, "other", "2"]).finish()
    #expect(await seen.wait(for: 2, seconds: 10))
    #expect(seen.all == [1, 1])
  }

  /// With the slow poll an hour away, inotify and the looks after it deliver every commit of
  /// a writer that commits as fast as it can, each noticed after its monitor woke.
  @Test(.disabled(if: testsRunOnPostgreSQL, "a store file's change monitor"))
  func inotifyAloneDeliversEveryCommitOfAFastWriter() async throws {
    var options = StoreOptions()
    options.remoteChangePollInterval = .seconds(3600)
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self), options: options)
    let seen = Recorder<(count: Int, timings: RemoteChangeTimings?)>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add((changes.inserted(Event.self).count, changes.remoteTimings)) }
    }
    defer { observation.cancel() }
    try await Task.sleep(for: .milliseconds(100))  // the monitor has started and read once
    _ = try runWriter([container.persistentStore.location, "other", "200"]).finish()
    #expect(await seen.wait(for: 200, seconds: 10))
    #expect(seen.all.map(\.count) == Array(repeating: 1, count: 200))
    #expect(
      seen.all.allSatisfy { seen in
        guard let timings = seen.timings else { return false }
        return timings.woke <= timings.noticed && timings.noticed <= timings.read
      })
  }

  /// A writer that commits a burst and stays open: its last commits must not wait for the
  /// slow poll (an hour away here), even though no event follows a commit's becoming visible
  /// and the monitor drained the events of the next commit while it read the one before.
  @Test(.disabled(if: testsRunOnPostgreSQL, "a store file's change monitor"))
  func theLastCommitsOfABurstArriveWithoutThePoll() async throws {
    var options = StoreOptions()
    options.remoteChangePollInterval = .seconds(3600)
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(Event.self), variant: "burst", options: options)
    let seen = Recorder<Int>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add(changes.insertedIDs.count) }
    }
    defer { observation.cancel() }
    try await Task.sleep(for: .milliseconds(100))  // the monitor has started and read once
    let holder = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), ["hold", container.persistentStore.location, "300"])
    defer { holder.kill() }
    #expect(holder.waitForLine("ready"))
    #expect(await seen.wait(for: 300, seconds: 10), "every commit of the burst, the writer still open")
  }

  @Test(.disabled(if: testsRunOnPostgreSQL, "a store file's change monitor"), arguments: [true, false])
  func withoutInotifyThePollAloneDeliversRemoteCommits(fastPoll: Bool) async throws {
    var options = StoreOptions()
    options.remoteChangeUsesInotify = false
    options.remoteChangePollInterval = fastPoll ? .milliseconds(50) : .seconds(3600)
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(Event.self), variant: "\(fastPoll)", options: options)
    let seen = Recorder<Int>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add(changes.inserted(Event.self).count) }
    }
    defer { observation.cancel() }
    try await Task.sleep(for: .milliseconds(100))  // the monitor has started and read once
    _ = try runWriter([container.persistentStore.location, "other", "1"]).finish()
    if fastPoll {
      #expect(await seen.wait(for: 1, seconds: 5), "the 50 ms poll found the commit")
    } else {
      try await Task.sleep(for: .milliseconds(500))
      #expect(seen.all.isEmpty, "no inotify, no poll yet: nothing woke the monitor")
    }
  }

  @Test func anObserverAddedFirstStillFindsTheMergeEnqueuedInAContextThatMergesAutomatically() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["before"], in: container)[0]
    let watcher = container.newBackgroundContext()
    let seen = Recorder<String>()
    // Added before the context subscribes: contexts are still served first.
    let observation = container.addStoreChangesObserver { _ in
      seen.add(watcher.performAndWait { context in (try? context.registeredObject(for: id))?.title ?? "none" })
    }
    defer { observation.cancel() }
    try await watcher.perform { context in
      context.automaticallyMergesChangesFromParent = true
      _ = try context.existingObject(with: id).title
    }
    for title in ["one", "two", "three"] {
      try await container.performBackgroundTask { context in
        try context.existingObject(with: id).title = title
        try context.save()
      }
    }
    #expect(await seen.wait(for: 3, seconds: 5))
    #expect(seen.all == ["one", "two", "three"])
  }

  @Test func aContextThatMergesAutomaticallyKeepsItsLoadedObjectsCurrent() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["before"], in: container)[0]
    let watcher = container.newBackgroundContext()
    // The watcher has the note loaded (a context keeps it registered: far below the
    // identity map's drop threshold) while another context changes it.
    try await watcher.perform { context in
      context.automaticallyMergesChangesFromParent = true
      _ = try context.existingObject(with: id).title
    }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).title = "after"
      try context.save()
    }
    #expect(await eventually(watcher) { context in (try? context.registeredObject(for: id))?.title == "after" })
  }
}

@Suite struct MergeSemanticsTests {
  @Test func mergingAnUpdateOfARowALaterTransactionDeletedMarksTheObjectDeletedAndReportsLostEdits() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["a"], in: container)[0]
    let start = try container.currentHistoryToken
    // A merger that lags: it loaded the note and edited it before the update and the delete.
    let lagging = container.newBackgroundContext()
    try await lagging.perform { context in try context.existingObject(with: id).status = .archived }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).title = "b"
      try context.save()
    }
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: id))
      try context.save()
    }
    let history = try container.fetchHistory(HistoryRequest(after: start))
    #expect(history.count == 2)
    let outcome = await lagging.perform { context in
      let note = (try? context.registeredObject(for: id))
      let result = context.mergeChanges(StoreChanges(history[0]))  // the update: its row is gone by now
      return (result, note?.isDeleted, note?.title, (try? context.registeredObject(for: id)) == nil, context.hasChanges)
    }
    #expect(outcome.0.deleted == [id.untyped])
    #expect(outcome.0.refreshed.isEmpty)
    #expect(outcome.0.discardedChanges == [id.untyped: ["status"]])
    #expect(outcome.1 == true)
    #expect(outcome.2 == "a", "its last known values")
    #expect(outcome.3)
    #expect(!outcome.4)
    // And a context that never had it merges the same history to nothing.
    let fresh = await container.newBackgroundContext().perform { context in
      (context.mergeChanges(StoreChanges(history[0])), context.mergeChanges(StoreChanges(history[1])))
    }
    #expect(fresh.0 == MergeResult())
    #expect(fresh.1 == MergeResult())
  }

  @Test func unsavedEditsThatADeletionDiscardsAreReported() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["a"], in: container)[0]
    let start = try container.currentHistoryToken
    let context = container.newBackgroundContext()
    try await context.perform { context in try context.existingObject(with: id).title = "edited here" }
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: id))
      try context.save()
    }
    let transaction = try #require(try container.fetchHistory(HistoryRequest(after: start)).first)
    let result = await context.perform { context in context.mergeChanges(StoreChanges(transaction)) }
    #expect(result.deleted == [id.untyped])
    #expect(result.discardedChanges == [id.untyped: ["title"]])
    let again = await context.perform { context in (context.mergeChanges(StoreChanges(transaction)), context.hasChanges)
    }
    #expect(again.0 == MergeResult(), "merging the same transaction twice changes nothing")
    #expect(!again.1)
  }

  @Test func aMergedUpdateKeepsUnsavedEditsOnTopAndMovesTheSnapshot() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["a"], in: container)[0]
    let start = try container.currentHistoryToken
    let context = container.newBackgroundContext()
    try await context.perform { context in
      let note = try context.existingObject(with: id)
      note.status = .published  // an unsaved edit of another attribute
    }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).title = "from elsewhere"
      try context.save()
    }
    let transaction = try #require(try container.fetchHistory(HistoryRequest(after: start)).first)
    let outcome = try await context.perform { context in
      let result = context.mergeChanges(StoreChanges(transaction))
      let second = context.mergeChanges(StoreChanges(transaction))
      let note = try context.existingObject(with: id)
      let seen = (note.title, note.status, context.hasChanges)
      try context.save()  // the snapshot moved with the merge: no conflict
      return (result.refreshed, second.refreshed, seen)
    }
    #expect(outcome.0 == [id.untyped])
    #expect(outcome.1.isEmpty, "merging the same transaction twice changes nothing")
    #expect(outcome.2.0 == "from elsewhere")
    #expect(outcome.2.1 == .published)
    #expect(outcome.2.2)
    let stored = try await container.newBackgroundContext().perform { context in
      let note = try context.existingObject(with: id)
      return (note.title, note.status)
    }
    #expect(stored.0 == "from elsewhere")
    #expect(stored.1 == .published)
  }

  @Test func aLaggingMergeShowsOneSnapshotAndMergesTheLaterTransactionsItHolds() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    let start = try container.currentHistoryToken
    let context = container.newBackgroundContext()
    try await context.perform { context in
      for id in ids { _ = try context.existingObject(with: id).title }
    }
    for (step, touched) in [[0], [0, 1]].enumerated() {  // tx 1 renames a; tx 2 renames a and b
      try await container.performBackgroundTask { other in
        for index in touched { try other.existingObject(with: ids[index]).title = "v\(step + 1)" }
        try other.save()
      }
    }
    let history = try container.fetchHistory(HistoryRequest(after: start))
    #expect(history.count == 2)
    let outcome = await context.perform { context in
      let first = context.mergeChanges(StoreChanges(history[0]))
      let titles = ids.map { (try? context.registeredObject(for: $0))?.title }
      return (first, titles, context.mergeChanges(StoreChanges(history[1])))
    }
    // a's row read now already holds tx 2, so tx 2 is merged with it: b too, not only a.
    #expect(outcome.1 == ["v2", "v2"], "never a's newer row beside b's older one")
    #expect(outcome.0.refreshed == Set(ids.map(\.untyped)))
    #expect(outcome.2 == MergeResult(), "tx 2 was merged already")
  }

  @Test func refreshWithMergeChangesReloadsAnObjectThatHasNoUnsavedChanges() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["a"], in: container)[0]
    let context = container.newBackgroundContext()
    try await context.perform { context in _ = try context.existingObject(with: id).title }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: id).title = "b"
      try context.save()
    }
    let state = await context.perform { context in
      let note = (try? context.registeredObject(for: id))
      if let note { context.refresh(note, mergeChanges: true) }
      return (note?.isFault, note?.title)
    }
    #expect(state.0 == false, "reloaded now, not turned into a fault")
    #expect(state.1 == "b")
  }

  @Test func aFaultWhoseRowIsGoneIsMarkedDeletedWithItsDefaultValues() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await saveNotes(["a"], in: container)[0]
    let context = container.newBackgroundContext()
    let fault = try await context.perform { context in try context.object(with: id).isFault }
    #expect(fault)
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: id))
      try context.save()
    }
    let after = try await context.perform { context in
      let note = try context.object(with: id)
      return (note.title, note.isDeleted, context.shouldDeleteInaccessibleFaults)
    }
    #expect(after.0 == "")
    #expect(after.1)
    #expect(after.2)
  }
}
