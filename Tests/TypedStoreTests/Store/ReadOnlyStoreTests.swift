import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// The contents of a store file, of its -wal and of its -shm, as digests (nil where absent).
func storeBytes(_ url: URL) -> [String?] {
  ["", "-wal", "-shm"].map { fileDigest(url.path + $0) }
}

/// The SHA-256 of the file at `path` (nil when there is none), read by another process.
///
/// Not read here: closing a descriptor of a file releases every POSIX lock this process holds
/// on it, SQLite's included, and this process may have the store open (another process could
/// then take it for unused, and delete its `-wal` as the last one to close it).
func fileDigest(_ path: String) -> String? {
  guard FileManager.default.fileExists(atPath: path) else { return nil }
  // A file that exists always has a digest: nil for it would make two reads compare equal.
  guard let run = try? SpawnedProcess(URL(fileURLWithPath: "/usr/bin/sha256sum"), [path]) else {
    Issue.record("sha256sum did not start for \(path)")
    return "unread"
  }
  let output = run.finish()
  guard run.process.terminationStatus == 0, let digest = output.split(separator: " ").first else {
    Issue.record("sha256sum failed for \(path): \(output)")
    return "unread"
  }
  return String(digest)
}

/// The states a store's files are found in: closed by its last connection (no -wal or
/// -shm), left by a writer killed with the store open (the WAL holds commits never
/// checkpointed, and its index is there), and that WAL without its index (a copy).
enum LeftFiles: CaseIterable, Sendable {
  case closed, killedWriter, walWithoutIndex
}

/// A store of three events (the `Event` model of the test writer), its files as `state` says.
func eventStore(_ state: LeftFiles, variant: String = "", function: String = #function) throws -> URL {
  let url = PersistentContainer.testStoreURL(variant: "\(variant)\(state)", function: function)
  try PersistentContainer.destroyPersistentStore(at: url)
  if state == .closed {
    #expect(
      try SpawnedProcess(builtProduct("typedstore-test-writer"), [url.path, "maker", "3"]).finish().contains("saved 3"))
  } else {
    let holder = try SpawnedProcess(builtProduct("typedstore-test-writer"), ["hold", url.path, "3"])
    #expect(holder.waitForLine("ready"))
    holder.kill()
    if state == .walWithoutIndex { try FileManager.default.removeItem(atPath: url.path + "-shm") }
  }
  let present = ["-wal", "-shm"].map { FileManager.default.fileExists(atPath: url.path + $0) }
  #expect(present == (state == .closed ? [false, false] : [true, state == .killedWriter]))
  return url
}

private func readOnlyOptions() -> StoreOptions {
  var options = StoreOptions()
  options.isReadOnly = true
  return options
}

