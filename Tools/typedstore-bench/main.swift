import Foundation
import Synchronization
import TypedStore

// typedstore-bench: each operation done with TypedStore and with the raw SQLite C API in the
// same process and run; prints the median times and their ratio.
//
//   swift run -c release typedstore-bench [--n 100000] [--runs 5] [--json FILE] [--only NAME] [--check]
//
// --check compares every TypedStore result with the raw one (same rows, same checksums) and
// exits non-zero on a difference; the test suite runs it with --n 1000 --runs 1.

struct Options: Sendable {
  var n = 100_000
  var runs = 5
  var json: String?
  var only: String?
  var check = false
  /// Internal: run only the import memory probe with this N, print the growth in MiB.
  var importMemory: Int?
  /// Internal: run only the export memory probe with this N, print the growth in MiB.
  var exportMemory: String?
  /// Internal: run only the batched-fetch memory probe on this store, print the growth in MiB.
  var batchMemory: String?
  /// Internal: be process A of the latency row: save this many objects into the store at
  /// this path, one per transaction, printing "<primary key> <monotonic ns>" as each returns.
  var latencyWriter: (path: String, commits: Int)?
  /// Internal: be a consumer process of the throughput row: a HistoryMerger named `name` on
  /// the store at `path`, until the file `stop` exists.
  var follower: (path: String, name: String, stop: String)?
}

let options: Options = {
  var options = Options()
  var arguments = CommandLine.arguments.dropFirst().makeIterator()
  while let argument = arguments.next() {
    switch argument {
    case "--n": options.n = arguments.next().flatMap { Int($0) } ?? options.n
    case "--runs": options.runs = max(1, arguments.next().flatMap { Int($0) } ?? options.runs)
    case "--json": options.json = arguments.next()
    case "--only": options.only = arguments.next()
    case "--check": options.check = true
    case "--import-memory": options.importMemory = arguments.next().flatMap { Int($0) }
    case "--export-memory": options.exportMemory = arguments.next()
    case "--batch-memory": options.batchMemory = arguments.next()
    case "--follow":
      if let path = arguments.next(), let name = arguments.next(), let stop = arguments.next() {
        options.follower = (path, name, stop)
      }
    case "--latency-writer":
      if let path = arguments.next(), let commits = arguments.next().flatMap({ Int($0) }) {
        options.latencyWriter = (path, commits)
      }
    case "--help", "-h":
      print("usage: typedstore-bench [--n 100000] [--runs 5] [--json FILE] [--only NAME] [--check]")
      exit(0)
    default:
      FileHandle.standardError.write(Data("typedstore-bench: unknown argument \(argument)\n".utf8))
      exit(64)
    }
  }
  return options
}()

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
/// Ends the process, removing this process's directory (which `exit` alone, skipping the
/// `defer` above, would leave behind: one per helper process of every run).
func finish(_ status: Int32) -> Never {
  try? FileManager.default.removeItem(at: directory)
  exit(status)
}
let model = try ManagedObjectModel(BenchItem.self, BenchRecord.self, BenchIndexedItem.self, BenchObservedItem.self)

/// A new file name for every store: a store of an earlier run may still be open while its
/// contexts wind down, and must never share a file (or its -shm) with a new one.
let fileCounter = Atomic<Int>(0)
func uniqueName(_ name: String) -> String {
  "\(name)-\(fileCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
}

