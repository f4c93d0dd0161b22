import Foundation
import Synchronization
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

/// Peaks of resident memory a migration stage saw, in bytes.
final class StageMemory: Sendable {
  private let state = Mutex((baseline: 0, peak: 0))

  func start() { state.withLock { $0 = (residentBytes(), 0) } }
  func sample() { state.withLock { $0.peak = max($0.peak, residentBytes()) } }
  var measured: (baseline: Int, peak: Int) { state.withLock { $0 } }
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

extension Bench {
  /// A custom stage over 10 N rows, a page of 10,000 at a time with `reset()` after each save
  /// (docs/migration.md): how far resident memory grows in the probe process while it runs.
  func stageMemoryRow() throws {
    let name = "migrate \(n * 10) rows through a custom stage, 10,000 a page: peak RSS growth (absolute)"
    guard selected(name) else { return }
    let url = directory.appendingPathComponent("\(uniqueName("stage")).sqlite")
    do {
      let container = try PersistentContainer(
        name: "stage", model: ManagedObjectModel(MigratingItem.self), storeURL: url)
      try seed(container, rows: n * 10, of: MigratingItem.self)
    }
    let output = try ChildProcess.output(of: ["stage-memory", url.path]).split(separator: " ")
    guard output.count == 2, let growth = Double(output[0]), let peak = Double(output[1]) else {
      throw BenchError.sqlite("the stage memory probe printed \(output)")
    }
    let empty = try RawDatabase(existing: url.path).numbers("SELECT count(*) FROM MigratingItem WHERE note IS NULL")
    try verify("\(name): every row filled", empty[0], 0.0)
    rows.append(
      ReportRow(
        name: name, note: String(format: "%.1f MiB, process peak %.1f MiB (goal ≤ 64 MiB growth)", growth, peak)))
  }

  /// The custom stage memory probe: opens a version 1 store with a plan whose custom stage fills
  /// the new `note` of every row a page at a time; prints the resident memory's growth during
  /// the stage and the process's peak, in MiB.
  func stageMemoryProbe(store path: String) throws {
    let memory = StageMemory()
    let plan = MigrationPlan(
      versions: [
        .init("1", try ManagedObjectModel(MigratingItem.self)),
        .init("2", try ManagedObjectModel(MigratingItemAdded.self)),
      ],
      stages: [
        .custom(didMigrate: { context in
          memory.start()
          var request = FetchRequest<MigratingItemAdded>()
          request.fetchLimit = 10_000
          while true {
            let page = try context.fetch(request)
            for item in page { item.note = "n\(item.number)" }
            try context.save()
            context.reset()
            memory.sample()
            if page.count < 10_000 { break }
            request.fetchOffset += 10_000
          }
        })
      ])
    var options = StoreOptions()
    options.busyTimeout = .seconds(600)
    _ = try PersistentContainer(
      name: "stage", migrationPlan: plan, storeURL: URL(fileURLWithPath: path), options: options)
    let (baseline, peak) = memory.measured
    // The kernel's high-water mark of this process since its exec (`getrusage`'s `ru_maxrss`
    // would carry over the parent's from before the spawn).
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let highWater =
      status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
      .flatMap { Double($0.split(separator: " ", omittingEmptySubsequences: true)[1]) } ?? 0
    print(String(format: "%.1f %.1f", Double(max(0, peak - baseline)) / 1_048_576, highWater / 1024))
  }
}
