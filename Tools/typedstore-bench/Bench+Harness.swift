import CSQLite
import Foundation
import Synchronization
import TypedStore

// The harness: fresh stores and raw databases for each timing, the clock, medians of runs
// taken in turns, `--only`, and `--check`'s comparisons.

extension Bench {
  // MARK: - Stores

  /// A new store in the benchmark's folder, or in a folder of its own inside it (`folder`):
  /// processes that follow another store in the benchmark's folder are woken by inotify for
  /// every write to a file there, whichever store it belongs to.
  func freshContainer(_ name: String, history: Bool = true, folder: String? = nil) throws -> PersistentContainer {
    var base = directory
    if let folder {
      base = directory.appendingPathComponent(folder)
      try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
    }
    let url = base.appendingPathComponent("\(uniqueName(name)).sqlite")
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    var storeOptions = StoreOptions()
    storeOptions.recordsHistory = history
    return try PersistentContainer(name: name, model: model, storeURL: url, options: storeOptions)
  }

  func freshRaw(_ name: String, rows: Int = 0) throws -> RawDatabase {
    let raw = try RawDatabase(path: directory.appendingPathComponent("\(uniqueName(name))-raw.sqlite").path)
    try raw.execute(RawDatabase.createSQL)
    if rows > 0 {
      try raw.insert(rows)
      try raw.checkpoint()
    }
    return raw
  }

  /// Fills a store with `rows` rows through a batch insert, and checkpoints it (setup, not
  /// timed): otherwise the writer's background checkpoint of the seed runs during the timed
  /// operation, which waits for it (the raw side's setup checkpoints as well).
  func seed<Item: ManagedObject & BenchItemFields>(
    _ container: PersistentContainer, rows: Int, of type: Item.Type = BenchItem.self
  ) throws {
    _ = try container.newBackgroundContext().performAndWait { context in
      try context.execute(
        BatchInsertRequest<Item>(count: rows) { index, item in fill(item, BenchRow(index)) }
      ).count
    }
    try container.persistentStore.checkpoint()
  }

  // MARK: - Timing on fresh stores

  /// Times `body` on a fresh raw table of `n` rows, then checkpoints (not timed).
  func timeRaw(_ name: String, _ body: (RawDatabase) throws -> Void) throws -> Double {
    var raw: RawDatabase?
    let ms = try time({ raw = try freshRaw(name, rows: n) }, { if let raw { try body(raw) } })
    try raw?.checkpoint()
    return ms
  }

  /// Times `body` in a context of a fresh store seeded with `n` rows, then checkpoints (not
  /// timed); returns the time and the store's container.
  func timeSeeded(_ name: String, _ body: @escaping @Sendable (isolated ManagedObjectContext) throws -> Void) throws
    -> (Double, PersistentContainer)
  {
    let container = try freshContainer(name)
    try seed(container, rows: n)
    let context = container.newBackgroundContext()
    let ms = try time { try context.performAndWait(body) }
    try container.persistentStore.checkpoint()
    return (ms, container)
  }

  /// Times `body` on the objects of a fresh store seeded with `n` rows, fetched first (not
  /// timed: the operation is changing them and saving), then checkpoints (not timed).
  func timeOnFetched(
    _ name: String, _ body: @escaping @Sendable (isolated ManagedObjectContext, [BenchItem]) throws -> Void
  ) throws -> (Double, PersistentContainer) {
    let container = try freshContainer(name)
    try seed(container, rows: n)
    let ms = try container.newBackgroundContext().performAndWait { context in
      let items = try context.fetch(FetchRequest<BenchItem>())
      return try time { try body(context, items) }
    }
    try container.persistentStore.checkpoint()
    return (ms, container)
  }

  // MARK: - Rows

  /// Whether `--only` selects the row `name` (every row without `--only`), for rows whose
  /// setup should not run when they are not measured.
  func selected(_ name: String) -> Bool {
    options.only.map { name.localizedCaseInsensitiveContains($0) } ?? true
  }

