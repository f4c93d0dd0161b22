import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// The writer's version 2 of `Event` (`Tests/TestWriter/MigrationWriter.swift`): a required
/// attribute with a default, so migrating rebuilds the table.
final class EventVersion2: ManagedObject {
  override class var entityName: String { "Event" }
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
  @Attribute var priority: Int = 5
}

/// A version 1 store of `count` events, made in one batch insert and closed.
private func makeEventStore(_ url: URL, count: Int) throws {
  try PersistentContainer.destroyPersistentStore(at: url)
  let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
  try container.viewContext.performAndWait { context in
    _ = try context.execute(
      BatchInsertRequest<Event>(count: count) { index, draft in
        draft.source = "fill"
        draft.sequence = index
      })
  }
}

private func walSize(_ url: URL) -> Int {
  ((try? FileManager.default.attributesOfItem(atPath: url.path + "-wal"))?[.size] as? Int) ?? 0
}

private func scalar(_ url: URL, _ sql: String) throws -> Int64? {
  try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt(sql)
}

/// Processes that migrate one store: killed half way, or racing to be the one that migrates.
///
/// Short runs are part of the test command; `TYPEDSTORE_SOAK=1` runs many more trials.
@Suite(.serialized) struct MigrationProcessTests {
  private let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"

  @Test func aMigrationKilledHalfWayLeavesTheOldVersionIntactAndOpenable() async throws {
    let trials = soak ? 30 : 3
    let rows = 200_000
    let outcome = try await offThePool {
      var old = 0
      var migrated = 0
      var midWrite = 0
      var problems: [String] = []
      for trial in 0..<trials {
        let url = PersistentContainer.testStoreURL(variant: "\(trial)")
        try makeEventStore(url, count: rows)
        let history = try scalar(url, "SELECT count(*) FROM _history_transaction")
        let walBefore = walSize(url)
        let child = try SpawnedProcess(
          builtProduct("typedstore-test-writer"), ["migrate-open", url.path, "killed", "0"])
        guard child.waitForLine("migrating") else {
          problems.append("trial \(trial): the child did not start")
          continue
        }
        if trial % 2 == 0 {
          // Killed while the migration writes: as soon as its pages reach the log (SQLite
          // spills the rebuilt table there before the commit).
          let deadline = Date().addingTimeInterval(20)
          while walSize(url) < walBefore + 512 * 1024 && Date() < deadline { usleep(500) }
        } else {
          Thread.sleep(forTimeInterval: Double.random(in: 0...0.6))  // at any moment
        }
        child.kill()
        // Pages the killed migration had written into the log without committing them.
        let wroteUncommitted = walSize(url) > walBefore
        var noMigration = StoreOptions()
        noMigration.shouldMigrateStoreAutomatically = false
        do {
          let container = try PersistentContainer(
            name: "Events", model: ManagedObjectModel(Event.self), storeURL: url, options: noMigration)
          let count = try container.viewContext.performAndWait { try $0.count(for: FetchRequest<Event>()) }
          if count != rows { problems.append("trial \(trial): the old version has \(count) rows") }
          let after = try scalar(url, "SELECT count(*) FROM _history_transaction")
          if after != history {
            problems.append("trial \(trial): history \(String(describing: history)) → \(String(describing: after))")
          }
          old += 1
          if wroteUncommitted { midWrite += 1 }
        } catch StoreError.modelMismatch {
          // The migration had committed: the store is wholly at version 2.
          let container = try PersistentContainer(
            name: "Events", model: ManagedObjectModel(EventVersion2.self), storeURL: url)
          let defaults = try container.viewContext.performAndWait { context in
            try context.count(for: FetchRequest<EventVersion2>(predicate: #Predicate { $0.priority == 5 }))
          }
          if defaults != rows { problems.append("trial \(trial): the new version has \(defaults) migrated rows") }
          migrated += 1
        }
        let integrity = try SQLiteConnection(path: url.path, mode: .readOnly).scalarText("PRAGMA integrity_check")
        if integrity != "ok" { problems.append("trial \(trial): integrity_check: \(integrity ?? "nil")") }
      }
      return (old, migrated, problems, midWrite)
    }
    print(
      "migration kills: \(outcome.0) left at version 1 (\(outcome.3) after writing into the log), "
        + "\(outcome.1) at version 2")
    #expect(outcome.2.isEmpty, "\(outcome.2)")
    #expect(outcome.0 + outcome.1 == trials)
    #expect(outcome.3 >= 1, "no kill landed while the migration was writing")
  }

  @Test func eightProcessesOpeningAnOldStoreMigrateItExactlyOnceAndAllOpen() async throws {
    let trials = soak ? 40 : 3
    let rows = 1_000
    let problems = try await offThePool {
      var problems: [String] = []
      for trial in 0..<trials {
        let url = PersistentContainer.testStoreURL(variant: "\(trial)")
        try makeEventStore(url, count: rows)
        let start = Date().timeIntervalSince1970 * 1000 + 300
        let runs = try (0..<8).map { index in
          try SpawnedProcess(
            builtProduct("typedstore-test-writer"),
            ["migrate-open", url.path, "writer-\(index)", String(format: "%.0f", start)])
        }
        var saved: [Int64: String] = [:]
        for (index, run) in runs.enumerated() {
          let output = run.finish()
          for line in output.split(separator: "\n") where line.hasPrefix("saved ") {
            if let key = Int64(line.dropFirst(6)) { saved[key] = "writer-\(index)" }
          }
          if run.process.terminationStatus != 0 || !output.contains("saved ") {
            problems.append("trial \(trial) writer-\(index): \(output)")
          }
        }
        let container = try PersistentContainer(
          name: "Events", model: ManagedObjectModel(EventVersion2.self), storeURL: url)
        let stored = try container.viewContext.performAndWait { context in
          try context.fetch(FetchRequest<EventVersion2>(predicate: #Predicate { $0.priority == 9 })).map {
            ($0.managedID.primaryKey ?? -1, $0.source)
          }
        }
        let total = try container.viewContext.performAndWait { try $0.count(for: FetchRequest<EventVersion2>()) }
        if total != rows + 8 { problems.append("trial \(trial): \(total) rows, expected \(rows + 8)") }
        for (key, source) in stored where saved[key] != source {
          problems.append("trial \(trial): row \(key) of \(source) was not acknowledged")
        }
        if saved.count != 8 { problems.append("trial \(trial): \(saved.count) saves acknowledged") }
        let markers = try scalar(
          url,
          "SELECT count(*) FROM _history_transaction WHERE author = '\(PersistentStore.migrationTransactionAuthor)'")
        if markers != 1 { problems.append("trial \(trial): \(String(describing: markers)) migration transactions") }
        if try scalar(url, "SELECT count(*) FROM _model_versions") != 2 {
          problems.append("trial \(trial): _model_versions does not hold two versions")
        }
      }
      return problems
    }
    #expect(problems.isEmpty, "\(problems.prefix(20))")
  }
}