func freshContainer(_ name: String, history: Bool = true) throws -> PersistentContainer {
  let url = directory.appendingPathComponent("\(uniqueName(name)).sqlite")
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

/// The checksum of fetched items' five attributes, as the raw side's `Checksum` of its rows.
func itemChecksum(_ items: [some BenchItemFields]) -> Checksum {
  var checksum = Checksum()
  for item in items {
    checksum.add(
      number: Int64(item.number), name: item.name, category: item.category, score: item.score,
      created: item.created.timeIntervalSinceReferenceDate)
  }
  return checksum
}

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

func fill(_ item: some BenchItemFields, _ row: BenchRow) {
  item.number = Int(row.number)
  item.name = row.name
  item.category = row.category
  item.score = row.score
  item.created = Date(timeIntervalSinceReferenceDate: row.created)
}

/// The checksum of the rows in a store's BenchItem table, read the raw way.
func storeChecksum(_ container: PersistentContainer) throws -> [Double] {
  try RawDatabase(existing: container.persistentStore.url.path).numbers(
    "SELECT count(*), sum(number), sum(length(name) + length(category)), total(score), total(created) FROM BenchItem")
}

func rawChecksum(_ raw: RawDatabase) throws -> [Double] {
  try raw.numbers(
    "SELECT count(*), sum(number), sum(length(name) + length(category)), total(score), total(created) FROM raw")
}

func verify(
  _ name: String, _ typed: some Equatable & CustomStringConvertible, _ raw: some Equatable & CustomStringConvertible
) throws {
  guard options.check else { return }
  guard "\(typed)" == "\(raw)" else { throw BenchError.mismatch("\(name): TypedStore \(typed), raw \(raw)") }
}

/// Reads the history after `token` (all of it for nil) through the API, and counts its
/// changes and tombstones.
func countHistory(_ container: PersistentContainer, after token: HistoryToken?) throws -> (
  changes: Int, tombstones: Int
) {
  let history = try container.fetchHistory(token.map { HistoryRequest(after: $0) } ?? HistoryRequest())
  var changes = 0
  var tombstones = 0
  for transaction in history {
    changes += transaction.changes.count
    for change in transaction.changes where change.tombstone != nil { tombstones += 1 }
  }
  return (changes, tombstones)
}

/// A fresh store in which `rows` records were inserted and then deleted by one batch delete
/// that kept a tombstone per row (setup, not timed); returns it and the token before the
/// delete.
func tombstonedDelete(_ rows: Int) throws -> (PersistentContainer, HistoryToken) {
  let container = try freshContainer("tombstones")
  let context = container.newBackgroundContext()
  _ = try context.performAndWait { context in
    try context.execute(BatchInsertRequest<BenchRecord>(count: rows) { index, record in record.name = "r\(index)" })
  }
  let token = try container.currentHistoryToken
  _ = try context.performAndWait { context in try context.execute(BatchDeleteRequest<BenchRecord>()) }
  try container.persistentStore.checkpoint()
  return (container, token)
}

/// The latency row: process B (this one) merges every commit of process A (this executable
/// run with `--latency-writer`) into a context as its change notification arrives, and notes
/// when each merge returned; A notes when each `save()` returned. Returns p50 and p99 of the
/// differences, in milliseconds.
func measureMergeLatency(commits: Int) throws -> (Double, Double) {
  let container = try freshContainer("latency")
  let context = container.newBackgroundContext()
  let merged = Mutex<[Int64: UInt64]>([:])
  let observation = container.addStoreChangesObserver { changes in
    guard changes.isRemote else { return }
    context.performAndWait { context in _ = context.mergeChanges(changes) }
    let now = monotonicNanoseconds()
    merged.withLock { times in
      for id in changes.insertedIDs { if let key = id.primaryKey { times[key] = now } }
    }
  }
  let writer = Process()
  writer.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
  writer.arguments = ["--latency-writer", container.persistentStore.url.path, String(commits)]
  let pipe = Pipe()
  writer.standardOutput = pipe
  try writer.run()
  let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  writer.waitUntilExit()
  let deadline = Date().addingTimeInterval(10)
  while merged.withLock({ $0.count }) < commits && Date() < deadline { usleep(1000) }
  observation.cancel()
  let times = merged.withLock { $0 }
  var latencies: [Double] = []
  for line in output.split(separator: "\n") {
    let fields = line.split(separator: " ")
    guard fields.count == 2, let key = Int64(fields[0]), let returned = UInt64(fields[1]) else { continue }
    guard let mergedAt = times[key] else { throw BenchError.mismatch("commit \(key) was never merged") }
    latencies.append((Double(mergedAt) - Double(returned)) / 1e6)
  }
  guard latencies.count == commits else { throw BenchError.mismatch("\(latencies.count) of \(commits) commits timed") }
  latencies.sort()
  return (latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)])
}

// MARK: - Measuring

struct Result: Sendable {
  var name: String
  var rawMilliseconds: Double?
  var typedStoreMilliseconds: Double?
  var goal: Double?
  var note: String?

  var ratio: Double? {
    guard let raw = rawMilliseconds, let typed = typedStoreMilliseconds, raw > 0 else { return nil }
    return typed / raw
  }
}

let clock = ContinuousClock()

/// Times `body` once, after `setup` (untimed); returns milliseconds.
func time(_ setup: () throws -> Void = {}, _ body: () throws -> Void) rethrows -> Double {
  try setup()
  let start = clock.now
  try body()
  let elapsed = clock.now - start
  return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
}

