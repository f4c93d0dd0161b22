import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Groups of rows with consecutive primary keys are recorded as one run (`pk`, `last_pk`);
/// other groups as a key list. Either way the API gives one change per row.
@Suite struct KeyRunTests {
  /// The change rows of the store's history, as (pk, last_pk, keys) read with SQL.
  private func changeRows(_ container: PersistentContainer) throws -> [(Int64?, Int64?, String?)] {
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readOnly)
    let statement = try connection.statement("SELECT pk, last_pk, keys FROM _history_change ORDER BY id")
    defer { statement.reset() }
    var rows: [(Int64?, Int64?, String?)] = []
    while try statement.step() {
      rows.append(
        (
          statement.isNull(0) ? nil : statement.int64(0), statement.isNull(1) ? nil : statement.int64(1),
          statement.isNull(2) ? nil : statement.string(2)
        ))
    }
    return rows
  }

  /// The primary keys of each history transaction's changes, and their kinds.
  private func historyKeys(_ container: PersistentContainer) throws -> [[Int64]] {
    try container.fetchHistory(HistoryRequest()).map { transaction in
      transaction.changes.compactMap { $0.objectID.primaryKey }
    }
  }

  private func folderID(_ container: PersistentContainer, _ primaryKey: Int64) -> ManagedID<Folder> {
    ManagedID(
      unchecked: AnyManagedID(
        storeIdentifier: container.persistentStore.identifier, entityName: "Folder", key: .permanent(primaryKey)))
  }

  @Test func consecutiveKeysAreOneRunAndScatteredKeysAList() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Folder>(count: 1_000) { index, folder in folder.name = "f\(index)" })
      // Every other folder: keys 2, 4, ..., 20.
      let even = (1...10).map { folderID(container, Int64($0 * 2)) }
      _ = try context.execute(BatchUpdateRequest(objectIDs: even, propertiesToUpdate: [.set(\.name, "even")]))
    }
    let rows = try changeRows(container)
    #expect(rows.count == 2)
    #expect(rows[0].0 == 1 && rows[0].1 == 1_000 && rows[0].2 == nil)
    #expect(rows[1].0 == nil && rows[1].1 == nil && rows[1].2 == "[2,4,6,8,10,12,14,16,18,20]")
    let keys = try historyKeys(container)
    #expect(keys == [Array(1...1_000), (1...10).map { Int64($0 * 2) }])
  }

  @Test func deletingAWholeTableRecordsItsKeysWithOrWithoutGaps() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let deleted = try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Folder>(count: 50) { index, folder in folder.name = "f\(index)" })
      let all = try context.execute(BatchDeleteRequest<Folder>()).count
      _ = try context.execute(BatchInsertRequest<Folder>(count: 50) { index, folder in folder.name = "g\(index)" })
      // Keys 51...100; take 60 and 61 out, then delete the rest: keys with a gap.
      let middle = [60, 61].map { folderID(container, $0) }
      _ = try context.execute(BatchDeleteRequest(objectIDs: middle))
      let rest = try context.execute(BatchDeleteRequest<Folder>()).count
      return [all, rest]
    }
    #expect(deleted == [50, 48])
    let keys = try historyKeys(container)
    #expect(keys.count == 5)
    #expect(keys[1] == Array(1...50))
    #expect(keys[3] == [60, 61])
    #expect(keys[4] == Array(51...59) + Array(62...100))
    let rows = try changeRows(container)
    #expect(rows[1].0 == 1 && rows[1].1 == 50)  // the whole table at once: a run
    #expect(rows[4].2 != nil)  // with a gap: a list
  }

  @Test func checkpointCopiesTheLogIntoTheStoreFile() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let url = container.persistentStore.url
    let before = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
    try await container.performBackgroundTask { context in
      _ = try context.execute(
        BatchInsertRequest<Folder>(count: 2_000) { index, folder in folder.name = "folder \(index)" })
    }
    #expect(try container.persistentStore.checkpoint())
    let after = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
    #expect(after > before)
    let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
    #expect(try connection.scalarText(#"SELECT count(*) FROM "Folder""#) == "2000")
  }
}
