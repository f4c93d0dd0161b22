import Foundation
import Spawning
import Testing
import TypedStoreTesting

@testable import TypedStore

// The graph the `graph-writer` processes edit (Tests/TestWriter/GraphWriter.swift declares the
// same classes, so both sides have one model and one version hash).

final class Crate: ManagedObject {
  @Attribute var label: String = ""
  @Relationship(deleteRule: .cascade) var items: Set<Item>
}

final class Item: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \Crate.items) var crate: Crate?
  @Relationship() var stickers: Set<Sticker>
}

final class Sticker: ManagedObject {
  @Attribute var text: String = ""
  @Relationship(inverse: \Item.stickers) var items: Set<Item>
}

/// Three processes edit one graph at once (saves, moves, cascades through contexts and batch
/// requests, many-to-many links); in the second test they are killed with SIGKILL at random
/// moments and restarted. Afterwards the store passes `checkConsistency()` (integrity, rows
/// against history, no key or link naming a missing row) and both sides of every relationship
/// agree when fetched. `TYPEDSTORE_SOAK=1` runs each for 30 seconds.
@Suite(.serialized) struct GraphProcessTests {
  private static let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"
  private static let model: ManagedObjectModel = {
    do { return try ManagedObjectModel(Crate.self, Item.self, Sticker.self) } catch { fatalError("\(error)") }
  }()

  @Test func processesEditingOneGraphLeaveItConsistent() async throws {
    let url = PersistentContainer.testStoreURL()
    let outcome = try await offThePool { try Self.run(url: url, seconds: Self.soak ? 30 : 3, killing: false) }
    print("graph processes (calm): \(outcome.summary)")
    #expect(outcome.errors.isEmpty, "\(outcome.errors.prefix(3))")
    #expect(outcome.operations > 30)
    try await Self.checkGraph(url)
  }

  @Test func killedProcessesLeaveTheGraphConsistent() async throws {
    let url = PersistentContainer.testStoreURL()
    let outcome = try await offThePool { try Self.run(url: url, seconds: Self.soak ? 30 : 4, killing: true) }
    print("graph processes (kills): \(outcome.summary)")
    #expect(outcome.errors.isEmpty, "\(outcome.errors.prefix(3))")
    #expect(outcome.kills >= 5)
    try await Self.checkGraph(url)
  }

