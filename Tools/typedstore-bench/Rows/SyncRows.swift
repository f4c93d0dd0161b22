import Foundation
import Synchronization
@_spi(Benchmarks) import TypedStore

// Sync: one-object saves while consumer processes follow, a consumer far behind catching up,
// a FetchedResultsController's diff after a merged change, and the latency from a commit in
// one process to its merge in another.

extension Bench {
  /// The same one-object saves into a store that 1, 3 or 10 consumer processes follow (each
  /// a HistoryMerger with a context) and into one nobody follows.
  func consumersThroughputRows() async throws {
    for count in [1, 3, 10] { try await consumersThroughputRow(followers: count) }
  }

  private func consumersThroughputRow(followers count: Int) async throws {
    let saves = n >= 100_000 ? 5000 : 200
    let name =
      "\(saves) one-object saves while \(count) consumer process\(count == 1 ? "" : "es") follow\(count == 1 ? "s" : "") "
      + "(raw column: nobody follows)"
    guard selected(name) else { return }
    let watched = try freshContainer("watched")
    let stop = directory.appendingPathComponent("followers-\(uniqueName("stop"))").path
    let followers = try (1...count).map { index in
      try ChildProcess.start(
        ["follow", watched.persistentStore.url.path, "consumer-\(index)", stop], output: FileHandle.nullDevice)
    }
    while try watched.persistentStore.historyConsumers().count < count { usleep(10_000) }
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
      try smallSaves(try freshContainer("unwatched", folder: "unwatched"))
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
    try await run(name, goal: 1.2) {
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
    let container = try freshContainer("latency")
    let stages = try measureMergeLatency(
      commits: commits, container: container, location: container.persistentStore.url.path,
      stageNames: [
        "A's save returned -> B's monitor woke (inotify)", "-> B saw data_version move",
        "-> history read and decoded", "-> observer called", "-> merged into a context",
      ])
    rows.append(
      ReportRow(
        name: name,
        note: String(
          format: "p50 %.3f ms, p99 %.3f ms (goal p50 ≤ 0.1 ms, p99 ≤ 1 ms)", stages.total.p50, stages.total.p99)
      ))
    for (stage, times) in stages.each {
      rows.append(
        ReportRow(
          name: "  merge latency stage: \(stage) (absolute)",
          note: String(format: "p50 %.3f ms, p99 %.3f ms", times.p50, times.p99)))
    }
  }

  /// An idle follower's CPU: a container whose change observer keeps its remote-change
  /// monitor running, in a store nobody writes, for 10 seconds (1 below N = 100,000).
  func idleFollowerRow() throws {
    let seconds = n >= 100_000 ? 10 : 1
    let name = "an idle follower's CPU time over \(seconds) s (absolute)"
    guard selected(name) else { return }
    let container = try freshContainer("idle")
    let observation = container.addStoreChangesObserver { _ in }
    usleep(100_000)  // the monitor has started and read what there was
    let before = processCPUNanoseconds()
    sleep(UInt32(seconds))
    let used = Double(processCPUNanoseconds() - before) / 1e6
    observation.cancel()
    rows.append(ReportRow(name: name, note: String(format: "%.2f ms of CPU (goal ≈ 0)", used)))
  }

  private func processCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  /// The latency row's stages, in milliseconds: p50 and p99 of the total and of each stage.
  struct LatencyStages {
    var total: (p50: Double, p99: Double)
    var each: [(String, (p50: Double, p99: Double))]
  }

  /// When process B saw one commit of process A: A's `save()` returned (A's clock), B's
  /// monitor woke, saw the commit and had read its history (the monitor's `RemoteChangeTimings`),
  /// B's observer was called, and the merge returned. One clock for both processes:
  /// `CLOCK_MONOTONIC` on one host.
  private struct Seen {
    var timings: RemoteChangeTimings?
    var called: UInt64
    var merged: UInt64
  }

  /// The latency row: process B (this one) merges every commit of process A (this program
  /// run as `latency-writer`) into a context as its change notification arrives, and notes
  /// when each stage ended; A notes when each `save()` returned.
  ///
  /// `location` is how process A names the store (a path, or a PostgreSQL store's URL);
  /// `stageNames` name the stages from A's save to the monitor's wake-up, its notice, its read,
  /// the observer's call and the merge (a follower that marks fewer stages repeats a time, and
  /// its names say which stages there are: empty names are left out).
  func measureMergeLatency(
    commits: Int, container: PersistentContainer, location: String, stageNames: [String]
  ) throws -> LatencyStages {
    let context = container.newBackgroundContext()
    let seen = Mutex<[Int64: Seen]>([:])
    let observation = container.addStoreChangesObserver { changes in
      guard changes.isRemote else { return }
      let called = monotonicNanoseconds()
      context.performAndWait { context in _ = context.mergeChanges(changes) }
      let merged = monotonicNanoseconds()
      seen.withLock { seen in
        for id in changes.insertedIDs {
          if let key = id.primaryKey {
            seen[key] = Seen(timings: changes.remoteTimings, called: called, merged: merged)
          }
        }
      }
    }
    let pipe = Pipe()
    let writer = try ChildProcess.start(
      ["latency-writer", location, String(commits)], output: pipe)
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    writer.waitUntilExit()
    let deadline = Date().addingTimeInterval(10)
    while seen.withLock({ $0.count }) < commits && Date() < deadline { usleep(1000) }
    observation.cancel()
    let all = seen.withLock { $0 }
    var stages: [[Double]] = Array(repeating: [], count: 6)
    for line in output.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count == 2, let key = Int64(fields[0]), let returned = UInt64(fields[1]) else { continue }
      guard let seen = all[key], let timings = seen.timings else {
        throw BenchError.mismatch("commit \(key) was never merged")
      }
      // The monitor may wake at a frame of the commit before `save()` returns (its wake-up
      // stage is negative then): detection counts from the later of the two.
      let marks = [max(returned, timings.woke), timings.noticed, timings.read, seen.called, seen.merged]
      stages[0].append(milliseconds(from: returned, to: seen.merged))
      stages[1].append(milliseconds(from: returned, to: timings.woke))
      for stage in 1..<marks.count {
        stages[stage + 1].append(milliseconds(from: marks[stage - 1], to: marks[stage]))
      }
    }
    guard stages[0].count == commits else {
      throw BenchError.mismatch("\(stages[0].count) of \(commits) commits timed")
    }
    return LatencyStages(
      total: percentiles(stages[0]),
      each: zip(stageNames, stages.dropFirst().map(percentiles)).filter { !$0.0.isEmpty }.map { ($0, $1) })
  }

  private func milliseconds(from start: UInt64, to end: UInt64) -> Double {
    (Double(end) - Double(start)) / 1e6
  }

  private func percentiles(_ values: [Double]) -> (p50: Double, p99: Double) {
    let sorted = values.sorted()
    return (sorted[sorted.count / 2], sorted[min(sorted.count - 1, sorted.count * 99 / 100)])
  }
}
