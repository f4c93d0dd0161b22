import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

// A process that still runs the old model after another process migrated the store: every
// read and write it makes is refused with `StoreError.modelChanged`, and its monitor, streams
// and mergers stop. The migration itself is simulated with raw SQLite, as the other process
// would commit it: in one write transaction, a column added with `ALTER TABLE` (so the schema
// cookie moves) and `_metadata.model_hash` / `model_json` set to the new model's.

final class Parcel: ManagedObject {
  @Attribute var label: String = ""
  @Attribute var weight: Int = 0
}

/// Version 2 of `Parcel`: one optional attribute more.
final class ParcelV2: ManagedObject {
  override class var entityName: String { "Parcel" }
  @Attribute var label: String = ""
  @Attribute var weight: Int = 0
  @Attribute var trackingNumber: String? = nil
}

let parcelModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Parcel.self) } catch { fatalError("fixture model: \(error)") }
}()

let parcelModelV2: ManagedObjectModel = {
  do { return try ManagedObjectModel(ParcelV2.self) } catch { fatalError("fixture model: \(error)") }
}()

/// What another process's migration of `url` to `parcelModelV2` commits, on a connection of
/// its own, in one transaction under the write lock.
func simulateMigration(of url: URL) throws {
  try withRawConnection(url) { try simulateMigrationStatements($0) }
}

