import Foundation
import Synchronization
import TypedStore

// Sync: one-object saves while consumer processes follow, a consumer far behind catching up,
// a FetchedResultsController's diff after a merged change, and the latency from a commit in
// one process to its merge in another.

extension Bench {
  /// The same one-object saves into a store three consumer processes follow (each a
  /// HistoryMerger with a context) and into one nobody follows.
  func consumersThroughputRow() async throws {
    let saves = n >= 100_000 ? 5000 : 200
    let name = "\(saves) one-object saves while 3 consumer processes follow (raw column: nobody follows)"
    guard selected(name) else { return }
    let watched = try freshContainer("watched")
    let stop = directory.appendingPathComponent("followers-\(uniqueName("stop"))").path
    let followers = try (1...3).map { index in
      try ChildProcess.start(
        ["follow", watched.persistentStore.url.path, "consumer-\(index)", stop], output: FileHandle.nullDevice)
    }
    while try watched.persistentStore.historyConsumers().count < 3 { usleep(10_000) }
    func smallSaves(_ container: PersistentContainer) throws -> Double {
      let context = container.newBackgroundContext()
      return try time {
        for index in 0..<saves {
          try context.performAndWait { context in
            fill(BenchItem(context: context), BenchRow(index))
            try context.save()
          }
        }
      }
    }
    try await run(name, goal: 1.1) {
      try smallSaves(try freshContainer("unwatched"))
    } typed: {
      try smallSaves(watched)
    }
    _ = FileManager.default.createFile(atPath: stop, contents: nil)
    for process in followers { process.waitUntilExit() }
  }

  /// A consumer far behind: a HistoryMerger (one context) that has not run for N one-object
  /// saves catches up, against reading the same history with the C API.
  func catchUpRow() async throws {
    let n = self.n
    let name = "a consumer \(n) transactions behind catches up (raw column: reading them with the C API)"
    guard selected(name) else { return }
    let container = try freshContainer("catch-up")
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      for index in 0..<n {
        fill(BenchItem(context: context), BenchRow(index))
        try context.save()
      }
    }
    try container.persistentStore.checkpoint()
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    let pruner = HistoryPruner(container: container)
    try await run(name, goal: 2.0) {
      try time { try verify("catch-up raw", try raw.readHistory(after: 0).changes, n) }
    } typed: {
      try? pruner.store.removeHistoryConsumer(named: "behind")
      var options = HistoryMerger.Options()
      options.startsAt = .beginning
      let merger = try HistoryMerger(container: container, consumer: "behind", contexts: [context], options: options)
      let ms = try await timeAwaiting { try await merger.start() }
      await merger.stop()
      try verify("catch-up", merger.checkpoint.transactionNumber, Int64(n))
      return ms
    }
  }

  /// A live query: a FetchedResultsController over 10,000 objects, and another context's save
  /// of one of them (its sort key changed), merged from history: the merge and the diff.
  func frcDiffRow() throws {
    let name = "FetchedResultsController diff after one merged change, 10000-object results (absolute)"
    guard selected(name) else { return }
    let container = try freshContainer("frc")
    try seed(container, rows: 10_000)
    let live = container.newModelContext(name: "live")
    let controller = FetchedResultsController(
      fetchRequest: FetchRequest<BenchItem>(sortBy: [SortDescriptor(\.score)]), context: live)
    try controller.performFetch()
    let writer = container.newModelContext(name: "writer")
    let items = try writer.fetch(FetchRequest<BenchItem>(sortBy: [SortDescriptor(\.number)]))
    var token = try container.currentHistoryToken
    var timings: [Double] = []
    var generator = SystemRandomNumberGenerator()
    for round in 0..<300 {
      let item = items[Int.random(in: 0..<items.count, using: &generator)]
      item.score = Double.random(in: 0..<5_000, using: &generator)
      try writer.save()
      let transactions = try container.fetchHistory(HistoryRequest(after: token))
      token = try container.currentHistoryToken
      let ms = try time { for transaction in transactions { live.mergeChanges(StoreChanges(transaction)) } }
      if round >= 20 { timings.append(ms) }  // after a warm-up
    }
    try verify("frc", controller.fetchedObjects.count, 10_000)
    timings.sort()
    let (p50, p99) = (timings[timings.count / 2], timings[timings.count * 99 / 100])
    rows.append(ReportRow(name: name, note: String(format: "p50 %.3f ms, p99 %.3f ms (goal ≤ 1 ms)", p50, p99)))
  }

  func mergeLatencyRow() throws {
    let commits = n >= 100_000 ? 1000 : 100
    let name = "commit returned in process A -> merged into a context in process B, \(commits) commits (absolute)"
    guard selected(name) else { return }
    let (p50, p99) = try measureMergeLatency(commits: commits)
    rows.append(
      ReportRow(
        name: name, note: String(format: "p50 %.2f ms, p99 %.2f ms (goal p50 ≤ 1 ms, p99 ≤ 10 ms)", p50, p99)))
  }

  /// The latency row: process B (this one) merges every commit of process A (this program
  /// run as `latency-writer`) into a context as its change notification arrives, and notes
  /// when each merge returned; A notes when each `save()` returned. Returns p50 and p99 of the
  /// differences, in milliseconds.
  private func measureMergeLatency(commits: Int) throws -> (Double, Double) {
    let container = try freshContainer("latency")
    let context = container.newBackgroundContext()
    let merged = Mutex<[Int64: UInt64]>([:])
    let observation = container.addStoreChangesObserver { changes in
      guard changes.isRemote else { return }
      context.performAndWait { context in _ = context.mergeChanges(changes) }
      let now = monotonicNanoseconds()
      merged.withLock { times in
        for id in changes.insertedIDs { if let key = id.primaryKey { times[key] = now } }
      }
    }
    let pipe = Pipe()
    let writer = try ChildProcess.start(
      ["latency-writer", container.persistentStore.url.path, String(commits)], output: pipe)
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    writer.waitUntilExit()
    let deadline = Date().addingTimeInterval(10)
    while merged.withLock({ $0.count }) < commits && Date() < deadline { usleep(1000) }
    observation.cancel()
    let times = merged.withLock { $0 }
    var latencies: [Double] = []
    for line in output.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count == 2, let key = Int64(fields[0]), let returned = UInt64(fields[1]) else { continue }
      guard let mergedAt = times[key] else { throw BenchError.mismatch("commit \(key) was never merged") }
      latencies.append((Double(mergedAt) - Double(returned)) / 1e6)
    }
    guard latencies.count == commits else {
      throw BenchError.mismatch("\(latencies.count) of \(commits) commits timed")
    }
    latencies.sort()
    return (latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)])
  }
}