/// The medians of `runs` timings of each side, after one warm-up run of each. The sides take
/// turns (raw, TypedStore, raw, ...), so that a slow spell of a shared machine falls on both
/// rather than on all the runs of one.
func medians(_ raw: () throws -> Double, _ typed: () throws -> Double) rethrows -> (raw: Double, typed: Double) {
  _ = try raw()
  _ = try typed()
  var rawTimes: [Double] = []
  var typedTimes: [Double] = []
  for _ in 0..<options.runs {
    rawTimes.append(try raw())
    typedTimes.append(try typed())
  }
  rawTimes.sort()
  typedTimes.sort()
  return (rawTimes[rawTimes.count / 2], typedTimes[typedTimes.count / 2])
}

/// Whether `--only` selects the row `name` (every row without `--only`), for rows whose
/// setup should not run when they are not measured.
func selected(_ name: String) -> Bool {
  options.only.map { name.localizedCaseInsensitiveContains($0) } ?? true
}

var results: [Result] = []
@MainActor func run(_ name: String, goal: Double?, raw: () throws -> Double, typed: () throws -> Double) throws {
  guard selected(name) else { return }
  let (rawTime, typedTime) = try medians(raw, typed)
  results.append(Result(name: name, rawMilliseconds: rawTime, typedStoreMilliseconds: typedTime, goal: goal))
}
@MainActor func unavailable(_ name: String, goal: Double?, note: String) {
  guard selected(name) else { return }
  results.append(Result(name: name, goal: goal, note: note))
}

let n = options.n

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

// Process A of the latency row: one object per transaction, 1 ms apart, each commit's
// return time printed for process B to compare with the time it merged it.
if let (path, commits) = options.latencyWriter {
  let container = try PersistentContainer(name: "latency", model: model, storeURL: URL(fileURLWithPath: path))
  let context = container.newBackgroundContext()
  var lines: [String] = []
  for index in 0..<commits {
    let key = try context.performAndWait { context in
      let item = BenchItem(context: context)
      fill(item, BenchRow(index))
      try context.save()
      return item.managedID.primaryKey ?? -1
    }
    lines.append("\(key) \(monotonicNanoseconds())")
    usleep(1000)
  }
  print(lines.joined(separator: "\n"))
  finish(0)
}

/// Runs async work from this synchronous program and waits for it.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
  let result = Mutex<Swift.Result<T, any Error>?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    let value: Swift.Result<T, any Error>
    do { value = .success(try await work()) } catch { value = .failure(error) }
    result.withLock { $0 = value }
    done.signal()
  }
  done.wait()
  guard let value = result.withLock({ $0 }) else { throw BenchError.mismatch("no result") }
  return try value.get()
}

// A consumer process of the throughput row: follows the store with live objects until told
// to stop.
if let (path, name, stop) = options.follower {
  let container = try PersistentContainer(name: "follow", model: model, storeURL: URL(fileURLWithPath: path))
  let context = container.newBackgroundContext()
  _ = try context.performAndWait { context in try context.count(for: FetchRequest<BenchItem>()) }
  let merger = try HistoryMerger(container: container, consumer: name, contexts: [context])
  try blocking { try await merger.start() }
  print("following")
  while !FileManager.default.fileExists(atPath: stop) { usleep(20_000) }
  try blocking { await merger.stop() }
  finish(0)
}

// The import memory probe (run by the benchmark in a process of its own): 10 N objects
// inserted in saves of N / 10 by one context, as an import loop does; prints how far the
// resident memory grew past its peak during the first batch, in MiB.
if let probeN = options.importMemory {
  let objects = probeN * 10
  let batch = max(1, probeN / 10)
  let container = try freshContainer("import")
  let (baseline, peak) = try container.newBackgroundContext().performAndWait { context in
    var baseline = 0
    var peak = 0
    for start in stride(from: 0, to: objects, by: batch) {
      for index in start..<min(start + batch, objects) { fill(BenchItem(context: context), BenchRow(index)) }
      let before = residentBytes()
      try context.save()
      let after = residentBytes()
      if start == 0 { baseline = max(before, after) } else { peak = max(peak, before, after) }
    }
    return (baseline, peak)
  }
  print(String(format: "%.1f", Double(max(0, peak - baseline)) / 1_048_576))
  finish(0)
}

