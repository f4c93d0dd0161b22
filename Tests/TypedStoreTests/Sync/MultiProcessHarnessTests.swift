import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Three writer processes (saves and batch requests) and two consumer processes (each a
/// `HistoryMerger` with live objects and a hook that logs transaction numbers) share one
/// store while a pruner deletes what both consumers have read; in the second test writers and
/// consumers are killed with SIGKILL at random moments and restarted. `TYPEDSTORE_SOAK=1`
/// runs each for a minute.
@Suite(.serialized) struct MultiProcessHarnessTests {
  private static let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"

  @Test func writersAndConsumersConvergeAndEveryConsumerSeesEveryTransactionOnceInOrder() async throws {
    let report = try await offThePool { try Harness(name: "calm", seconds: Self.soak ? 60 : 3, kills: false).run() }
    print("harness (calm): \(report)")
    report.check(expectingReplays: false)
  }

  @Test func killedAndRestartedWritersAndConsumersLoseNothingWhileAPrunerRuns() async throws {
    let report = try await offThePool { try Harness(name: "kills", seconds: Self.soak ? 60 : 6, kills: true).run() }
    print("harness (kills): \(report)")
    report.check(expectingReplays: true)
    #expect(report.kills >= 20)
  }
}

/// What a harness run saw.
private struct HarnessReport: CustomStringConvertible {
  var kills = 0
  var operations = 0
  var pruned = 0
  var transactions: Int64 = 0
  var horizon: Int64 = 0
  var errors: [String] = []
  var consumerResults: [String] = []
  var logProblems: [String] = []
  var replays = 0
  var checkpoints: [Int64] = []
  var integrity = ""
  var historyGaps = 0

  var description: String {
    "\(transactions) transactions, \(operations) writer operations, \(kills) kills, \(replays) replays, "
      + "\(pruned) pruned (horizon \(horizon)), consumers: \(consumerResults), errors: \(errors.count)"
  }

  func check(expectingReplays: Bool) {
    #expect(errors.isEmpty, "\(errors.prefix(5))")
    #expect(consumerResults.count == 2)
    #expect(consumerResults.allSatisfy { $0.hasPrefix("verified") }, "\(consumerResults)")
    #expect(consumerResults.allSatisfy { (Int($0.dropFirst("verified ".count)) ?? 0) > 0 }, "live objects were checked")
    #expect(logProblems.isEmpty, "\(logProblems.prefix(5))")
    #expect(checkpoints == [transactions, transactions], "both checkpoints at the newest transaction")
    #expect(integrity == "ok")
    #expect(historyGaps == 0)
    #expect(transactions > 20)
    if !expectingReplays { #expect(replays == 0) }
  }
}

private struct Harness {
  let name: String
  let seconds: Double
  let kills: Bool

  private var helper: URL { builtProduct("typedstore-test-writer") }

  func run() throws -> HarnessReport {
    let url = PersistentContainer.testStoreURL(variant: name)
    try PersistentContainer.destroyPersistentStore(at: url)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-harness-\(name)")
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let container = try PersistentContainer(name: "Harness", model: ManagedObjectModel(Event.self), storeURL: url)
    let path = container.persistentStore.location  // a file's path, or a PostgreSQL store's URL
    var report = HarnessReport()
    // Rows the consumers load as live objects when they start, for the writers to change.
    _ = try container.newBackgroundContext().performAndWait { context in
      try context.execute(BatchInsertRequest<Event>(count: 200) { index, event in event.sequence = index })
    }

    let logs = ["c1", "c2"].map { folder.appendingPathComponent("\($0).log").path }
    func consumer(_ index: Int) throws -> SpawnedProcess {
      try SpawnedProcess(helper, ["consumer", path, "c\(index + 1)", logs[index]])
    }
    let deadline = Date().addingTimeInterval(seconds)
    func writer(_ index: Int) throws -> SpawnedProcess {
      let remaining = max(0.2, deadline.timeIntervalSinceNow)
      return try SpawnedProcess(helper, ["soak-writer", path, "w\(index + 1)", String(format: "%.2f", remaining)])
    }
    var consumers = try (0..<2).map(consumer)
    // The pruner starts once both consumers are registered (each has processed the seed), so
    // that each of them sees every transaction from the first.
    let registered = Date().addingTimeInterval(20)
    while Date() < registered,
      !logs.allSatisfy({ ((try? String(contentsOfFile: $0, encoding: .utf8)) ?? "").contains("tx 1\n") })
    {
      Thread.sleep(forTimeInterval: 0.01)
    }
    let pruneStop = folder.appendingPathComponent("pruner.stop").path
    let pruner = try SpawnedProcess(helper, ["pruner", path, pruneStop])
    var writers = try (0..<3).map(writer)
    var finished: [String] = []  // output of processes that ended (killed or not)

    if kills {
      while deadline.timeIntervalSinceNow > 0.3 || report.kills < 20 {
        Thread.sleep(forTimeInterval: Double.random(in: 0.08...0.25))
        let victim = Int.random(in: 0..<5)
        if victim < 3 {
          writers[victim].kill()
          finished.append(writers[victim].finish())
          writers[victim] = try writer(victim)
        } else {
          consumers[victim - 3].kill()
          finished.append(consumers[victim - 3].finish())
          consumers[victim - 3] = try consumer(victim - 3)
        }
        report.kills += 1
      }
    }
    for process in writers { finished.append(process.finish()) }
    for log in logs { _ = FileManager.default.createFile(atPath: log + ".stop", contents: nil) }
    for process in consumers {
      let output = process.finish()
      finished.append(output)
      report.consumerResults += output.split(separator: "\n").filter {
        $0.hasPrefix("verified") || $0.hasPrefix("mismatch")
      }
      .map(String.init)
    }
    _ = FileManager.default.createFile(atPath: pruneStop, contents: nil)
    finished.append(pruner.finish())

    for line in finished.flatMap({ $0.split(separator: "\n") }) {
      if line.hasPrefix("error") { report.errors.append(String(line)) }
      if line.hasPrefix("ops "), let count = Int(line.dropFirst(4)) { report.operations += count }
      if line.hasPrefix("pruned "), let count = Int(line.dropFirst(7)) { report.pruned += count }
    }
    report.transactions = try container.currentHistoryToken.transactionNumber
    report.horizon = try container.persistentStore.historyHorizon().transactionNumber
    for log in logs { check(log: log, through: report.transactions, into: &report) }
    let consumersNow = try container.persistentStore.historyConsumers()
    report.checkpoints = consumersNow.map(\.checkpoint.transactionNumber)
    // The store's integrity and TypedStore's invariants (rows against history, relationships,
    // checkpoints), on either engine.
    let check = try container.persistentStore.checkConsistency()
    report.integrity = check.passed ? "ok" : check.problems.map(\.description).joined(separator: "; ")
    let kept = try container.fetchHistory(HistoryRequest(after: try container.persistentStore.historyHorizon()))
    let numbers = kept.map(\.transactionNumber)
    report.historyGaps = numbers.isEmpty ? 0 : (numbers == Array(numbers[0]...numbers[numbers.count - 1]) ? 0 : 1)
    return report
  }

  /// Each consumer's log: every incarnation ("start <pid> <checkpoint>") processed the
  /// transactions after its checkpoint one after the other, in order; together they cover
  /// every transaction from 1 through `last` (numbers seen again after a restart are replays,
  /// which the number lets a hook recognize).
  private func check(log: String, through last: Int64, into report: inout HarnessReport) {
    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    if !text.hasSuffix("\n") { lines.removeLast() }  // a line cut short by a kill
    var seen = Set<Int64>()
    var expected: Int64?
    for line in lines {
      let words = line.split(separator: " ")
      if words.first == "start", words.count == 3, let checkpoint = Int64(words[2]) {
        expected = checkpoint + 1
      } else if words.first == "tx", words.count == 2, let number = Int64(words[1]) {
        if let next = expected, number != next {
          report.logProblems.append("\(log): transaction \(number) where \(next) was due")
        }
        if seen.contains(number) { report.replays += 1 }
        seen.insert(number)
        expected = number + 1
      }
    }
    let missing = (1...max(1, last)).filter { !seen.contains($0) }
    if last > 0 && !missing.isEmpty {
      report.logProblems.append("\(log): \(missing.count) transactions never processed, first \(missing[0])")
    }
  }
}
