import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// The digests of a store file and of its -wal (nil where absent, `fileDigest`), and whether its
/// -shm exists.
/// These tests refuse stores that a container of this process holds open: SQLite shares one
/// mapping of the -shm among a process's connections, and every read updates a read mark in
/// it, so only its presence is compared. With no connection open, a refused open leaves the
/// -shm byte for byte too (`anOpenRefusedForItsModelLeavesAllThreeFilesByteForByte`).
private func snapshot(_ url: URL) -> [String?] {
  ["", "-wal"].map { fileDigest(url.path + $0) }
    + [FileManager.default.fileExists(atPath: url.path + "-shm") ? "present" : nil]
}

/// Opens `url` with `model` expecting a refusal, checks that the files are unchanged, and
/// returns the error.
private func refusal(
  opening url: URL, with model: ManagedObjectModel = notesModel, options: StoreOptions = StoreOptions(),
  sourceLocation: SourceLocation = #_sourceLocation
) -> StoreError? {
  let before = snapshot(url)
  let error = #expect(throws: StoreError.self, sourceLocation: sourceLocation) {
    try PersistentContainer(name: "Test", model: model, storeURL: url, options: options)
  }
  #expect(snapshot(url) == before, sourceLocation: sourceLocation)
  return error
}

@Suite struct StoreFileTests {
  @Test func foreignFileIsRefusedAndLeftUnchanged() throws {
    let url = PersistentContainer.testStoreURL()
    try Data("this is a text file, not a database\n".utf8).write(to: url)
    #expect(refusal(opening: url) == .notADatabase(path: url.path))
  }