// The export memory probe: a process of its own that opens a store the benchmark filled
// with history of 10 N changes in 100 transactions (so no memory freed by the filling hides
// growth), exports all of it as NDJSON to nowhere, and prints how far its resident memory
// grew during the export, in MiB, and the bytes written. Streaming keeps it flat whatever N.
if let path = options.exportMemory {
  let container = try PersistentContainer(name: "export", model: model, storeURL: URL(fileURLWithPath: path))
  let rows = try container.newBackgroundContext().performAndWait { context in
    try context.count(for: FetchRequest<BenchItem>())
  }
  let baseline = residentBytes()
  var peak = baseline
  var bytes = 0
  var chunks = 0
  let summary = try container.persistentStore.exportHistory(HistoryRequest()) { chunk in
    bytes += chunk.count
    chunks += 1
    if chunks % 64 == 0 { peak = max(peak, residentBytes()) }
  }
  peak = max(peak, residentBytes())
  guard summary.changes == rows else { throw BenchError.sqlite("exported \(summary.changes) of \(rows) changes") }
  print(String(format: "%.1f %d", Double(max(0, peak - baseline)) / 1_048_576, bytes))
  finish(0)
}

// The batched-fetch memory probe: a process of its own that opens a store the benchmark
// filled (so no memory freed by the filling hides growth), reads every row through
// `fetch(_:batchSize: 1_000)` with every attribute touched, and prints how far its resident
// memory grew from just before the fetch, in MiB.
if let path = options.batchMemory {
  let container = try PersistentContainer(name: "batched", model: model, storeURL: URL(fileURLWithPath: path))
  let context = container.newBackgroundContext()
  let rows = try context.performAndWait { context in try context.count(for: FetchRequest<BenchItem>()) }
  let growth = try context.performAndWait { context in
    let baseline = residentBytes()
    var peak = baseline
    let results = try context.fetch(FetchRequest<BenchItem>(), batchSize: 1_000)
    var checksum = Checksum()
    for (index, item) in results.enumerated() {
      checksum.add(
        number: Int64(item.number), name: item.name, category: item.category, score: item.score,
        created: item.created.timeIntervalSinceReferenceDate)
      if index % 10_000 == 0 { peak = max(peak, residentBytes()) }
    }
    peak = max(peak, residentBytes())
    guard results.count == rows else { throw BenchError.sqlite("read \(results.count) of \(rows) rows") }
    return peak - baseline
  }
  print(String(format: "%.1f", Double(max(0, growth)) / 1_048_576))
  finish(0)
}

// MARK: - Operations

