import Foundation
import TypedStore

// The memory probes, each a process of its own that prints its measurement (`MemoryRows`).

extension Bench {
  /// The import memory probe: 10 N objects inserted in saves of N / 10 by one context, as an
  /// import loop does; prints how far the resident memory grew past its peak during the first
  /// batch, in MiB.
  func importMemoryProbe(n probeN: Int) throws {
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
  }

  /// The export memory probe: opens a store the benchmark filled with history of 10 N changes
  /// in 100 transactions (so no memory freed by the filling hides growth), exports all of it
  /// as NDJSON to nowhere, and prints how far its resident memory grew during the export, in
  /// MiB, and the bytes written. Streaming keeps it flat whatever N.
  func exportMemoryProbe(store path: String) throws {
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
  }

  /// The batched-fetch memory probe: opens a store the benchmark filled (so no memory freed by
  /// the filling hides growth), reads every row through `fetch(_:batchSize: 1_000)` with every
  /// attribute touched, and prints how far its resident memory grew from just before the
  /// fetch, in MiB.
  func batchMemoryProbe(store path: String) throws {
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
  }
}