  @Test func foreignSQLiteDatabaseIsRefusedAndLeftUnchanged() throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    do {
      let other = try SQLiteConnection(path: url.path, mode: .readWriteCreate)
      try other.execute("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada');")
    }
    #expect(refusal(opening: url) == .notATypedStore(path: url.path))
  }

  @Test func corruptStoreIsRefusedAndLeftUnchanged() async throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: notesModel)
      _ = try await saveNotes(["a"], in: container)
      url = container.persistentStore.url
    }
    // Read once no connection of this process has the store open (closing the descriptor
    // would release their locks): the last one to close checkpointed the log into the file.
    // Keep the header, overwrite the rest of the first page and the second with garbage.
    var bytes = try Data(contentsOf: url)
    for index in 100..<min(bytes.count, 8192) { bytes[index] = UInt8(truncatingIfNeeded: index &* 7) }
    let copy = PersistentContainer.testStoreURL(variant: "copy")
    try PersistentContainer.destroyPersistentStore(at: copy)
    try bytes.write(to: copy)
    #expect(refusal(opening: copy) != nil)
  }

  @Test func storeMadeWithAnotherModelIsRefusedAndLeftUnchanged() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["a"], in: container)
    let url = container.persistentStore.url
    let other = try ManagedObjectModel(Folder.self)
    var options = StoreOptions()
    options.shouldMigrateStoreAutomatically = false  // on, the store would be migrated (MigrationTests)
    #expect(
      refusal(opening: url, with: other, options: options)
        == .modelMismatch(storeHash: notesModel.versionHash, modelHash: other.versionHash))
  }

  @Test(arguments: LeftFiles.allCases)
  func anOpenRefusedForItsModelLeavesAllThreeFilesByteForByte(state: LeftFiles) throws {
    let url = try eventStore(state)
    let before = storeBytes(url)
    var readOnly = StoreOptions()
    readOnly.isReadOnly = true
    var noMigration = StoreOptions()
    noMigration.shouldMigrateStoreAutomatically = false
    for options in [noMigration, readOnly] {
      let error = #expect(throws: StoreError.self) {
        try PersistentContainer(name: "Test", model: notesModel, storeURL: url, options: options)
      }
      guard case .modelMismatch = error else {
        Issue.record("expected modelMismatch, got \(String(describing: error))")
        continue
      }
      #expect(storeBytes(url) == before, "\(state), read-only: \(options.isReadOnly)")
    }
    // And the store still opens with its own model, every event there.
    let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    #expect(try container.viewContext.performAndWait { try $0.count(for: FetchRequest<Event>()) } == 3)
  }

  @Test func entityCodesAreListedAndCheckedOnOpening() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["a"], in: container)
    let url = container.persistentStore.url
    do {
      let connection = try SQLiteConnection(path: url.path, mode: .readWrite)
      #expect(
        try connection.scalarText("SELECT group_concat(code || ' ' || name, ', ') FROM _entities")
          == "1 Folder, 2 Note, 3 Checklist")
      #expect(try connection.scalarText(#"SELECT group_concat(_entity) FROM "Note""#) == "2")
      // Another tool renumbers an entity: its rows would be read as another entity or none.
      try connection.execute("UPDATE _entities SET code = 10 WHERE name = 'Checklist'")
    }
    guard case .corrupt(let path, let message) = refusal(opening: url) else {
      Issue.record("expected a corrupt store")
      return
    }
    #expect(path == url.path)
    #expect(message.contains("entity codes"))
  }

  @Test func reopeningKeepsTheStoreUUIDAndData() async throws {
    let url: URL
    let identifier: UUID
    do {
      let container = try PersistentContainer.makeTest(model: notesModel)
      _ = try await saveNotes(["kept"], in: container)
      url = container.persistentStore.url
      identifier = container.persistentStore.identifier
    }
    let reopened = try PersistentContainer(name: "Test", model: notesModel, storeURL: url)
    #expect(reopened.persistentStore.identifier == identifier)
    let metadata = try reopened.persistentStore.metadata()
    #expect(metadata["model_hash"] == notesModel.versionHash)
    #expect(metadata["format_version"] == "3")
    #expect(metadata["model_json"].map { Data($0.utf8) } == notesModel.jsonRepresentation)
    let titles = try await reopened.viewContext.perform { context in
      try context.fetch(FetchRequest<Note>()).map(\.title)
    }
    #expect(titles == ["kept"])
  }

  @Test func emptyFileBecomesANewStore() throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    #expect(FileManager.default.createFile(atPath: url.path, contents: Data()))
    let container = try PersistentContainer(name: "Test", model: notesModel, storeURL: url)
    #expect(try container.persistentStore.metadata()["store_uuid"] == container.persistentStore.identifier.uuidString)
  }

  @Test func twoContainersOnOneFileShareRowsAndKeys() async throws {
    let first = try PersistentContainer.makeTest(model: notesModel)
    let second = try PersistentContainer(name: "Other", model: notesModel, storeURL: first.persistentStore.url)
    #expect(first.persistentStore.identifier == second.persistentStore.identifier)
    let a = try await saveNotes(["from first"], in: first)
    let b = try await saveNotes(["from second"], in: second)
    #expect(a[0].primaryKey != b[0].primaryKey)
    let titles = try await first.newBackgroundContext().perform { context in
      try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    }
    #expect(titles == ["from first", "from second"])
    let resolved = try await second.viewContext.perform { context in try context.existingObject(with: a[0]).title }
    #expect(resolved == "from first")
  }

  @Test func connectionsUseTheDocumentedPragmas() throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let pragmas = try container.persistentStore.writer.withConnection { connection in
      [
        try connection.scalarText("PRAGMA journal_mode"),
        try connection.scalarInt("PRAGMA synchronous").map(String.init),
        try connection.scalarInt("PRAGMA wal_autocheckpoint").map(String.init),
        try connection.scalarInt("PRAGMA mmap_size").map(String.init),
      ]
    }
    #expect(pragmas == ["wal", "1", "0", "0"])  // WAL, synchronous=NORMAL, no auto-checkpoint, no mmap
    let reader = try container.persistentStore.makeReadConnection()
    #expect(try reader.scalarInt("PRAGMA wal_autocheckpoint") == 0)
    #expect(try reader.scalarInt("PRAGMA query_only") == 1)
  }
}
