import Foundation
import Synchronization
import TypedStore

/// One process of the benchmark: its options, its working directory
/// (`typedstore-bench-<pid>` in the temporary directory, removed when the process ends, its
/// helper processes' included), the model every store uses, and the rows measured so far.
/// The harness (`Bench+Harness.swift`) times; each row family adds its rows in
/// `Rows/`; the processes the benchmark runs this program as are in `Roles/`.
@MainActor final class Bench {
  let options: BenchOptions
  let directory: URL
  let model: ManagedObjectModel
  /// The rows measured, in the order the report lists them.
  var rows: [ReportRow] = []
  /// Numbers the store files, so that no two stores of a run share one.
  private let fileCounter = Atomic<Int>(0)

  /// N: the rows each operation works on (`--n`, or a size of the growth rows).
  var n: Int { growthSize ?? options.n }
  /// The N of the growth rows while they run (`Rows/GrowthRows.swift`).
  var growthSize: Int?

  init(options: BenchOptions) throws {
    self.options = options
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-bench-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    model = try ManagedObjectModel(BenchItem.self, BenchRecord.self, BenchIndexedItem.self, BenchObservedItem.self)
  }

  /// Runs the process `role` asks for; returns its exit status. Every process removes its
  /// working directory before it exits, whether it succeeded or not.
  static func main(_ role: BenchRole) async -> Int32 {
    var options = BenchOptions()
    if case .benchmark(let given) = role { options = given }
    var bench: Bench?
    do {
      bench = try Bench(options: options)
      try await bench?.run(role)
      bench?.removeDirectory()
      return 0
    } catch {
      FileHandle.standardError.write(Data("typedstore-bench: \(error)\n".utf8))
      bench?.removeDirectory()
      return 1
    }
  }

  private func run(_ role: BenchRole) async throws {
    switch role {
    case .benchmark: try await measureAndReport()
    case .importMemory(let n): try importMemoryProbe(n: n)
    case .exportMemory(let store): try exportMemoryProbe(store: store)
    case .batchMemory(let store): try batchMemoryProbe(store: store)
    case .stageMemory(let store): try stageMemoryProbe(store: store)
    case .writer(let store, let raw, let commits, let objects, let go):
      try writer(store: store, raw: raw, commits: commits, objects: objects, go: go)
    case .latencyWriter(let store, let commits): try latencyWriter(store: store, commits: commits)
    case .follower(let store, let consumer, let stop): try await follower(store: store, consumer: consumer, stop: stop)
    case .mixed(let store, let raw, let reads, let go, let milliseconds):
      try mixed(store: store, raw: raw, reads: reads, go: go, milliseconds: milliseconds)
    case .postgreSQLWriter(let url, let schema, let side, let commits, let objects, let go):
      try postgreSQLWriter(url: url, schema: schema, side: side, commits: commits, objects: objects, go: go)
    }
  }

  /// Every row, in the report's order, then the report.
  private func measureAndReport() async throws {
    try await insertRows()
    try await fetchRows()
    try await predicateRows()
    try await graphRows()
    try await changeRows()
    try await historyRows()
    try historyDeletionRow()
    try importMemoryRow()
    try exportMemoryRow()
    try await writerRows()
    try await readersRow()
    try await consumersThroughputRows()
    try await catchUpRow()
    try frcDiffRow()
    try mergeLatencyRow()
    try idleFollowerRow()
    try batchedFetchMemoryRow()
    try await migrationRows()
    try stageMemoryRow()
    try await growthRows()
    try await postgreSQLRows()
    let report = Report(n: n, runs: options.runs, sqliteVersion: sqliteVersion(), rows: rows, checked: options.check)
    print(report.table)
    if let path = options.json { try report.json().write(to: URL(fileURLWithPath: path)) }
  }

  private func removeDirectory() {
    try? FileManager.default.removeItem(at: directory)
  }

  /// A new file name for every store: a store of an earlier run may still be open while its
  /// contexts wind down, and must never share a file (or its -shm) with a new one.
  func uniqueName(_ name: String) -> String {
    "\(name)-\(fileCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
  }
}
