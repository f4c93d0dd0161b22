import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

private func backupURL(_ name: String = #function) -> URL {
  let url = PersistentContainer.testStoreURL(variant: "backup", function: name)
  for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
  return url
}

/// The store at `url`, opened without writing a byte of it.
private func openReadOnly(_ url: URL) throws -> PersistentStore {
  var options = StoreOptions()
  options.isReadOnly = true
  return try PersistentStore(url: url, options: options)
}

/// Each transaction's number, author and changes (kind and object), as history reads them.
private func transactions(_ store: PersistentStore, through token: HistoryToken? = nil) throws -> [String] {
  var request = HistoryRequest()
  request.end = token
  return try store.fetchHistory(request).map { transaction in
    "\(transaction.transactionNumber) \(transaction.author ?? "-") "
      + transaction.changes.map { "\($0.changeType) \($0.objectID.entityName) \($0.objectID.primaryKey ?? -1)" }
      .joined(separator: ",")
  }
}

@Suite(.serialized) struct BackupTests {
  @Test("backups taken while three writer processes save are each the store as of one transaction")
  func backupsWhileWritersRunAreConsistentPrefixes() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let store = container.persistentStore
    let writers = try (0..<3).map { index in
      try SpawnedProcess(
        builtProduct("typedstore-test-writer"), ["race", store.url.path, "writer-\(index)", "300", "0"])
    }
    var backups: [(URL, HistoryToken)] = []
    for index in 0..<4 {
      let url = backupURL("\(#function)-\(index)")
      backups.append((url, try store.backup(to: url)))
      try await Task.sleep(for: .milliseconds(40))
    }
    let outputs = try await offThePool { writers.map { $0.finish() } }
    #expect(writers.allSatisfy { $0.process.terminationStatus == 0 }, "\(outputs)")
    #expect(Set(backups.map(\.1.transactionNumber)).count > 1, "the backups were taken while the writers wrote")
    for (url, token) in backups {
      let copy = try openReadOnly(url)
      #expect(copy.identifier == store.identifier)
      #expect(try copy.currentHistoryToken() == token)
      let report = try copy.checkConsistency()
      #expect(report.passed, "\(report.problems)")
      // Its history is the store's up to the token, and its rows are the ones those transactions inserted.
      #expect(try transactions(copy) == transactions(store, through: token))
      let inserted = try store.fetchHistory(
        {
          var r = HistoryRequest()
          r.end = token
          return r
        }()
      )
      .flatMap(\.changes).compactMap(\.objectID.primaryKey).sorted()
      let rows = try SQLiteConnection(path: url.path, mode: .readOnly).scalarText(
        "SELECT group_concat(pk) FROM (SELECT pk FROM Event ORDER BY pk)")
      #expect(rows == (inserted.isEmpty ? nil : inserted.map(String.init).joined(separator: ",")))
    }
  }

  @Test("a backup refuses a destination that exists, and leaves it as it was")
  func anExistingDestinationIsRefused() throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let url = backupURL()
    try Data("mine".utf8).write(to: url)
    #expect(throws: StoreError.destinationExists(path: url.path)) { try container.persistentStore.backup(to: url) }
    #expect(try Data(contentsOf: url) == Data("mine".utf8))
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
      .filter { $0.contains(url.lastPathComponent) && $0.contains("partial") }
    #expect(leftovers.isEmpty)
  }

  @Test("a backup as a new store has another UUID, no consumers, and refuses the original's tokens")
  func aBackupAsANewStore() throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    try container.viewContext.performAndWait { context in
      Event(context: context).source = "one"
      try context.save()
    }
    let store = container.persistentStore
    _ = try store.registerHistoryConsumer("indexer", fromBeginning: true, acceptsHorizon: false, lease: .seconds(60))
    let original = try store.currentHistoryToken()
    let url = backupURL()
    let token = try store.backup(to: url, asNewStore: true)
    #expect(token.storeIdentifier != store.identifier && token.transactionNumber == original.transactionNumber)
    let copy = try PersistentContainer(name: "Copy", model: ManagedObjectModel(Event.self), storeURL: url)
    #expect(copy.persistentStore.identifier == token.storeIdentifier)
    #expect(try copy.persistentStore.historyConsumers().isEmpty)
    #expect(throws: HistoryError.self) { try copy.persistentStore.fetchHistory(HistoryRequest(after: original)) }
    let sources = try copy.viewContext.performAndWait { try $0.fetch(FetchRequest<Event>()).map(\.source) }
    #expect(sources == ["one"])
    #expect(try store.historyConsumers().map(\.name) == ["indexer"], "the original is untouched")
  }

  @Test("typedstore backup copies a store, and typedstore checkpoint folds its log")
  func theToolBacksUpAndCheckpoints() throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    try container.viewContext.performAndWait { context in
      Event(context: context).source = "one"
      try context.save()
    }
    let path = container.persistentStore.url.path
    let url = backupURL()
    let run = try typedstore(["backup", "--store", path, "-o", url.path, "--json"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.json["transaction"] as? Int == 1)
    #expect(try typedstore(["check", "--store", url.path]).status == 0)
    #expect(try SQLiteConnection(path: url.path, mode: .readOnly).scalarText("PRAGMA journal_mode") == "wal")
    let again = try typedstore(["backup", "--store", path, "-o", url.path])
    #expect(again.status == 1 && again.stderr.contains("already exists"), "\(again.stderr)")
    let checkpoint = try typedstore(["checkpoint", "--store", path])
    #expect(checkpoint.status == 0 && checkpoint.stdout.contains("checkpointed"), "\(checkpoint.stderr)")
  }

  @Test("a backup killed at any moment leaves no file at its destination, or a whole store")
  func aKilledBackupLeavesNothingOrAWholeCopy() async throws {
    let trials = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1" ? 20 : 3
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    try container.viewContext.performAndWait { context in
      _ = try context.execute(
        BatchInsertRequest<Event>(count: 200_000) { index, event in event.source = "source \(index)" })
    }
    let path = container.persistentStore.url.path
    let problems = try await offThePool {
      var problems: [String] = []
      for trial in 0..<trials {
        let url = backupURL("killed-\(trial)")
        let run = try SpawnedProcess(builtProduct("typedstore"), ["backup", "--store", path, "-o", url.path])
        Thread.sleep(forTimeInterval: Double.random(in: 0...0.4))
        run.kill()
        guard FileManager.default.fileExists(atPath: url.path) else { continue }
        let copy = try openReadOnly(url)
        let report = try copy.checkConsistency()
        let rows = try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt("SELECT count(*) FROM Event")
        if !report.passed || rows != 200_000 {
          problems.append("trial \(trial): \(report.problems), \(rows ?? -1) rows")
        }
      }
      return problems
    }
    #expect(problems.isEmpty, "\(problems)")
  }
}
