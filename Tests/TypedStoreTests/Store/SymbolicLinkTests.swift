import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// A store opened through a symbolic link: SQLite resolves the link and keeps the `-wal` and
/// `-shm` files beside the target, so everything TypedStore does with those files must look
/// there too.
@Suite struct SymbolicLinkTests {
  /// A folder for the target and another for a link to it, which points at a store file that
  /// does not exist yet.
  private static func folders(_ name: String = #function) throws -> (real: URL, link: URL) {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent(
      "typedstore-links-\(name.prefix { $0 != "(" })-\(UUID().uuidString.prefix(8))")
    let real = root.appendingPathComponent("real")
    let links = root.appendingPathComponent("links")
    try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
    let link = links.appendingPathComponent("current.sqlite")
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: real.appendingPathComponent("store.sqlite").path)
    return (real, link)
  }

  private static func names(in folder: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
  }

  /// With the slow poll an hour away, only the watch on the folder SQLite writes in can tell
  /// this process of another's commits.
  @Test func aStoreOpenedThroughALinkKeepsItsFilesBesideTheTargetAndHearsOtherProcesses() async throws {
    let (real, link) = try Self.folders()
    var options = StoreOptions()
    options.remoteChangePollInterval = .seconds(3600)
    let container = try PersistentContainer(
      name: "Events", model: ManagedObjectModel(Event.self), storeURL: link, options: options)
    #expect(container.persistentStore.url == link, "the store keeps the URL it was given")
    try await container.performBackgroundTask { context in
      _ = Event(context: context)
      try context.save()
    }
    #expect(try Self.names(in: real) == ["store.sqlite", "store.sqlite-shm", "store.sqlite-wal"])
    #expect(try Self.names(in: link.deletingLastPathComponent()) == ["current.sqlite"])
    let inspection = try container.persistentStore.inspect()
    #expect(inspection.fileSizes.writeAheadLog ?? 0 > 0, "the sizes are the target's files'")

    let seen = Recorder<Int>()
    let observation = container.addStoreChangesObserver { changes in
      if changes.isRemote { seen.add(changes.inserted(Event.self).count) }
    }
    defer { observation.cancel() }
    try await Task.sleep(for: .milliseconds(100))  // the monitor has started and read once
    let writer = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), [real.appendingPathComponent("store.sqlite").path, "other", "3"])
    #expect(writer.finish().contains("saved 3"))
    #expect(await seen.wait(for: 3, seconds: 10), "the other process's commits, heard without the poll")
  }

  @Test func aReadOnlyOpenThroughALinkLeavesTheTargetsFolderAsItWas() async throws {
    let (real, link) = try Self.folders()
    let file = real.appendingPathComponent("store.sqlite")
    do {
      let writer = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: file)
      try await writer.performBackgroundTask { context in
        _ = Event(context: context)
        try context.save()
      }
    }
    #expect(try Self.names(in: real) == ["store.sqlite"], "the last connection closed and removed -wal and -shm")
    let before = storeBytes(file)
    do {
      var options = StoreOptions()
      options.isReadOnly = true
      let reader = try PersistentContainer(
        name: "Events", model: ManagedObjectModel(Event.self), storeURL: link, options: options)
      let count = try await reader.viewContext.perform { try $0.count(for: FetchRequest<Event>()) }
      #expect(count == 1)
    }
    #expect(try Self.names(in: real) == ["store.sqlite"], "the -wal and -shm the read made are gone")
    #expect(storeBytes(file) == before)
  }

  @Test func aRefusalThroughALinkNamesThePathGiven() throws {
    let (real, link) = try Self.folders()
    try Data("not a database, but long enough to look like one's header".utf8).write(
      to: real.appendingPathComponent("store.sqlite"))
    #expect(throws: StoreError.notADatabase(path: link.path)) {
      _ = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: link)
    }
    #expect(throws: StoreError.notADatabase(path: link.path)) {
      _ = try PersistentStore.metadataForPersistentStore(at: link)
    }
  }

  @Test func destroyingThroughALinkDeletesTheTargetsFilesAndKeepsTheLink() async throws {
    let (real, link) = try Self.folders()
    let holder = try SpawnedProcess(
      builtProduct("typedstore-test-writer"), ["hold", real.appendingPathComponent("store.sqlite").path, "2"])
    #expect(holder.waitForLine("ready"))
    #expect(throws: StoreError.storeInUse(path: link.path), "errors name the path given") {
      try PersistentContainer.destroyPersistentStore(at: link)
    }
    holder.kill()
    #expect(try Self.names(in: real) == ["store.sqlite", "store.sqlite-shm", "store.sqlite-wal"])
    try PersistentContainer.destroyPersistentStore(at: link)
    #expect(try Self.names(in: real) == [])
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path).hasSuffix("real/store.sqlite"))
  }
}
