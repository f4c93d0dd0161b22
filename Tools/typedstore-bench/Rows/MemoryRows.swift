import Foundation
import TypedStore

// Memory: an import loop, a streaming history export and a batched fetch, each measured in a
// process of its own (a probe, `Roles/MemoryProbes.swift`), since memory this one freed
// earlier would hide growth. Absolute rows: the growth, against a goal in the note.

extension Bench {
  func importMemoryRow() throws {
    let name = "insert \(n * 10) objects in saves of \(max(1, n / 10)): peak RSS growth after the first save (absolute)"
    guard selected(name) else { return }
    let output = try ChildProcess.output(of: ["import-memory", String(n)])
    guard let growth = Double(output) else { throw BenchError.sqlite("the import memory probe printed \(output)") }
    rows.append(ReportRow(name: name, note: String(format: "%.1f MiB (goal ≤ 64 MiB)", growth)))
  }

  /// Exporting history streams: 10 N changes exported with the resident memory sampled.
  func exportMemoryRow() throws {
    let name = "export \(n * 10) changes as NDJSON: peak RSS growth during the export (absolute)"
    guard selected(name) else { return }
    let rowCount = n * 10
    let batch = max(1, rowCount / 100)
    let container = try freshContainer("export")
    try container.newBackgroundContext().performAndWait { context in
      for start in stride(from: 0, to: rowCount, by: batch) {
        _ = try context.execute(
          BatchInsertRequest<BenchItem>(count: min(batch, rowCount - start)) { index, item in
            fill(item, BenchRow(start + index))
          })
      }
    }
    try container.persistentStore.checkpoint()
    let output = try ChildProcess.output(of: ["export-memory", container.persistentStore.url.path])
    let fields = output.split(separator: " ").map(String.init)
    guard fields.count == 2, let growth = Double(fields[0]), let bytes = Double(fields[1])
    else { throw BenchError.sqlite("the export memory probe printed \(output)") }
    rows.append(
      ReportRow(
        name: name, note: String(format: "%.1f MiB for %.0f MiB of NDJSON (goal: constant)", growth, bytes / 1_048_576)
      ))
  }

  func batchedFetchMemoryRow() throws {
    let name = "iterate \(n * 10) objects with fetch(_:batchSize: 1000): peak RSS growth (absolute)"
    guard selected(name) else { return }
    let container = try freshContainer("batched")
    try seed(container, rows: n * 10)
    let output = try ChildProcess.output(of: ["batch-memory", container.persistentStore.url.path])
    guard let growth = Double(output) else { throw BenchError.sqlite("the batched-fetch probe printed \(output)") }
    rows.append(ReportRow(name: name, note: String(format: "%.1f MiB (goal ≤ 64 MiB)", growth)))
  }
}
