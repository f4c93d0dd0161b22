import Foundation
import TypedStore

// Migration: opening a store of 10 N rows with a model version that adds an attribute (an
// ALTER TABLE ADD COLUMN, O(1) in the rows), renames one (RENAME COLUMN) and makes one optional
// (SQLite's 12-step table rebuild), against the raw C API opening the file and running the
// same schema change in one transaction. The TypedStore side is the whole open: the WAL and
// metadata checks, planning (which counts the rows each step touches), the schema change, the
// stamp and the marker transaction.

/// Version 1 of the migrated entity: `BenchItem`'s five attributes.
final class MigratingItem: ManagedObject, BenchItemFields {
  @Attribute var number: Int = 0
  @Attribute var name: String = ""
  @Attribute var category: String = ""
  @Attribute var score: Double = 0
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// Version 2: an optional attribute added.
final class MigratingItemAdded: ManagedObject {
  override class var entityName: String { "MigratingItem" }
  @Attribute var number: Int = 0
  @Attribute var name: String = ""
  @Attribute var category: String = ""
  @Attribute var score: Double = 0
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
  @Attribute var note: String? = nil
}

/// Version 2: `category` renamed to `group`.
final class MigratingItemRenamed: ManagedObject {
  override class var entityName: String { "MigratingItem" }
  @Attribute var number: Int = 0
  @Attribute var name: String = ""
  @Attribute(originalName: "category") var group: String = ""
  @Attribute var score: Double = 0
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// Version 2: `score` optional, which drops a NOT NULL: a table rebuild.
final class MigratingItemRebuilt: ManagedObject {
  override class var entityName: String { "MigratingItem" }
  @Attribute var number: Int = 0
  @Attribute var name: String = ""
  @Attribute var category: String = ""
  @Attribute var score: Double? = nil
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

extension Bench {
  func migrationRows() async throws {
    let rows = n * 10
    try await migrationRow(
      "migrate \(rows) rows: an added optional attribute (ADD COLUMN)", rows: rows, to: MigratingItemAdded.self,
      raw: "ALTER TABLE raw ADD COLUMN note TEXT")
    try await migrationRow(
      "migrate \(rows) rows: a renamed attribute (RENAME COLUMN)", rows: rows, to: MigratingItemRenamed.self,
      raw: "ALTER TABLE raw RENAME COLUMN category TO \"group\"")
    try await migrationRow(
      "migrate \(rows) rows: required to optional (12-step table rebuild)", rows: rows,
      to: MigratingItemRebuilt.self,
      raw: """
        CREATE TABLE raw_new (pk INTEGER PRIMARY KEY, number INTEGER NOT NULL, name TEXT NOT NULL,
          category TEXT NOT NULL, score REAL, created REAL NOT NULL);
        INSERT INTO raw_new SELECT pk, number, name, category, score, created FROM raw;
        DROP TABLE raw;
        ALTER TABLE raw_new RENAME TO raw;
        """)
  }

  private func migrationRow(_ name: String, rows: Int, to target: ManagedObject.Type, raw sql: String) async throws {
    let version1 = try ManagedObjectModel(MigratingItem.self)
    let version2 = try ManagedObjectModel(target)
    try await run(name, goal: nil) {
      let path = directory.appendingPathComponent("\(uniqueName("migrate"))-raw.sqlite").path
      return try time(
        {
          let seeded = try RawDatabase(path: path)
          try seeded.execute(RawDatabase.createSQL)
          try seeded.insert(rows)
          try seeded.checkpoint()
        },
        {
          let database = try RawDatabase(existing: path)
          try database.execute("BEGIN IMMEDIATE; \(sql); COMMIT;")
        })
    } typed: {
      let url = directory.appendingPathComponent("\(uniqueName("migrate")).sqlite")
      let ms = try time(
        {
          let container = try PersistentContainer(name: "migrate", model: version1, storeURL: url)
          try seed(container, rows: rows, of: MigratingItem.self)
        },
        { _ = try PersistentStore(url: url, model: version2) })
      let stamped = try PersistentStore.metadataForPersistentStore(at: url).modelHash
      try verify("\(name): model", stamped, version2.versionHash)
      try verify(
        "\(name): rows", try RawDatabase(existing: url.path).numbers("SELECT count(*) FROM MigratingItem")[0],
        Double(rows))
      return ms
    }
  }
}