  /// Three processes link new stickers to one item, each from a context whose copy of the
  /// item's stickers goes stale as the others save; one is killed part way. Every link a
  /// process saw saved is in the store, and every sticker is linked (each was saved with its
  /// link). Before a save wrote only its own changes, each one erased the others' links.
  @Test func processesLinkingToOneObjectFromStaleCopiesKeepEachOthersLinks() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let container = try PersistentContainer(name: "Graph", model: Self.model, storeURL: url)
    try await container.newBackgroundContext().perform { context in
      Item(context: context).name = "shared"
      try context.save()
    }
    let count = Self.soak ? 400 : 40
    // Each reads the item's stickers, then all start saving at once.
    let start = String(Date().timeIntervalSince1970 + 1.5)
    let reported = try await offThePool { () throws -> [String] in
      let processes = try (0..<3).map { index in
        let process = POSIXProcess()
        process.executableURL = builtProduct("typedstore-test-writer")
        // The third runs until it is killed, once the other two are done.
        process.arguments = [
          "link-writer", storeLocation(url), "w\(index)", String(index < 2 ? count : 1_000_000), start,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return (process, output)
      }
      for (process, _) in processes.prefix(2) { process.waitUntilExit() }
      Thread.sleep(forTimeInterval: Double.random(in: 0...0.05))
      kill(processes[2].0.processIdentifier, SIGKILL)
      var reported: [String] = []
      for (index, (process, output)) in processes.enumerated() {
        process.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
          .split(separator: "\n")
        if index < 2 { #expect(lines.last == "done", "\(lines.suffix(2))") }
        let linked = lines.filter { $0.hasPrefix("linked ") }.map { String($0.dropFirst("linked ".count)) }
        if index == 2 { print("link writers: the killed one had saved \(linked.count)") }
        reported += linked
      }
      return reported
    }
    #expect(reported.count >= 2 * count)  // the killed one may have saved none
    try await container.newBackgroundContext().perform { context in
      let item = try #require(try context.fetch(FetchRequest<Item>()).first)
      let linked = Set(item.stickers.map(\.text))
      #expect(
        Set(reported).subtracting(linked).isEmpty, "lost: \(Set(reported).subtracting(linked).sorted().prefix(5))")
      #expect(try context.count(for: FetchRequest<Sticker>()) == linked.count)
    }
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  @Test func checkConsistencyReportsAKeyThatNamesAMissingRow() async throws {
    let container = try PersistentContainer.makeTest(model: Self.model)
    try await container.newBackgroundContext().perform { context in
      let crate = Crate(context: context)
      crate.$items.insert(Item(context: context))
      try context.save()
    }
    #expect(try container.persistentStore.checkConsistency().passed)
    // Another tool writes a key to a crate that does not exist.
    try container.persistentStore.executeBehindTheStoresBack("UPDATE \"Item\" SET crate = 9999")
    let problems = try container.persistentStore.checkConsistency().problems
    #expect(problems.contains { $0.kind == .relationships && $0.message.contains("Item") })
  }

  private struct Outcome {
    var operations = 0
    var dangling = 0
    var kills = 0
    var errors: [String] = []
    var summary: String { "\(operations) operations, \(dangling) dangling refusals, \(kills) kills" }
  }

  private static func run(url: URL, seconds: Double, killing: Bool) throws -> Outcome {
    try PersistentContainer.destroyPersistentStore(at: url)
    _ = try PersistentContainer(name: "Graph", model: model, storeURL: url)  // created before the writers start
    let helper = builtProduct("typedstore-test-writer")
    func start(_ index: Int, for duration: Double) throws -> (POSIXProcess, Pipe) {
      let process = POSIXProcess()
      process.executableURL = helper
      process.arguments = ["graph-writer", storeLocation(url), "w\(index)", String(duration)]
      let output = Pipe()
      process.standardOutput = output
      process.standardError = output
      try process.run()
      return (process, output)
    }
    var outcome = Outcome()
    func collect(_ process: POSIXProcess, _ output: Pipe, killed: Bool) {
      process.waitUntilExit()
      let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      for line in text.split(separator: "\n") {
        let words = line.split(separator: " ")
        if words.first == "ops", words.count == 4 {
          outcome.operations += Int(words[1]) ?? 0
          outcome.dangling += Int(words[3]) ?? 0
        } else if !killed {
          outcome.errors.append(String(line))
        }
      }
      if !killed && process.terminationStatus != 0 { outcome.errors.append("exit \(process.terminationStatus)") }
    }
    let deadline = Date().addingTimeInterval(seconds)
    var running = try (0..<3).map { try start($0, for: killing ? 60 : seconds) }
    if killing {
      var generation = 3
      while Date() < deadline {
        Thread.sleep(forTimeInterval: Double.random(in: 0.1...0.4))
        let victim = Int.random(in: 0..<running.count)
        kill(running[victim].0.processIdentifier, SIGKILL)
        collect(running[victim].0, running[victim].1, killed: true)
        outcome.kills += 1
        running[victim] = try start(generation, for: 60)
        generation += 1
      }
      // The last generation runs to a normal end, briefly.
      for (process, output) in running {
        kill(process.processIdentifier, SIGKILL)
        collect(process, output, killed: true)
      }
      running = try (0..<3).map { try start(100 + $0, for: 0.5) }
    }
    for (process, output) in running { collect(process, output, killed: false) }
    return outcome
  }

  private static func checkGraph(_ url: URL) async throws {
    let container = try PersistentContainer(name: "Graph", model: model, storeURL: url)
    let report = try container.persistentStore.checkConsistency()
    #expect(report.passed, "\(report.problems.prefix(5))")
    try await container.newBackgroundContext().perform { context in
      var request = FetchRequest<Crate>()
      request.relationshipKeyPathsForPrefetching = [\.items]
      for crate in try context.fetch(request) {
        #expect(crate.items.allSatisfy { $0.crate === crate })
      }
      let items = try context.fetch(FetchRequest<Item>())
      #expect(!items.isEmpty)
      for item in items {
        if let crate = item.crate { #expect(crate.items.contains { $0 === item }) }
        #expect(item.stickers.allSatisfy { sticker in sticker.items.contains { $0 === item } })
      }
    }
  }
}
