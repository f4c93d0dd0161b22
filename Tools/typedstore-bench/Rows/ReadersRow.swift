import Foundation
import TypedStore

// Readers while writers write: 16 reader processes fetch every row of a table of N / 100 rows
// (reading every attribute) while 4 writer processes save one new object at a time, all
// started together after opening (a barrier file), for one second (0.2 s below N = 100,000,
// the test suite's size). The raw side's processes
// do the same with the C API. Each side's figure is the second divided by the fetches all
// readers made (milliseconds per fetch), so the ratio is raw's reads a second over
// TypedStore's; the note gives both, and the saves.

extension Bench {
  func readersRow() async throws {
    let rowsRead = max(10, n / 100)
    let window = n >= 100_000 ? 1000 : 200
    let name =
      "16 reader processes fetching \(rowsRead) objects while 4 writer processes save, \(window) ms (history on)"
    guard selected(name) else { return }
    var counts = (raw: (reads: 0, saves: 0), typed: (reads: 0, saves: 0))
    try await run(name, goal: 2.0) {
      counts.raw = try mixedRun(raw: true, rows: rowsRead, milliseconds: window)
      return Double(window) / Double(max(1, counts.raw.reads))
    } typed: {
      counts.typed = try mixedRun(raw: false, rows: rowsRead, milliseconds: window)
      return Double(window) / Double(max(1, counts.typed.reads))
    }
    guard let row = rows.last, row.name == name else { return }
    let perSecond = 1000 / Double(window)
    rows[rows.count - 1].note = String(
      format: "reads a second: %.0f (raw %.0f); saves a second: %.0f (raw %.0f)",
      Double(counts.typed.reads) * perSecond, Double(counts.raw.reads) * perSecond,
      Double(counts.typed.saves) * perSecond, Double(counts.raw.saves) * perSecond)
  }

  /// `milliseconds` of 16 readers and 4 writers on a fresh store (or raw database) of `rows`
  /// rows; returns the fetches and saves made.
  private func mixedRun(raw: Bool, rows: Int, milliseconds: Int) throws -> (reads: Int, saves: Int) {
    let path = directory.appendingPathComponent("\(uniqueName("mixed"))\(raw ? "-raw" : "").sqlite").path
    if raw {
      let database = try RawDatabase(path: path)
      try database.execute(RawDatabase.createSQL)
      try database.insert(rows)
      try database.checkpoint()
    } else {
      let container = try PersistentContainer(name: "mixed", model: model, storeURL: URL(fileURLWithPath: path))
      try seed(container, rows: rows)
    }
    let go = directory.appendingPathComponent(uniqueName("go")).path
    let kinds = Array(repeating: "read", count: 16) + Array(repeating: "write", count: 4)
    let outputs = kinds.map { _ in Pipe() }
    let processes = try zip(kinds, outputs).map { kind, output in
      try ChildProcess.start(["mixed", path, raw ? "raw" : "typed", kind, go, String(milliseconds)], output: output)
    }
    for output in outputs {
      guard ChildProcess.readLine(output) == "ready" else { throw BenchError.sqlite("a process did not open") }
    }
    _ = FileManager.default.createFile(atPath: go, contents: nil)
    var counts = (reads: 0, saves: 0)
    for (kind, (process, output)) in zip(kinds, zip(processes, outputs)) {
      let line = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      guard process.terminationStatus == 0, let count = Int(line.trimmingCharacters(in: .whitespacesAndNewlines))
      else { throw BenchError.sqlite("a \(kind) process failed: \(line)") }
      if kind == "read" { counts.reads += count } else { counts.saves += count }
    }
    return counts
  }
}