@Suite struct ReadOnlyStoreTests {
  @Test func aReadOnlyStoreFetchesAndReadsHistoryAndRefusesEveryWriteBeforeTouchingIt() async throws {
    let writer = try PersistentContainer.makeTest(model: notesModel)
    let saved = try await saveNotes(["a", "b"], in: writer)
    let url = writer.persistentStore.url
    let reader = try PersistentContainer(name: "Reader", model: notesModel, storeURL: url, options: readOnlyOptions())
    #expect(reader.persistentStore.identifier == writer.persistentStore.identifier)
    let titles = try await reader.viewContext.perform { context in
      try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    }
    #expect(titles == ["a", "b"])
    #expect(try reader.fetchHistory(HistoryRequest()).count == 1)
    let before = storeBytes(url)

    let path = url.path
    let failures = try await reader.newBackgroundContext().perform { context in
      var errors: [StoreError?] = []
      let note = try context.existingObject(with: saved[0])
      note.title = "changed"
      _ = Note(context: context)
      errors.append(#expect(throws: StoreError.self) { try context.save() })
      #expect(context.hasChanges == true, "a refused save keeps the pending changes")
      errors.append(
        #expect(throws: StoreError.self) { try context.obtainPermanentIDs(for: Array(context.insertedObjects)) })
      errors.append(
        #expect(throws: StoreError.self) { try context.execute(BatchInsertRequest<Note>(count: 1) { _, _ in }) })
      errors.append(
        #expect(throws: StoreError.self) {
          try context.execute(BatchUpdateRequest<Note>(propertiesToUpdate: [.set(\.title, "x")]))
        })
      errors.append(#expect(throws: StoreError.self) { try context.execute(BatchDeleteRequest<Note>()) })
      return errors
    }
    #expect(failures.allSatisfy { $0 == .readOnly(path: path) })
    #expect(throws: StoreError.readOnly(path: path)) { try reader.deleteHistory(before: Date()) }
    #expect(throws: StoreError.readOnly(path: path)) { try reader.persistentStore.checkpoint() }
    #expect(storeBytes(url) == before)
  }

  @Test func aReadOnlyStoreSeesCommitsMadeAfterItOpened() async throws {
    let writer = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["first"], in: writer)
    let reader = try PersistentContainer(
      name: "Reader", model: notesModel, storeURL: writer.persistentStore.url, options: readOnlyOptions())
    _ = try await saveNotes(["second"], in: writer)
    let count = try await reader.newBackgroundContext().perform { context in
      try context.count(for: FetchRequest<Note>())
    }
    #expect(count == 2)
  }

  @Test(arguments: LeftFiles.allCases)
  func aReadOnlyStoreLeavesEveryFileByteForByte(state: LeftFiles) async throws {
    let url = try eventStore(state)
    let before = storeBytes(url)
    do {
      let model = try ManagedObjectModel(Event.self)
      let reader = try PersistentContainer(name: "Events", model: model, storeURL: url, options: readOnlyOptions())
      let count = try await reader.newBackgroundContext().perform { context in
        try context.count(for: FetchRequest<Event>())
      }
      #expect(count == 3)
      #expect(try reader.fetchHistory(HistoryRequest()).count == 3)
      let store = try PersistentStore(url: url, options: readOnlyOptions())  // with the model it keeps
      #expect(try store.checkConsistency().passed)
      _ = try store.inspect()
      _ = try PersistentStore.metadataForPersistentStore(at: url)
    }
    #expect(storeBytes(url) == before, "\(state)")
  }

  @Test func aReadOnlyOpenOfAMissingFileCreatesNothing() throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    #expect(throws: StoreError.notFound(path: url.path)) {
      try PersistentContainer(name: "Test", model: notesModel, storeURL: url, options: readOnlyOptions())
    }
    #expect(!FileManager.default.fileExists(atPath: url.path))
  }

  @Test func aStoreInAMissingFolderIsNotFound() {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-no-such-folder/a.sqlite")
    #expect(throws: StoreError.notFound(path: url.path)) {
      try PersistentContainer(name: "Test", model: notesModel, storeURL: url)
    }
  }
}

/// A user other than root, as whom a spawned process runs: root may write any file, so only
/// another user sees permissions.
private let nobody = "65534"

/// A folder for one test's store, with the permissions the test sets, readable by `nobody`.
private func folder(_ name: String) throws -> URL {
  let url = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-permissions/\(name)")
  try? FileManager.default.removeItem(at: url)
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.deletingLastPathComponent().path)
  return url
}

/// Runs the test writer as `nobody` and returns what it printed.
private func asNobody(_ arguments: [String]) throws -> String {
  try SpawnedProcess(builtProduct("typedstore-test-writer"), ["as-user", nobody] + arguments).finish()
}

/// Makes a store with three events (closed again, so no -wal or -shm is left), owned by root.
private func makeEventStore(in folder: URL) throws -> URL {
  let url = folder.appendingPathComponent("events.sqlite")
  let output = try SpawnedProcess(builtProduct("typedstore-test-writer"), [url.path, "maker", "3"]).finish()
  #expect(output.contains("saved 3"))
  return url
}

@Suite(.enabled(if: getuid() == 0, "needs root to run a process as another user"))
struct UnwritableStoreTests {
  @Test func aStoreFileTheProcessCannotWriteIsATypedErrorAndReadsWithTheReadOnlyOption() throws {
    let directory = try folder("unwritable-file")
    let url = try makeEventStore(in: directory)
    try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
    let before = storeBytes(url)

    let readWrite = try asNobody(["open", url.path])
    #expect(readWrite.contains("open failed: \(url.path) cannot be written by this process: the file is not writable"))
    #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "a refused open creates no -wal")

    let readOnly = try asNobody(["open", url.path, "read-only"])
    #expect(readOnly.contains("opened: 3 events, 3 transactions"))
    #expect(readOnly.contains("save failed: \(url.path) was opened read-only; nothing was written"))
    #expect(storeBytes(url).first == before.first)
  }

  @Test func aStoreInAFolderTheProcessCannotWriteIsATypedError() throws {
    let directory = try folder("unwritable-folder")
    let url = try makeEventStore(in: directory)
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
    try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: url.path)