  /// Measures a row with both sides (when `--only` selects it) and adds it to the report.
  func run(
    _ name: String, goal: Double?, raw: () async throws -> Double, typed: () async throws -> Double
  ) async throws {
    guard selected(name) else { return }
    let (rawTime, typedTime) = try await medians(raw, typed)
    rows.append(ReportRow(name: name, rawMilliseconds: rawTime, typedStoreMilliseconds: typedTime, goal: goal))
  }

  /// The medians of `runs` timings of each side, after one warm-up run of each. The sides
  /// take turns (raw, TypedStore, raw, ...), so that a slow spell of a shared machine falls on
  /// both rather than on all the runs of one.
  func medians(
    _ raw: () async throws -> Double, _ typed: () async throws -> Double
  ) async rethrows -> (raw: Double, typed: Double) {
    measuringTypedStore.store(false, ordering: .relaxed)
    _ = try await raw()
    measuringTypedStore.store(true, ordering: .relaxed)
    _ = try await typed()
    var rawTimes: [Double] = []
    var typedTimes: [Double] = []
    for _ in 0..<options.runs {
      measuringTypedStore.store(false, ordering: .relaxed)
      rawTimes.append(try await raw())
      measuringTypedStore.store(true, ordering: .relaxed)
      typedTimes.append(try await typed())
    }
    rawTimes.sort()
    typedTimes.sort()
    return (rawTimes[rawTimes.count / 2], typedTimes[typedTimes.count / 2])
  }

  // MARK: - Checks

  /// With `--check`, throws when the TypedStore result differs from the raw one.
  func verify(
    _ name: String, _ typed: some Equatable & CustomStringConvertible, _ raw: some Equatable & CustomStringConvertible
  ) throws {
    guard options.check else { return }
    guard "\(typed)" == "\(raw)" else { throw BenchError.mismatch("\(name): TypedStore \(typed), raw \(raw)") }
  }

  /// The checksum of the rows in a store's BenchItem table, read the raw way.
  func storeChecksum(_ container: PersistentContainer) throws -> [Double] {
    try RawDatabase(existing: container.persistentStore.url.path).numbers(
      "SELECT count(*), sum(number), sum(length(name) + length(category)), total(score), total(created) FROM BenchItem"
    )
  }

  func rawChecksum(_ raw: RawDatabase) throws -> [Double] {
    try raw.numbers(
      "SELECT count(*), sum(number), sum(length(name) + length(category)), total(score), total(created) FROM raw")
  }
}

// MARK: - Clocks

private let clock = ContinuousClock()

/// Which side `medians` runs now, for the markers of `time`.
let measuringTypedStore = Atomic<Bool>(false)

/// Times `body` once, after `setup` (untimed); returns milliseconds.
///
/// The timed part is marked, for `Tools/instruction-counts.py`, by calls to SQLite functions
/// that nothing else calls: `sqlite3_threadsafe` and `sqlite3_keyword_count` around the
/// TypedStore side, `sqlite3_sourceid` and `sqlite3_libversion_number` around the raw side.
/// Calls into a shared library, unlike Swift functions, are never inlined, merged or copied,
/// so callgrind's `--zero-before` and `--dump-before` find every one of them.
func time(_ setup: () throws -> Void = {}, _ body: () throws -> Void) rethrows -> Double {
  try setup()
  let typedStore = measuringTypedStore.load(ordering: .relaxed)
  _ = typedStore ? sqlite3_threadsafe() : Int32(truncatingIfNeeded: Int(bitPattern: sqlite3_sourceid()))
  let start = clock.now
  try body()
  let elapsed = clock.now - start
  _ = typedStore ? sqlite3_keyword_count() : sqlite3_libversion_number()
  return milliseconds(elapsed)
}

/// Times async `body` once; returns milliseconds.
@MainActor func timeAwaiting(_ body: () async throws -> Void) async rethrows -> Double {
  let start = clock.now
  try await body()
  return milliseconds(clock.now - start)
}

private func milliseconds(_ elapsed: Duration) -> Double {
  Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
}

/// Resident memory of this process, in bytes.
func residentBytes() -> Int {
  let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
  return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * sysconf(Int32(_SC_PAGESIZE))
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine.
func monotonicNanoseconds() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
