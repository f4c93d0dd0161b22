import Foundation
import TypedStore

// Writers that scale: W writer processes, started together after opening (a barrier file),
// each committing its share of the row's transactions of 1 or 100 new objects, timed from the
// barrier to the last commit. The raw side's processes run `BEGIN IMMEDIATE`, the inserts and
// `COMMIT` with the C API and SQLite's own busy handler; TypedStore's save through a context,
// history recorded. Same rows, same number of processes, same total commits: the time ratio is
// the inverse of the commits-per-second ratio (a ratio of 2.0 is 0.5× raw's commits a second).

extension Bench {
  func writerRows() async throws {
    for objects in [1, 100] {
      var oneWriter: Double?
      for writers in [1, 4, 16] {
        let commits = objects == 1 ? (n >= 100_000 ? 4000 : 160) : (n >= 100_000 ? 400 : 32)
        let name =
          "\(commits) commits of \(objects) new object\(objects == 1 ? "" : "s") from \(writers) writer "
          + "process\(writers == 1 ? "" : "es") (history on)"
        guard selected(name) else { continue }
        var p99 = (raw: 0.0, typed: 0.0)
        try await run(name, goal: objects == 1 ? 2.0 : 1.25) {
          let (ms, commitP99) = try writersRun(raw: true, writers: writers, commits: commits, objects: objects)
          p99.raw = commitP99
          return ms
        } typed: {
          let (ms, commitP99) = try writersRun(raw: false, writers: writers, commits: commits, objects: objects)
          p99.typed = commitP99
          return ms
        }
        guard let row = rows.last, row.name == name, let typed = row.typedStoreMilliseconds else { continue }
        if writers == 1 { oneWriter = typed }
        // One commit's time, its wait for the write lock included (the last run's p99 over all
        // writers), and with 16 writers the commits a second against its own with one.
        var note = String(format: "p99 commit %.2f ms (raw %.2f ms)", p99.typed, p99.raw)
        if writers == 16, let oneWriter {
          note += String(format: "; %.2f of its own 1-writer rate (goal ≥ 0.9)", oneWriter / typed)
        }
        rows[rows.count - 1].note = note
      }
    }
  }

  /// Starts `writers` processes on a fresh store (or raw database), lets them all open, then
  /// starts them together; returns the milliseconds from the start to the last commit, and
  /// the largest of the writers' p99 commit times in milliseconds.
  private func writersRun(raw: Bool, writers: Int, commits: Int, objects: Int) throws -> (Double, Double) {
    // Made and closed here: an open container in this process would follow the writers' commits.
    let path = directory.appendingPathComponent("\(uniqueName("writers"))\(raw ? "-raw" : "").sqlite").path
    if raw {
      try RawDatabase(path: path).execute(RawDatabase.createSQL)
    } else {
      _ = try PersistentStore(url: URL(fileURLWithPath: path), model: model)
    }
    let go = directory.appendingPathComponent(uniqueName("go")).path
    let share = commits / writers
    let outputs = (0..<writers).map { _ in Pipe() }
    let processes = try outputs.map { output in
      try ChildProcess.start(
        ["writer", path, raw ? "raw" : "typed", String(share), String(objects), go], output: output)
    }
    for output in outputs {
      guard let line = ChildProcess.readLine(output), line == "ready" else {
        throw BenchError.sqlite("a writer did not open the store")
      }
    }
    let start = monotonicNanoseconds()
    _ = FileManager.default.createFile(atPath: go, contents: nil)
    var last: UInt64 = start
    var p99: UInt64 = 0
    for (process, output) in zip(processes, outputs) {
      let line = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      let fields = line.split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
      guard process.terminationStatus == 0, fields.count == 2 else {
        throw BenchError.sqlite("a writer failed: \(line)")
      }
      last = max(last, fields[0])
      p99 = max(p99, fields[1])
    }
    let count = try RawDatabase(existing: path).numbers("SELECT count(*) FROM \(raw ? "raw" : "BenchItem")")[0]
    try verify("writers: rows", Int(count), share * writers * objects)
    return (Double(last - start) / 1_000_000, Double(p99) / 1_000_000)
  }
}
