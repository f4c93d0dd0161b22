import Foundation
import Spawning
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Processes that open one new path at the same moment: exactly one creates the store, the
/// others wait and open it, and every save that returned is in the store afterwards.
///
/// The short run is part of the test command; `TYPEDSTORE_SOAK=1` runs 200 trials.
@Suite(.serialized) struct CreationRaceTests {
  struct Tally: CustomStringConvertible {
    var trials = 0
    var processes = 0
    var failedOpens = 0
    var failedSaves = 0
    var lostCommits = 0
    var duplicateKeys = 0
    var kills = 0
    var problems: [String] = []

    var description: String {
      "\(trials) trials × 8 processes (\(processes) in all, \(kills) killed): \(failedOpens) failed opens, "
        + "\(failedSaves) failed saves, \(lostCommits) lost acknowledged commits, \(duplicateKeys) duplicate keys"
    }
  }

  @Test func eightProcessesRacingToCreateOneStoreAllOpenItAndLoseNothing() async throws {
    let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"
    let tally = try await offThePool {
      var tally = Tally()
      for trial in 0..<(soak ? 200 : 10) {
        try runTrial(trial, killing: trial % 2 == 1, into: &tally)
      }
      return tally
    }
    print("creation race: \(tally)")
    #expect(tally.failedOpens == 0, "\(tally.problems.prefix(20))")
    #expect(tally.failedSaves == 0, "\(tally.problems.prefix(20))")
    #expect(tally.lostCommits == 0, "\(tally.problems.prefix(20))")
    #expect(tally.duplicateKeys == 0, "\(tally.problems.prefix(20))")
    #expect(tally.problems.isEmpty, "\(tally.problems.prefix(20))")
  }

  /// One trial: 8 processes open a path that does not exist yet at the same millisecond and
  /// save 2 events each; with `killing`, one of them is killed with SIGKILL at a random
  /// moment of its open or saves.
  private func runTrial(_ trial: Int, killing: Bool, into tally: inout Tally) throws {
    let url = PersistentContainer.testStoreURL(variant: "\(trial)")
    try PersistentContainer.destroyPersistentStore(at: url)
    let start = Date().timeIntervalSince1970 * 1000 + 150
    let runs = try (0..<8).map { index in
      try SpawnedProcess(
        builtProduct("typedstore-test-writer"),
        ["race", url.path, "writer-\(index)", "2", String(format: "%.0f", start)])
    }
    tally.trials += 1
    tally.processes += runs.count
    var victim: Int?
    if killing {
      victim = Int.random(in: 0..<runs.count)
      let delay = start / 1000 - Date().timeIntervalSince1970 + Double.random(in: 0...0.06)
      if delay > 0 { Thread.sleep(forTimeInterval: delay) }
      if let victim { kill(runs[victim].process.processIdentifier, SIGKILL) }
      tally.kills += 1
    }

    // What each process was told: saves that returned are acknowledged commits.
    var acknowledged: [(author: String, sequence: Int, key: Int64)] = []
    for (index, run) in runs.enumerated() {
      let output = run.finish()
      let author = "writer-\(index)"
      for line in output.split(separator: "\n") {
        let words = line.split(separator: " ")
        if words.first == "saved", words.count == 3, let sequence = Int(words[1]), let key = Int64(words[2]) {
          acknowledged.append((author, sequence, key))
        } else if line.hasPrefix("open failed") {
          tally.failedOpens += 1
          tally.problems.append("trial \(trial) \(author): \(line)")
        } else if line.hasPrefix("save failed") {
          tally.failedSaves += 1
          tally.problems.append("trial \(trial) \(author): \(line)")
        }
      }
      if index != victim && run.process.terminationStatus != 0 && !output.contains("failed") {
        tally.problems.append("trial \(trial) \(author) exited \(run.process.terminationStatus): \(output)")
      }
    }

    let keys = acknowledged.map(\.key)
    tally.duplicateKeys += keys.count - Set(keys).count
    let container = try PersistentContainer(name: "Race", model: ManagedObjectModel(Event.self), storeURL: url)
    let rows = try container.newBackgroundContext().performAndWait { context in
      try context.fetch(FetchRequest<Event>()).map { ($0.managedID.primaryKey ?? -1, $0.source, $0.sequence) }
    }
    var byKey: [Int64: (String, Int)] = [:]
    for (key, source, sequence) in rows { byKey[key] = (source, sequence) }
    for commit in acknowledged {
      guard let row = byKey[commit.key], row == (commit.author, commit.sequence) else {
        tally.lostCommits += 1
        tally.problems.append("trial \(trial): \(commit) is not in the store")
        continue
      }
    }
    let history = try container.fetchHistory(HistoryRequest())
    if history.count != rows.count {
      tally.problems.append("trial \(trial): \(rows.count) rows but \(history.count) transactions")
    }
    let integrity = try container.persistentStore.writer.withConnection {
      try $0.scalarText("PRAGMA integrity_check")
    }
    if integrity != "ok" { tally.problems.append("trial \(trial): integrity_check says \(integrity ?? "nil")") }
  }
}

/// A child process whose standard output is collected.
struct SpawnedProcess {
  let process = POSIXProcess()
  private let output = Pipe()
  /// What `waitForLine` has read so far, for failure messages.
  let transcript = Recorder<String>()

  /// Starts `executable`; `environment` adds to this process's.
  init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
    }
    process.standardOutput = output
    try process.run()
  }

  /// Waits until the process prints a line starting with `prefix`: false if it ends first or
  /// nothing matches within `seconds` (a failed expectation, never a hung test run).
  func waitForLine(_ prefix: String, seconds: Double = 60) -> Bool {
    var text = ""
    let deadline = Date().addingTimeInterval(seconds)
    let descriptor = output.fileHandleForReading.fileDescriptor
    while true {
      let remaining = deadline.timeIntervalSinceNow
      if remaining <= 0 { return false }
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let ready = poll(&poller, 1, Int32(min(remaining * 1000, 1000)))
      if ready < 0 && errno != EINTR { return false }
      if ready <= 0 { continue }
      let data = output.fileHandleForReading.availableData
      if data.isEmpty { return false }
      let chunk = String(decoding: data, as: UTF8.self)
      transcript.add(chunk)
      text += chunk
      if text.split(separator: "\n").contains(where: { $0.hasPrefix(prefix) }) { return true }
    }
  }

  /// Sends SIGSTOP and waits until the kernel reports the process stopped: until then its
  /// threads may still run (and read what the test commits next).
  func stop() {
    Foundation.kill(process.processIdentifier, SIGSTOP)
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      let stat = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)) ?? ""
      // The state follows the parenthesized command name: "pid (name) T ...".
      if let close = stat.lastIndex(of: ")"), stat[stat.index(after: close)...].hasPrefix(" T") { return }
      usleep(1000)
    }
  }

  /// Kills the process with SIGKILL and waits for it.
  func kill() {
    Foundation.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// Waits for the process to end and returns what it printed.
  /// A process still running after `seconds` is killed, so a hung child fails its test.
  func finish(seconds: Double = 300) -> String {
    let pid = process.processIdentifier
    let watchdog = DispatchWorkItem { Foundation.kill(pid, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
    defer { watchdog.cancel() }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
  }
}

/// Runs blocking work (waiting for processes) on a thread of its own, not on the pool the
/// other tests' tasks share.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread {
      continuation.resume(with: Result { try body() })
    }
  }
}