    let readWrite = try asNobody(["open", url.path])
    #expect(readWrite.contains("cannot be written by this process: its folder \(directory.path) is not writable"))
    // Reading a WAL store needs a -shm file: with none there and no way to make one, SQLite
    // cannot read it, and the error says why.
    let readOnly = try asNobody(["open", url.path, "read-only"])
    #expect(readOnly.contains("reading a WAL store needs its -wal and -shm files"))
    let newStore = try asNobody(["open", directory.appendingPathComponent("new.sqlite").path])
    #expect(newStore.contains("its folder \(directory.path) is not writable"))
  }

  @Test func aStoreInAFolderTheProcessCannotWriteReadsWhileAWriterHasItOpen() throws {
    let directory = try folder("unwritable-folder-live")
    let url = try makeEventStore(in: directory)
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
    let writer = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    let readOnly = try asNobody(["open", url.path, "read-only"])
    #expect(readOnly.contains("opened: 3 events, 3 transactions"), "\(readOnly)")
    withExtendedLifetime(writer) {}
  }

  @Test func aStoreInAFolderTheProcessCannotSearchIsAPermissionErrorNamingTheFolder() throws {
    let directory = try folder("unsearchable")
    let url = try makeEventStore(in: directory)
    let inner = directory.appendingPathComponent("inner")
    try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
    let hidden = try makeEventStore(in: inner)
    // A daemon user meets another user's 700 folder.
    try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
    defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path) }
    let says = "cannot be reached by this process: it may not search the folder \(directory.path) (permission denied)"
    for arguments in [["open", url.path], ["open", url.path, "read-only"], ["open", hidden.path, "read-only"]] {
      let output = try asNobody(arguments)
      #expect(output.contains("open failed: \(arguments[1]) \(says)"), "\(arguments): \(output)")
      #expect(!output.contains("there is no store"))
    }
    let tool = try typedstore(["history", "stats", "--store", url.path], user: nobody)
    #expect(tool.status == 3, "a store that cannot be opened")
    #expect(tool.stderr.contains("typedstore: cannot open \(url.path): \(url.path) \(says)"), "\(tool.stderr)")
    // Where the process may search, a missing store is still "no store".
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
    let missing = directory.appendingPathComponent("missing.sqlite").path
    #expect(try asNobody(["open", missing, "read-only"]).contains("open failed: there is no store at \(missing)"))
    #expect(!FileManager.default.fileExists(atPath: missing))
  }

  @Test func aStoreFileTheProcessCannotReadIsAPermissionError() throws {
    let directory = try folder("unreadable-file")
    let url = try makeEventStore(in: directory)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    let output = try asNobody(["open", url.path, "read-only"])
    #expect(output.contains("open failed: \(url.path) cannot be read by this process (permission denied)"), "\(output)")
  }

  @Test func aReadOnlyOpenOfAFileBeingCreatedWaitsForTheCreatorOrRefusesIt() async throws {
    let url = try folder("creating").appendingPathComponent("store.sqlite")
    _ = FileManager.default.createFile(atPath: url.path, contents: Data())  // no tables yet
    var options = StoreOptions()
    options.isReadOnly = true
    // The wait ends when the creator is done, so a long limit costs nothing here; it is long
    // because the whole suite keeps both cores busy, and a creator can take seconds to run.
    options.busyTimeout = .seconds(60)
    let readOnlyOptions = options
    let model = try ManagedObjectModel(Event.self)
    // The reader starts first; the creator opens the same path 300 ms later. Both run on
    // threads of their own: blocking a thread of the shared pool (two on this machine) could
    // hold up the creator past the reader's busy timeout while other tests run.
    async let reader = offThePool {
      try PersistentContainer(name: "Events", model: model, storeURL: url, options: readOnlyOptions)
    }
    try await Task.sleep(for: .milliseconds(300))
    let creator = try await offThePool { try PersistentContainer(name: "Events", model: model, storeURL: url) }
    let opened = try await reader
    #expect(opened.persistentStore.identifier == creator.persistentStore.identifier)

    // With nobody creating it, the wait ends at the busy timeout with a typed error.
    let empty = try folder("never-created").appendingPathComponent("store.sqlite")
    _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
    options.busyTimeout = .milliseconds(300)
    let start = ContinuousClock.now
    #expect(throws: StoreError.self) {
      try PersistentContainer(name: "Events", model: model, storeURL: empty, options: options)
    }
    #expect(ContinuousClock.now - start >= .milliseconds(250))
    #expect(try Data(contentsOf: empty).isEmpty, "nothing written")
  }
}