do {
  for history in [true, false] {
    try run("insert \(n) objects, one save, history \(history ? "on" : "off")", goal: history ? 2.5 : 2.0) {
      var raw: RawDatabase?
      let ms = try time({ raw = try freshRaw("insert") }) { try raw?.insert(n) }
      try raw?.checkpoint()
      return ms
    } typed: {
      var container: PersistentContainer?
      let ms = try time({ container = try freshContainer("insert", history: history) }) {
        try container?.newBackgroundContext().performAndWait { context in
          for index in 0..<n { fill(BenchItem(context: context), BenchRow(index)) }
          try context.save()
        }
      }
      try container?.persistentStore.checkpoint()  // not left to run during the next timing
      if let container {
        let raw = try freshRaw("insert-check", rows: n)
        try verify("insert", try storeChecksum(container), try rawChecksum(raw))
      }
      return ms
    }
  }

  let fetchName = "fetch \(n) objects, every attribute read"
  let observedFetchName = "fetch \(n) objects of an Observable entity, every attribute read"
  if selected(fetchName) || selected(observedFetchName) {
    let raw = try freshRaw("fetch", rows: n)
    let container = try freshContainer("fetch")
    try seed(container, rows: n)
    let expected = try raw.fetchAll()
    try run(fetchName, goal: 2.0) {
      try time { try verify("fetch raw", try raw.fetchAll(), expected) }
    } typed: {
      let context = container.newBackgroundContext()
      _ = try context.performAndWait { context in try context.count(for: FetchRequest<BenchItem>()) }
      return try time {
        let checksum = try context.performAndWait { context in
          var checksum = Checksum()
          for item in try context.fetch(FetchRequest<BenchItem>()) {
            checksum.add(
              number: Int64(item.number), name: item.name, category: item.category, score: item.score,
              created: item.created.timeIntervalSinceReferenceDate)
          }
          return "\(checksum)"
        }
        try verify("fetch", checksum, "\(expected)")
      }
    }

    // The same with an entity that declares `Observable`: each object gets an observation
    // registrar when first read, and each read is reported to Observation. No goal: the cost
    // of opting in, for the docs.
    if selected(observedFetchName) { try seed(container, rows: n, of: BenchObservedItem.self) }
    try run(observedFetchName, goal: nil) {
      try time { try verify("fetch raw", try raw.fetchAll(), expected) }
    } typed: {
      let context = container.newBackgroundContext()
      _ = try context.performAndWait { context in try context.count(for: FetchRequest<BenchObservedItem>()) }
      return try time {
        let checksum = try context.performAndWait { context in
          "\(itemChecksum(try context.fetch(FetchRequest<BenchObservedItem>())))"
        }
        try verify("observed fetch", checksum, "\(expected)")
      }
    }
  }

  // A #Predicate selecting a tenth of the rows, against the raw C API running the same SQL and
  // reading the same columns: on a column without an index (string equality, so through
  // Swift's string comparison), and on an indexed integer range.
  if selected("fetch with a #Predicate matching 10% of \(n)") {
    let raw = try freshRaw("predicate", rows: n)
    let container = try freshContainer("predicate")
    try seed(container, rows: n)
    let category = "category 3"
    let expected = try raw.fetchAll(where: " WHERE category = '\(category)' ORDER BY pk")
    try run("fetch with a #Predicate matching 10% of \(n), no index (string ==)", goal: 2.0) {
      try time {
        try verify("predicate raw", try raw.fetchAll(where: " WHERE category = '\(category)' ORDER BY pk"), expected)
      }
    } typed: {
      let context = container.newBackgroundContext()
      let request = FetchRequest<BenchItem>(predicate: #Predicate { $0.category == category })
      _ = try context.performAndWait { context in try context.count(for: request) }
      return try time {
        let checksum = try context.performAndWait { context in "\(itemChecksum(try context.fetch(request)))" }
        try verify("predicate", checksum, "\(expected)")
      }
    }

    try raw.execute("CREATE INDEX raw_number ON raw(number)")
    try seed(container, rows: n, of: BenchIndexedItem.self)
    let (low, high) = (n / 2, n / 2 + n / 10)
    // The same SQL as TypedStore's, which returns rows in primary key order.
    let range = " WHERE number >= \(low) AND number < \(high) ORDER BY pk"
    let expectedRange = try raw.fetchAll(where: range)
    try run("fetch with a #Predicate matching 10% of \(n), indexed (integer range)", goal: 2.0) {
      try time { try verify("indexed raw", try raw.fetchAll(where: range), expectedRange) }
    } typed: {
      let context = container.newBackgroundContext()
      let request = FetchRequest<BenchIndexedItem>(predicate: #Predicate { $0.number >= low && $0.number < high })
      _ = try context.performAndWait { context in try context.count(for: request) }
      return try time {
        let checksum = try context.performAndWait { context in "\(itemChecksum(try context.fetch(request)))" }
        try verify("indexed", checksum, "\(expectedRange)")
      }
    }
  }

  try graphRows(n: n)

  try run("change one attribute of \(n) objects, one save, history on", goal: 2.5) {
    try timeRaw("update") { try $0.updateEachScore(n) }
  } typed: {
    let (ms, container) = try timeOnFetched("update") { context, items in
      for item in items { item.score = item.score + 1 }
      try context.save()
    }
    let raw = try freshRaw("update-check", rows: n)
    try raw.updateEachScore(n)
    try verify("update", try storeChecksum(container), try rawChecksum(raw))
    return ms
  }

  try run("delete \(n) objects through the context, one save, history on", goal: 2.5) {
    try timeRaw("delete") { try $0.deleteEach(n) }
  } typed: {
    let (ms, container) = try timeOnFetched("delete") { context, items in
      for item in items { context.delete(item) }
      try context.save()
    }
    try verify("delete", try storeChecksum(container).first ?? -1, 0.0)
    return ms
  }

  try run("batch update of \(n) objects, history on", goal: 2.0) {
    try timeRaw("batch-update") { try $0.execute("UPDATE raw SET score = 1") }
  } typed: {
    let (ms, container) = try timeSeeded("batch-update") { context in
      _ = try context.execute(BatchUpdateRequest<BenchItem>(propertiesToUpdate: [.set(\.score, 1)]))
    }
    try verify("batch update", try storeChecksum(container)[3], Double(n))
    return ms
  }

  try run("batch delete of \(n) objects, history on", goal: 2.0) {
    try timeRaw("batch-delete") { try $0.execute("DELETE FROM raw") }
  } typed: {
    let (ms, container) = try timeSeeded("batch-delete") { context in
      _ = try context.execute(BatchDeleteRequest<BenchItem>())
    }
    try verify("batch delete", try storeChecksum(container).first ?? -1, 0.0)
    return ms
  }

  do {
    let container = try freshContainer("history")
    try seed(container, rows: n)
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    try run("fetch history of \(n) changes", goal: 2.0) {
      try time { try verify("history raw", try raw.readHistory(after: 0).changes, n) }
    } typed: {
      try time { try verify("history", try countHistory(container, after: nil).changes, n) }
    }
  }

  // History reads cost the same per change whatever the shape of the history: one large
  // delete that keeps a tombstone per row, many one-row saves, and the per-change cost of
  // a delete 100 times larger.
  let tombstonedName = "fetch history of one delete of \(n) rows with tombstones"
  if selected(tombstonedName) {
    let (container, token) = try tombstonedDelete(n)
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    try run(tombstonedName, goal: 2.0) {
      try time { try verify("tombstones raw", try raw.readHistory(after: token.transactionNumber).tombstones, n) }
    } typed: {
      try time { try verify("tombstones", try countHistory(container, after: token).tombstones, n) }
    }
  }

  let savesName = "fetch history of \(n) single-row saves"
  if selected(savesName) {
    let container = try freshContainer("small-saves")
    let start = try container.currentHistoryToken
    try container.newBackgroundContext().performAndWait { context in
      for index in 0..<n {
        fill(BenchItem(context: context), BenchRow(index))
        try context.save()
      }
    }
    try container.persistentStore.checkpoint()
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    try run(savesName, goal: 2.0) {
      try time { try verify("saves raw", try raw.readHistory(after: start.transactionNumber).changes, n) }
    } typed: {
      try time { try verify("saves", try countHistory(container, after: start).changes, n) }
    }
  }

  let small = max(100, n / 10)
  let large = small * 100
  let perChangeName =
    "fetch history, per-change cost at \(large) vs \(small) tombstoned changes (raw column: the smaller × 100)"
  if selected(perChangeName) {
    let (smallStore, smallToken) = try tombstonedDelete(small)
    let (largeStore, largeToken) = try tombstonedDelete(large)
    // The raw column is the small read's time times 100: what the large read costs at the
    // small read's cost per change. The ratio is how much that cost grew.
    try run(perChangeName, goal: 1.5) {
      try time { try verify("small", try countHistory(smallStore, after: smallToken).tombstones, small) } * 100
    } typed: {
      try time { try verify("large", try countHistory(largeStore, after: largeToken).tombstones, large) }
    }
  }

  // History deletion is measured on its own: no raw baseline, an absolute time. The history
  // is N changes in N/100 transactions of 100 updated rows each, every change with its own
  // attribute list, as many small saves would leave it.
  if selected("delete history of changes in transactions (absolute)") {
    let container = try freshContainer("history-delete")
    try seed(container, rows: 100)
    let start = try container.currentHistoryToken
    let context = container.newBackgroundContext()
    let transactions = max(1, n / 100)
    try context.performAndWait { context in
      let items = try context.fetch(FetchRequest<BenchItem>())
      for round in 0..<transactions {
        for item in items { item.score = Double(round) }
        try context.save()
      }
    }
    let end = try container.currentHistoryToken
    let deleted = try container.fetchHistory(HistoryRequest(after: start)).reduce(0) { $0 + $1.changes.count }
    let ms = try time {
      try container.deleteHistory(
        before: HistoryToken(storeIdentifier: end.storeIdentifier, transactionNumber: end.transactionNumber + 1))
    }
    try verify("delete history", try container.fetchHistory(HistoryRequest(after: end)).count, 0)
    results.append(
      Result(
        name: "delete history of \(deleted) changes in \(transactions) transactions (absolute)",
        typedStoreMilliseconds: ms, note: "one transaction"))
  }

  // Memory is measured in a process of its own: memory this one freed earlier would hide
  // growth. The probe is this program with the arguments; it prints its result.
  func runProbe(_ arguments: [String]) throws -> String {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    probe.arguments = arguments
    let pipe = Pipe()
    probe.standardOutput = pipe
    try probe.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    probe.waitUntilExit()
    guard probe.terminationStatus == 0 else { throw BenchError.sqlite("the probe \(arguments[0]) failed: \(output)") }
    return output.trimmingCharacters(in: .whitespacesAndNewlines)
  }
  let importName =
    "insert \(n * 10) objects in saves of \(max(1, n / 10)): peak RSS growth after the first save (absolute)"
  if selected(importName) {
    let output = try runProbe(["--import-memory", String(n)])
    guard let growth = Double(output) else { throw BenchError.sqlite("the import memory probe printed \(output)") }
    results.append(
      Result(
        name: importName,
        note: String(format: "%.1f MiB (goal ≤ 64 MiB)", growth)))
  }

  // Exporting history streams: 10 N changes exported with the resident memory sampled.
  let exportName = "export \(n * 10) changes as NDJSON: peak RSS growth during the export (absolute)"
  if selected(exportName) {
    let rows = n * 10
    let batch = max(1, rows / 100)
    let container = try freshContainer("export")
    try container.newBackgroundContext().performAndWait { context in
      for start in stride(from: 0, to: rows, by: batch) {
        _ = try context.execute(
          BatchInsertRequest<BenchItem>(count: min(batch, rows - start)) { index, item in
            fill(item, BenchRow(start + index))
          })
      }
    }
    try container.persistentStore.checkpoint()
    let output = try runProbe(["--export-memory", container.persistentStore.url.path])
    let fields = output.split(separator: " ").map(String.init)
    guard fields.count == 2, let growth = Double(fields[0]), let bytes = Double(fields[1])
    else { throw BenchError.sqlite("the export memory probe printed \(output)") }
    results.append(
      Result(
        name: exportName,
        note: String(format: "%.1f MiB for %.0f MiB of NDJSON (goal: constant)", growth, bytes / 1_048_576)))
  }

  // Writers with consumers following: the same one-object saves into a store three consumer
  // processes follow (each a HistoryMerger with a context) and into one nobody follows.
  let saves = n >= 100_000 ? 5000 : 200
  let throughputName = "\(saves) one-object saves while 3 consumer processes follow (raw column: nobody follows)"
  if selected(throughputName) {
    let watched = try freshContainer("watched")
    let stop = directory.appendingPathComponent("followers-\(uniqueName("stop"))").path
    let followers = try (1...3).map { index in
      let process = Process()
      process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
      process.arguments = ["--follow", watched.persistentStore.url.path, "consumer-\(index)", stop]
      process.standardOutput = FileHandle.nullDevice
      try process.run()
      return process
    }
    while try watched.persistentStore.historyConsumers().count < 3 { usleep(10_000) }
    func smallSaves(_ container: PersistentContainer) throws -> Double {
      let context = container.newBackgroundContext()
      return try time {
        for index in 0..<saves {
          try context.performAndWait { context in
            fill(BenchItem(context: context), BenchRow(index))
            try context.save()
          }
        }
      }
    }
    try run(throughputName, goal: 1.1) {
      try smallSaves(try freshContainer("unwatched"))
    } typed: {
      try smallSaves(watched)
    }
    _ = FileManager.default.createFile(atPath: stop, contents: nil)
    for process in followers { process.waitUntilExit() }
  }

  // A consumer far behind: a HistoryMerger (one context) that has not run for N one-object
  // saves catches up, against reading the same history with the C API.
  let catchUpName = "a consumer \(n) transactions behind catches up (raw column: reading them with the C API)"
  if selected(catchUpName) {
    let container = try freshContainer("catch-up")
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      for index in 0..<n {
        fill(BenchItem(context: context), BenchRow(index))
        try context.save()
      }
    }
    try container.persistentStore.checkpoint()
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    let pruner = HistoryPruner(container: container)
    try run(catchUpName, goal: 2.0) {
      try time { try verify("catch-up raw", try raw.readHistory(after: 0).changes, n) }
    } typed: {
      try? pruner.store.removeHistoryConsumer(named: "behind")
      var options = HistoryMerger.Options()
      options.startsAt = .beginning
      let merger = try HistoryMerger(container: container, consumer: "behind", contexts: [context], options: options)
      let ms = try time { try blocking { try await merger.start() } }
      try blocking { await merger.stop() }
      try verify("catch-up", merger.checkpoint.transactionNumber, Int64(n))
      return ms
    }
  }

  // A live query: a FetchedResultsController over 10,000 objects, and another context's save
  // of one of them (its sort key changed), merged from history: the merge and the diff.
  let frcName = "FetchedResultsController diff after one merged change, 10000-object results (absolute)"
  if selected(frcName) {
    let container = try freshContainer("frc")
    try seed(container, rows: 10_000)
    let live = container.newModelContext(name: "live")
    let controller = FetchedResultsController(
      fetchRequest: FetchRequest<BenchItem>(sortBy: [SortDescriptor(\.score)]), context: live)
    try controller.performFetch()
    let writer = container.newModelContext(name: "writer")
    let items = try writer.fetch(FetchRequest<BenchItem>(sortBy: [SortDescriptor(\.number)]))
    var token = try container.currentHistoryToken
    var timings: [Double] = []
    var generator = SystemRandomNumberGenerator()
    for round in 0..<300 {
      let item = items[Int.random(in: 0..<items.count, using: &generator)]
      item.score = Double.random(in: 0..<5_000, using: &generator)
      try writer.save()
      let transactions = try container.fetchHistory(HistoryRequest(after: token))
      token = try container.currentHistoryToken
      let ms = try time { for transaction in transactions { live.mergeChanges(StoreChanges(transaction)) } }
      if round >= 20 { timings.append(ms) }  // after a warm-up
    }
    try verify("frc", controller.fetchedObjects.count, 10_000)
    timings.sort()
    results.append(
      Result(
        name: frcName,
        note: String(
          format: "p50 %.3f ms, p99 %.3f ms (goal ≤ 1 ms)", timings[timings.count / 2],
          timings[timings.count * 99 / 100])))
  }

  let commits = n >= 100_000 ? 1000 : 100
  let latencyName = "commit returned in process A -> merged into a context in process B, \(commits) commits (absolute)"
  if selected(latencyName) {
    let (p50, p99) = try measureMergeLatency(commits: commits)
    results.append(
      Result(
        name: latencyName,
        note: String(format: "p50 %.2f ms, p99 %.2f ms (goal p50 ≤ 1 ms, p99 ≤ 10 ms)", p50, p99)))
  }
  let batchName = "iterate \(n * 10) objects with fetch(_:batchSize: 1000): peak RSS growth (absolute)"
  if selected(batchName) {
    let container = try freshContainer("batched")
    try seed(container, rows: n * 10)
    let output = try runProbe(["--batch-memory", container.persistentStore.url.path])
    guard let growth = Double(output) else { throw BenchError.sqlite("the batched-fetch probe printed \(output)") }
    results.append(Result(name: batchName, note: String(format: "%.1f MiB (goal ≤ 64 MiB)", growth)))
  }
} catch {
  FileHandle.standardError.write(Data("typedstore-bench: \(error)\n".utf8))
  finish(1)
}

// MARK: - Output

func format(_ value: Double?, digits: Int = 1) -> String {
  value.map { String(format: "%.\(digits)f", $0) } ?? "n/a"
}

print("typedstore-bench: N = \(n), median of \(options.runs) run(s) after a warm-up, SQLite \(sqliteVersion())")
print("| operation | raw ms | TypedStore ms | ratio | goal |")
print("|---|---:|---:|---:|---:|")
for result in results {
  let goal = result.goal.map { "≤ \(format($0))" } ?? "—"
  let ratio = result.ratio.map { format($0, digits: 2) } ?? (result.note ?? "n/a")
  print(
    "| \(result.name) | \(format(result.rawMilliseconds)) | \(format(result.typedStoreMilliseconds)) | \(ratio) | \(goal) |"
  )
}
if options.check { print("check: every TypedStore result matched the raw one") }

if let path = options.json {
  var rows: [[String: Any]] = []
  for result in results {
    var row: [String: Any] = ["name": result.name]
    row["raw_ms"] = result.rawMilliseconds ?? NSNull()
    row["typedstore_ms"] = result.typedStoreMilliseconds ?? NSNull()
    row["ratio"] = result.ratio ?? NSNull()
    row["goal"] = result.goal ?? NSNull()
    if let note = result.note { row["note"] = note }
    rows.append(row)
  }
  let data = try JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
  try data.write(to: URL(fileURLWithPath: path))
}
