import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Issue 31 with processes: an app and an extension on one store, as PersistentHistoryTrackingKit
/// users run them. The extension writes and merges in processes of its own, another process
/// prunes what every consumer read, and the app — declared before its first run, killed with
/// SIGKILL and restarted — processes every transaction once its pipeline allows (finishing the
/// author "ignored"), prunes after merges, and never finds its unread history gone.
/// `TYPEDSTORE_SOAK=1` writes 4,000 transactions and kills the app 30 times.
@Suite(.serialized) struct AppAndExtensionTests {
  private static let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"
  private var helper: URL { builtProduct("typedstore-test-writer") }

  private func freshStore(_ name: String) throws -> (PersistentContainer, URL) {
    let url = PersistentContainer.testStoreURL(variant: name)
    try PersistentContainer.destroyPersistentStore(at: url)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-app-\(name)")
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    return (container, folder)
  }

  @Test func aDeclaredAppLosesNothingWhileTheExtensionWritesAndAnotherProcessPrunes() async throws {
    let (container, folder) = try freshStore("declared")
    let path = container.persistentStore.url.path
    let count = Self.soak ? 4_000 : 150
    let (killsWanted, killEvery) = Self.soak ? (30, count / 40) : (2, count / 4)
    let outcome = try await offThePool {
      () throws -> (app: [String], widget: String, pruned: String, kills: Int, ignored: Set<Int64>) in
      // At install time: the app is declared before it ever runs.
      let declared = try typedstore(["consumers", "add", "app", "--store", path, "--from-beginning"])
      guard declared.status == 0 else { return ([declared.stderr], "", "", 0, []) }
      let widgetLog = folder.appendingPathComponent("widget.log").path
      let widget = try SpawnedProcess(helper, ["consumer", path, "widget", widgetLog])
      let pruneStop = folder.appendingPathComponent("pruner.stop").path
      let pruner = try SpawnedProcess(helper, ["pruner", path, pruneStop])
      let writers = try [
        SpawnedProcess(helper, [path, "extension", String(count)]),
        SpawnedProcess(helper, [path, "ignored", String(count / 5)]),
      ]
      var finished = writers.map { $0.finish() }
      _ = FileManager.default.createFile(atPath: widgetLog + ".stop", contents: nil)
      let widgetOutput = widget.finish()
      // The extension wrote and read everything, the pruner ran all along: the app, which has
      // not run yet, still has every transaction to read.
      finished.append("horizon before the app: \(try container.persistentStore.historyHorizon().transactionNumber)")
      let ignored = Set(
        try container.fetchHistory(HistoryRequest()).filter { $0.author == "ignored" }.map(\.transactionNumber))

      let appLog = folder.appendingPathComponent("app.log").path
      func app() throws -> SpawnedProcess { try SpawnedProcess(helper, ["app", path, "app", appLog, "25"]) }
      var running = try app()
      var kills = 0
      let deadline = Date().addingTimeInterval(Self.soak ? 60 : 20)
      while kills < killsWanted && Date() < deadline {
        let lines = ((try? String(contentsOfFile: appLog, encoding: .utf8)) ?? "").split(separator: "\n").count
        if lines > (kills + 1) * killEvery {
          running.kill()
          finished.append(running.finish())
          running = try app()
          kills += 1
        }
        Thread.sleep(forTimeInterval: 0.005)
      }
      _ = FileManager.default.createFile(atPath: appLog + ".stop", contents: nil)
      finished.append(running.finish())
      // The pruner's next pass (every 100 ms) deletes what both consumers read now.
      let pruneDeadline = Date().addingTimeInterval(10)
      while try container.persistentStore.historyHorizon().transactionNumber == 0 && Date() < pruneDeadline {
        Thread.sleep(forTimeInterval: 0.01)
      }
      _ = FileManager.default.createFile(atPath: pruneStop, contents: nil)
      let pruned = pruner.finish()
      return (finished, widgetOutput, pruned, kills, ignored)
    }
    #expect(outcome.app.contains("horizon before the app: 0"), "\(outcome.app)")
    #expect(outcome.widget.contains("verified"), "\(outcome.widget)")
    #expect(!outcome.pruned.contains("error"), "\(outcome.pruned)")
    #expect(outcome.kills >= killsWanted)
    #expect(outcome.ignored.count == count / 5)
    #expect(outcome.app.last?.contains("verified") == true, "\(outcome.app.suffix(2))")
    #expect(!outcome.app.joined().contains("error"), "\(outcome.app)")

    // The app's log: each run goes on from its checkpoint, in order, and together they cover
    // every transaction; the author "ignored" ended its pipeline before the logging hook.
    let last = try container.currentHistoryToken.transactionNumber
    let problems = checkAppLog(folder.appendingPathComponent("app.log").path, through: last, finished: outcome.ignored)
    #expect(problems.isEmpty, "\(problems.prefix(5))")
    // After the app read everything, what both read went, and nothing either had not.
    let consumers = try container.persistentStore.historyConsumers()
    let horizon = try container.persistentStore.historyHorizon().transactionNumber
    #expect(horizon > 0, "the pruner deleted what every consumer read")
    // Strictly before each checkpoint: the transaction a consumer read last is kept.
    for consumer in consumers { #expect(consumer.checkpoint.transactionNumber > horizon, "\(consumer.name)") }
  }

  /// Every run ("start <pid> <checkpoint>") logs the transactions after its checkpoint one after
  /// the other; those of `finished` as "fin", the others as "tx"; together they cover 1...last.
  private func checkAppLog(_ path: String, through last: Int64, finished: Set<Int64>) -> [String] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    if !text.hasSuffix("\n") { lines.removeLast() }  // a line cut short by a kill
    var problems: [String] = []
    var seen = Set<Int64>()
    var expected: Int64?
    for line in lines {
      let words = line.split(separator: " ")
      guard words.count >= 2 else { continue }
      if words[0] == "start", words.count == 3, let checkpoint = Int64(words[2]) {
        expected = checkpoint + 1
        continue
      }
      guard let number = Int64(words[1]) else { continue }
      if words[0] == "tx", finished.contains(number) { problems.append("\(number) reached the logging hook") }
      if words[0] == "fin", !finished.contains(number) { problems.append("\(number) finished, not by 'ignored'") }
      // A finished transaction logs "fin" and no "tx": the next one follows it either way.
      if let next = expected, number != next { problems.append("\(number) where \(next) was due") }
      seen.insert(number)
      expected = number + 1
    }
    let missing = (1...max(1, last)).filter { !seen.contains($0) }
    if last > 0 && !missing.isEmpty { problems.append("\(missing.count) never processed, first \(missing[0])") }
    return problems
  }

