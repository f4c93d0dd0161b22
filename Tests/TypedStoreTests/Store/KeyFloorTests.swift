import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Primary keys are never given twice (docs/file-format.md, "Reserved tables"): the next key
/// is one above a table's largest key and its key floor in `_primary_key`; an insert writes
/// only its row, and whatever could let a key come back raises the floor.
@Suite struct KeyFloorTests {
  /// `table`'s key floor, read with a connection of its own.
  private func floor(of table: String, in container: PersistentContainer) throws -> Int64? {
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readOnly)
    return try connection.scalarInt("SELECT key_floor FROM _primary_key WHERE entity = '\(table)'")
  }

  @Test func insertsLeaveTheFloorAlone() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b", "c"], in: container)
    _ = try await saveNotes(["d"], in: container)
    #expect(ids.map { $0.primaryKey } == [1, 2, 3])
    #expect(try floor(of: "Note", in: container) == 0)
  }

  @Test func deletingTheLargestKeyThroughAContextRaisesTheFloor() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b", "c"], in: container)
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: ids[0]))  // not the largest: no write
      try context.save()
    }
    #expect(try floor(of: "Note", in: container) == 0)
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: ids[2]))
      try context.save()
    }
    #expect(try floor(of: "Note", in: container) == 3)
    let next = try await saveNotes(["d"], in: container)
    #expect(next[0].primaryKey == 4)
  }

  @Test func aDeleteAndAnInsertInOneSaveGetANewKey() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    let inserted = try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: ids[1]))
      let note = Note(context: context)
      note.title = "c"
      try context.save()
      return note.managedID
    }
    #expect(inserted.primaryKey == 3)
  }

  @Test func aBatchDeleteOfTheWholeTableRaisesTheFloor() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["a", "b", "c"], in: container)
    let deleted = try await container.performBackgroundTask { context in
      try context.execute(BatchDeleteRequest<Note>()).count
    }
    #expect(deleted == 3)
    #expect(try floor(of: "Note", in: container) == 3)
    #expect(try await saveNotes(["d"], in: container)[0].primaryKey == 4)
  }

  @Test func aCascadeRaisesTheFloorOfTheRowsItDeletes() async throws {
    let container = try PersistentContainer.makeTest(model: graphModel)
    let shelfID = try await container.performBackgroundTask { context in
      let shelf = Shelf(context: context)
      for _ in 0..<3 { Book(context: context).shelf = shelf }
      try context.save()
      return shelf.managedID
    }
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: shelfID))
      try context.save()
    }
    #expect(try floor(of: "Book", in: container) == 3)
    let book = try await container.performBackgroundTask { context in
      let book = Book(context: context)
      try context.save()
      return book.managedID
    }
    #expect(book.primaryKey == 4)
  }

  @Test func keysHandedOutBeforeASaveAreNotGivenToAnotherContext() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let early = container.newBackgroundContext()
    let reserved = try await early.perform { context in
      let note = Note(context: context)
      note.title = "early"
      try context.obtainPermanentIDs(for: [note])
      return note.managedID
    }
    #expect(try floor(of: "Note", in: container) == reserved.primaryKey)
    let other = try await saveNotes(["other"], in: container)
    #expect(other[0].primaryKey! > reserved.primaryKey!)
    try await early.perform { context in try context.save() }
    let titles = try await container.performBackgroundTask { context in
      try context.fetch(FetchRequest<Note>()).map(\.managedID)
    }
    #expect(Set(titles) == [reserved, other[0]])
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
  }

  /// A writer keeps the next key and history number of its last commit (`WriterMemo`) for
  /// as long as no other connection commits: two stores on one file, saving, reserving keys
  /// and deleting the largest key in turn, never give a key or a number twice.
  @Test func twoWritersTakingTurnsNeverGiveAKeyOrANumberTwice() async throws {
    let first = try PersistentContainer.makeTest(model: notesModel)
    let second = try PersistentContainer(name: "Second", model: notesModel, storeURL: first.persistentStore.url)
    var keys: [Int64] = []
    for round in 0..<4 {
      for (index, container) in [first, second].enumerated() {
        keys += try await saveNotes(["\(round)-\(index)-a", "\(round)-\(index)-b"], in: container).compactMap(
          \.primaryKey)
      }
      let reserved = try await second.performBackgroundTask { context in
        let note = Note(context: context)
        note.title = "reserved \(round)"
        try context.obtainPermanentIDs(for: [note])
        return note.managedID
      }
      keys += try await saveNotes(["after reservation \(round)"], in: first).compactMap(\.primaryKey)
      #expect(keys.last! > reserved.primaryKey!)
      keys.append(reserved.primaryKey!)
      let largest = try #require(keys.max())
      try await second.performBackgroundTask { context in
        let all = try context.fetch(FetchRequest<Note>())
        if let note = all.first(where: { $0.managedID.primaryKey == largest }) { context.delete(note) }
        try context.save()
      }
      keys += try await saveNotes(["after delete \(round)"], in: first).compactMap(\.primaryKey)
      #expect(keys.last! > largest)
    }
    #expect(Set(keys).count == keys.count)
    let numbers = try first.fetchHistory(HistoryRequest()).map(\.transactionNumber)
    #expect(numbers == Array(1...Int64(numbers.count)))
    #expect(try first.persistentStore.checkConsistency().problems.isEmpty)
  }

  @Test func historyNumbersAreNotReusedAfterAllHistoryIsDeleted() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["a"], in: container)
    _ = try await saveNotes(["b"], in: container)
    let last = try container.currentHistoryToken
    #expect(last.transactionNumber == 2)
    let next = HistoryToken(storeIdentifier: last.storeIdentifier, transactionNumber: last.transactionNumber + 1)
    #expect(try container.deleteHistory(before: next) == 2)
    #expect(try container.currentHistoryToken == last)  // none kept: the one before the horizon
    _ = try await saveNotes(["c"], in: container)
    #expect(try container.currentHistoryToken.transactionNumber == 3)
    let reopened = try PersistentContainer(name: "Test", model: notesModel, storeURL: container.persistentStore.url)
    _ = try await saveNotes(["d"], in: reopened)
    #expect(try reopened.fetchHistory(HistoryRequest(after: last)).map(\.transactionNumber) == [3, 4])
  }

  /// Turns a store this version made into one as version 2 made it: history numbered by
  /// `AUTOINCREMENT` without `recorded_by`, `_primary_key.max_pk` the highest key given.
  private func makeVersion2(_ url: URL) throws -> SQLiteConnection {
    let raw = try SQLiteConnection(path: url.path, mode: .readWrite)
    try raw.execute(
      """
      BEGIN;
      CREATE TABLE v2 (number INTEGER PRIMARY KEY AUTOINCREMENT, timestamp REAL NOT NULL, author TEXT,
        context_name TEXT, process_id INTEGER NOT NULL, first_change INTEGER NOT NULL DEFAULT 0,
        last_change INTEGER NOT NULL DEFAULT 0);
      INSERT INTO v2 SELECT number, timestamp, author, context_name, process_id, first_change, last_change
        FROM _history_transaction;
      DROP TABLE _history_transaction;
      ALTER TABLE v2 RENAME TO _history_transaction;
      ALTER TABLE _primary_key RENAME COLUMN key_floor TO max_pk;
      UPDATE _primary_key SET max_pk = (SELECT ifnull(max(pk), 0) FROM "Note") WHERE entity = 'Note';
      UPDATE _metadata SET value = '2' WHERE key = 'format_version';
      COMMIT;
      """)
    return raw
  }

  @Test func aVersion2StoreIsReadAsItIsAndUpgradedByAnOpenForWriting() async throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: notesModel)
      _ = try await saveNotes(["a", "b"], in: container)
      url = container.persistentStore.url
    }
    let raw = try makeVersion2(url)
    #expect(try raw.scalarInt("SELECT seq FROM sqlite_sequence WHERE name = '_history_transaction'") == 1)
    var readOnly = StoreOptions()
    readOnly.isReadOnly = true
    let reader = try PersistentContainer(name: "Test", model: notesModel, storeURL: url, options: readOnly)
    #expect(try reader.persistentStore.metadata()["format_version"] == "2")
    #expect(try reader.currentHistoryToken.transactionNumber == 1)
    let container = try PersistentContainer(name: "Test", model: notesModel, storeURL: url)
    #expect(try container.persistentStore.metadata()["format_version"] == "3")
    let table = try raw.scalarText("SELECT sql FROM sqlite_master WHERE name = '_history_transaction'") ?? ""
    #expect(!table.contains("AUTOINCREMENT"))
    #expect(try raw.scalarInt("SELECT key_floor FROM _primary_key WHERE entity = 'Note'") == 2)
    #expect(try container.fetchHistory(HistoryRequest()).map(\.transactionNumber) == [1])
    #expect(try await saveNotes(["c"], in: container)[0].primaryKey == 3)
    #expect(try container.fetchHistory(HistoryRequest()).map(\.transactionNumber) == [1, 2])
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
    try raw.execute("UPDATE _metadata SET value = '4' WHERE key = 'format_version'")
    #expect(throws: StoreError.unsupportedFormatVersion(found: 4, supported: 3)) {
      try PersistentContainer(name: "Test", model: notesModel, storeURL: url)
    }
  }

  /// A version 2 process still open when the store is upgraded must not write it: the
  /// statements it writes keys and history with fail (the store is unchanged).
  @Test func theWritesOfAVersion2ProcessFailAfterTheUpgrade() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["a"], in: container)
    let old = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
    let reserve = #expect(throws: SQLiteError.self) {
      try old.execute("UPDATE _primary_key SET max_pk = max_pk + 1 WHERE entity = 'Note' RETURNING max_pk")
    }
    #expect(reserve?.message.contains("max_pk") == true)
    let record = #expect(throws: SQLiteError.self) {
      try old.execute(
        "INSERT INTO _history_transaction (timestamp, author, context_name, process_id) VALUES (0, NULL, NULL, 1)")
    }
    #expect(record?.message.contains("recorded_by") == true)
    #expect(try container.fetchHistory(HistoryRequest()).count == 1)
  }

  @Test func theConsistencyCheckFindsADeletedKeyAboveTheFloor() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["a", "b"], in: container)
    try await container.performBackgroundTask { context in
      context.delete(try context.existingObject(with: ids[1]))
      try context.save()
    }
    #expect(try container.persistentStore.checkConsistency().problems.isEmpty)
    let raw = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
    try raw.execute("UPDATE _primary_key SET key_floor = 0 WHERE entity = 'Note'")
    let problems = try container.persistentStore.checkConsistency().problems
    #expect(problems.contains { $0.message.contains("Note 2 was deleted") })
  }
}