/// The statements of that migration, inside the caller's write transaction.
func simulateMigrationStatements(_ connection: SQLiteConnection) throws {
  try connection.execute(#"ALTER TABLE "Parcel" ADD COLUMN "trackingNumber" TEXT"#)
  let metadata = try connection.statement("UPDATE _metadata SET value = ? WHERE key = ?")
  let values = [
    ("model_hash", parcelModelV2.versionHash),
    ("model_json", String(decoding: parcelModelV2.jsonRepresentation, as: UTF8.self)),
  ]
  for (key, value) in values {
    metadata.rewind()
    metadata.bind(value, at: 1)
    metadata.bind(key, at: 2)
    try metadata.run()
  }
}

/// Runs `body` in a write transaction of a connection that is no store's (another tool's).
func withRawConnection(_ url: URL, _ body: (SQLiteConnection) throws -> Void) throws {
  let connection = try SQLiteConnection(path: url.path, mode: .readWrite)
  try connection.configure(enableWAL: false)
  try connection.writeTransaction(deadline: .now + .seconds(10)) { try body(connection) }
}

/// The rows of `Parcel` and the number of history transactions, read past every check.
private func contents(of container: PersistentContainer) throws -> (rows: [String], transactions: Int64) {
  try container.persistentStore.writer.withConnection { connection in
    let statement = try connection.statement("SELECT label, weight FROM \"Parcel\" ORDER BY pk")
    defer { statement.reset() }
    var rows: [String] = []
    while try statement.step() { rows.append("\(statement.string(0)) \(statement.int64(1))") }
    return (rows, try connection.scalarInt("SELECT count(*) FROM _history_transaction") ?? -1)
  }
}

private let modelChanged = StoreError.modelChanged(stored: parcelModelV2.versionHash, running: parcelModel.versionHash)

private func saveParcels(_ labels: [String], in container: PersistentContainer) async throws {
  for label in labels {
    try await container.performBackgroundTask { context in
      Parcel(context: context).label = label
      try context.save()
    }
  }
}

@Suite struct ModelChangedTests {
  @Test("after another process migrated the store, the old model's next save throws modelChanged and writes nothing")
  func theNextSaveIsRefused() async throws {
    let container = try PersistentContainer.makeTest(model: parcelModel)
    try await saveParcels(["a"], in: container)
    let context = container.newBackgroundContext()
    let id = try await context.perform { context in
      let parcel = try context.fetch(FetchRequest<Parcel>())[0]
      _ = parcel.label
      return parcel.managedID
    }
    let before = try contents(of: container)
    try simulateMigration(of: container.persistentStore.url)

    try await context.perform { context in
      try context.existingObject(with: id).weight = 5
      Parcel(context: context).label = "b"
      #expect(throws: modelChanged) { try context.save() }
      let kept = context.hasChanges
      #expect(kept, "the changes are kept, as for any refused save")
    }
    let batch = BatchInsertRequest<Parcel>(count: 3) { index, parcel in parcel.label = "batch \(index)" }
    await #expect(throws: modelChanged) { try await context.perform { try $0.execute(batch) } }
    #expect(throws: modelChanged) { try container.persistentStore.deleteHistory(before: Date()) }
    #expect(try contents(of: container) == before)
  }

  @Test("after another process migrated the store, the old model's next fetch throws modelChanged")
  func theNextReadIsRefused() async throws {
    let container = try PersistentContainer.makeTest(model: parcelModel)
    try await saveParcels(["a", "b"], in: container)
    let context = container.newBackgroundContext()
    let id = try await context.perform { try $0.fetch(FetchRequest<Parcel>())[0].managedID }
    try simulateMigration(of: container.persistentStore.url)

    await context.perform { context in
      #expect(throws: modelChanged) { _ = try context.fetch(FetchRequest<Parcel>()) }
      #expect(throws: modelChanged) { try context.count(for: FetchRequest<Parcel>()) }
      #expect(throws: modelChanged) { _ = try context.fetchObjectIDs(for: FetchRequest<Parcel>()) }
      context.refreshAllObjects()
      #expect(throws: modelChanged) { _ = try context.existingObject(with: id) }
    }
    let fresh = container.newBackgroundContext()  // a connection opened after the migration
    await #expect(throws: modelChanged) { try await fresh.perform { _ = try $0.fetch(FetchRequest<Parcel>()) } }
    #expect(throws: modelChanged) { try container.persistentStore.fetchHistory(HistoryRequest()) }
    #expect(throws: modelChanged) { try container.persistentStore.currentHistoryToken() }
    #expect(throws: modelChanged) { try container.persistentStore.historyConsumers() }
    #expect(throws: modelChanged) { try container.persistentStore.inspect() }
    #expect(throws: modelChanged) { try container.persistentStore.checkConsistency() }
    #expect(throws: modelChanged) { try container.persistentStore.historyStatistics() }
    #expect(container.persistentStore.modelStamp.change == modelChanged)
    // What reads no rows still works, and shows the new model's hash.
    #expect(try container.persistentStore.metadata()["model_hash"] == parcelModelV2.versionHash)
    _ = try container.persistentStore.checkpoint()
    // The old model cannot open it again either: the store's versions name it as an older one.
    #expect(throws: MigrationError.olderModel(storeHash: parcelModelV2.versionHash, modelHash: parcelModel.versionHash))
    {
      try PersistentContainer(name: "Test", model: parcelModel, storeURL: container.persistentStore.url)
    }
  }

  @Test("a store opened read-only is refused after a migration too")
  func aReadOnlyStoreIsRefused() async throws {
    let writable = try PersistentContainer.makeTest(model: parcelModel)
    try await saveParcels(["a"], in: writable)
    var options = StoreOptions()
    options.isReadOnly = true
    let container = try PersistentContainer(
      name: "Test", model: parcelModel, storeURL: writable.persistentStore.url, options: options)
    #expect(try await container.newBackgroundContext().perform { try $0.count(for: FetchRequest<Parcel>()) } == 1)
    try simulateMigration(of: container.persistentStore.url)
    await #expect(throws: modelChanged) {
      try await container.newBackgroundContext().perform { _ = try $0.fetch(FetchRequest<Parcel>()) }
    }
  }

  @Test("a schema change that keeps the model hash (an index a tool added) is tolerated")
  func aChangeWithTheSameHashIsTolerated() async throws {
    let container = try PersistentContainer.makeTest(model: parcelModel)
    try await saveParcels(["a"], in: container)
    let context = container.newBackgroundContext()
    _ = try await context.perform { try $0.fetch(FetchRequest<Parcel>()).count }
    let cookie = { try container.persistentStore.writer.withConnection { try $0.schemaVersion() } }
    let before = try cookie()
    try withRawConnection(container.persistentStore.url) { connection in
      try connection.execute(#"CREATE INDEX "tool_index" ON "Parcel"(weight)"#)
    }
    #expect(try cookie() == before + 1, "the cookie moved, so the check looked at the hash")
    try await context.perform { context in
      #expect(try context.fetch(FetchRequest<Parcel>()).map(\.label) == ["a"])
      Parcel(context: context).label = "b"
      try context.save()
    }
    try await saveParcels(["c"], in: container)
    #expect(try contents(of: container).rows == ["a 0", "b 0", "c 0"])
    #expect(container.persistentStore.modelStamp.change == nil)
  }

  @Test("a running merger, the remote-change monitor and the store-changes streams stop after a migration")
  func theMergerMonitorAndStreamsStop() async throws {
    let container = try PersistentContainer.makeTest(model: parcelModel)
    var options = HistoryMerger.Options()
    options.checkpointInterval = .zero
    let errors = Recorder<String>()
    options.onError = { errors.add("\($0)") }
    let merger = try HistoryMerger(container: container, consumer: "indexer", options: options)
    let processed = Recorder<Int64>()
    merger.addHook { processed.add($0.transaction.transactionNumber) }
    let received = Recorder<Int64>()
    let ended = Recorder<Bool>()
    let stream = container.storeChanges()
    let listener = Task {
      for await changes in stream { received.add(changes.token?.transactionNumber ?? -1) }
      ended.add(true)
    }
    try await merger.start()
    try await saveParcels(["a", "b"], in: container)
    #expect(await processed.wait(for: 2))
    #expect(await received.wait(for: 2))
    #expect(container.publisher.monitorIsFollowing)

    try simulateMigration(of: container.persistentStore.url)  // a commit the monitor notices
    #expect(await ended.wait(for: 1), "the stream finishes")
    let deadline = Date().addingTimeInterval(20)
    while merger.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
    #expect(!merger.isRunning)
    #expect((merger.error as? StoreError) == modelChanged)
    #expect(errors.all.count == 1)
    #expect(!container.publisher.monitorIsFollowing)
    #expect(processed.all == [1, 2], "nothing of the migrated store was processed")
    let checkpoint = try contents(of: container).transactions  // history is still the two saves
    #expect(checkpoint == 2)
    let row = try container.persistentStore.writer.withConnection {
      try $0.scalarInt("SELECT transaction_number FROM _history_consumer WHERE name = 'indexer'")
    }
    #expect(row == 2, "the checkpoint is what the merger processed, and no more")
    let laterEnded = Recorder<Bool>()
    let later = container.storeChanges()
    let laterListener = Task {
      for await _ in later {}
      laterEnded.add(true)
    }
    #expect(await laterEnded.wait(for: 1, seconds: 5), "a stream asked for later finishes at once")
    // Bounded, so that a stream that never finishes fails the test instead of hanging it.
    laterListener.cancel()
    listener.cancel()
    await merger.stop()
  }

  @Test("saves racing a migration: every save that returned is in the store, and none committed after it")
  func savesRacingAMigration() async throws {
    let trials = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1" ? 50 : 3
    for trial in 0..<trials {
      let container = try PersistentContainer.makeTest(model: parcelModel, variant: "\(trial)")
      try await saveParcels(["first"], in: container)
      let acknowledged = Recorder<String>()
      let refused = Recorder<Bool>()
      let savers = (0..<2).map { saver in
        Task.detached {
          let context = container.newBackgroundContext()
          for index in 0..<10_000 {
            do {
              try await context.perform { context in
                Parcel(context: context).label = "\(saver)-\(index)"
                try context.save()
              }
              acknowledged.add("\(saver)-\(index)")
            } catch let error as StoreError where error == modelChanged {
              refused.add(true)
              return
            } catch {
              Issue.record("saver \(saver): \(error)")
              return
            }
          }
        }
      }
      try await Task.sleep(for: .milliseconds(Int.random(in: 5...60)))
      let highest = Mutex<Int64>(0)
      try withRawConnection(container.persistentStore.url) { connection in
        highest.withLock { $0 = (try? connection.scalarInt("SELECT max(pk) FROM \"Parcel\"")) ?? 0 }
        try simulateMigrationStatements(connection)
      }
      for saver in savers { await saver.value }
      #expect(refused.all.count == 2, "each saver's next save after the migration is refused")
      let rows = try contents(of: container).rows.map { $0.split(separator: " ")[0] }
      #expect(Set(rows.dropFirst()) == Set(acknowledged.all.map { Substring($0) }))
      let maximum = try container.persistentStore.writer.withConnection {
        try $0.scalarInt("SELECT max(pk) FROM \"Parcel\"")
      }
      #expect(maximum == highest.withLock { $0 }, "trial \(trial): nothing was written after the migration")
    }
  }

  @Test("another process migrates the store while this one holds it open: its next save and fetch are refused")
  func aMigrationInAnotherProcess() async throws {
    let url = PersistentContainer.testStoreURL(variant: "holder", function: "migrationInAnotherProcess")
    try PersistentContainer.destroyPersistentStore(at: url)
    let container = try PersistentContainer(name: "Test", model: parcelModel, storeURL: url)
    try await saveParcels(["a"], in: container)
    let context = container.newBackgroundContext()
    try await context.perform { try $0.fetch(FetchRequest<Parcel>())[0].weight = 1 }
    let before = try contents(of: container)
    await #expect(processExitsWith: .success) {
      try simulateMigration(
        of: PersistentContainer.testStoreURL(variant: "holder", function: "migrationInAnotherProcess"))
    }
    await context.perform { context in
      #expect(throws: modelChanged) { try context.save() }
      #expect(throws: modelChanged) { _ = try context.fetch(FetchRequest<Parcel>()) }
    }
    #expect(try contents(of: container) == before)
    let stored = try PersistentStore.metadataForPersistentStore(at: url)
    #expect(stored.modelHash == parcelModelV2.versionHash)
  }

  @Test("reading a fault after another process migrated the store stops the program with modelChanged's message")
  func readingAFaultAfterAMigrationStopsTheProgram() async throws {
    let url = PersistentContainer.testStoreURL(variant: "fault", function: "faultAfterMigration")
    try PersistentContainer.destroyPersistentStore(at: url)
    try await saveParcels(["a"], in: try PersistentContainer(name: "Test", model: parcelModel, storeURL: url))
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let url = PersistentContainer.testStoreURL(variant: "fault", function: "faultAfterMigration")
      let container = try PersistentContainer(name: "Test", model: parcelModel, storeURL: url)
      let context = container.newModelContext()
      var request = FetchRequest<Parcel>()
      request.returnsObjectsAsFaults = true
      let parcel = try context.fetch(request)[0]
      try simulateMigration(of: url)
      _ = parcel.label  // a getter cannot throw, and inventing a value would be a wrong read
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("another process migrated the store"))
    #expect(message.contains("Restart the process"))
    let stored = try PersistentStore.metadataForPersistentStore(at: url)
    #expect(stored.modelHash == parcelModelV2.versionHash)
  }
}