  @Test func aNewAppReadsWhatTheExtensionWroteAndOneAfterAPruneIsToldItExpired() async throws {
    let (container, folder) = try freshStore("defaults")
    let path = container.persistentStore.url.path
    let (first, late, listed, pruned) = try await offThePool { () throws -> (String, String, ToolRun, Int64) in
      _ = try SpawnedProcess(helper, [path, "extension", "20"]).finish()
      // An app never declared, with the default options: it reads what the extension wrote,
      // and, pruning after every 5 merges, deletes what it read though it never writes.
      let appLog = folder.appendingPathComponent("app.log").path
      _ = FileManager.default.createFile(atPath: appLog + ".stop", contents: nil)
      let first = try SpawnedProcess(helper, ["app", path, "app", appLog, "5"]).finish()
      let pruned = try container.persistentStore.historyHorizon().transactionNumber
      let log = (try? String(contentsOfFile: appLog, encoding: .utf8)) ?? ""
      // Then another process prunes all but what the app read last ...
      _ = try typedstore(["history", "prune", "--store", path, "--keep-last", "0"])
      // ... and a second app, never declared, starts: it cannot read from the beginning.
      let lateLog = folder.appendingPathComponent("late.log").path
      _ = FileManager.default.createFile(atPath: lateLog + ".stop", contents: nil)
      let late = try SpawnedProcess(helper, ["app", path, "late", lateLog]).finish()
      // Declaring one from the beginning is refused as well, with the store as it was.
      let declared = try typedstore(["consumers", "add", "later", "--store", path, "--from-beginning"])
      let listed = try typedstore(["consumers", "list", "--store", path])
      return (
        first + log, late, ToolRun(status: declared.status, stdout: listed.stdout, stderr: declared.stderr), pruned
      )
    }
    #expect(first.contains("start") && first.contains("tx 1\n") && first.contains("tx 20\n"), "\(first)")
    #expect(first.contains("verified 20"), "\(first)")
    #expect(pruned == 19, "the app pruned what it read, all but its checkpoint's transaction")
    #expect(late.contains("error: the history asked for was deleted"), "\(late)")
    #expect(listed.status == 1 && listed.stderr.contains("the history asked for was deleted"), "\(listed.stderr)")
    #expect(
      listed.stdout.contains("app") && !listed.stdout.contains("late"),
      "the refused consumers left no row: \(listed.stdout)")
  }
}
