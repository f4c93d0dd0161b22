import Foundation
import Spawning
import Testing

/// Runs the benchmark executable in smoke mode (N = 1,000, one run, `--check`, the PostgreSQL
/// rows against the tests' server) to keep it compiling and correct: it compares each
/// TypedStore result with the raw SQLite (or libpq) one and fails on a difference. No timing is asserted here; the benchmark itself measures.
@Suite struct BenchmarkSmokeTests {
  private var benchURL: URL { builtProduct("typedstore-bench") }

  /// The working directories of benchmark processes (`typedstore-bench-<pid>`), which each
  /// removes when it ends, its helper processes included.
  private func benchDirectories() throws -> Set<String> {
    Set(
      try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path).filter {
        $0.hasPrefix("typedstore-bench-") && Int($0.dropFirst("typedstore-bench-".count)) != nil
      })
  }

  @Test func benchmarkSmokeRunMatchesRawSQLite() throws {
    let before = try benchDirectories()
    let process = POSIXProcess()
    process.executableURL = benchURL
    let json = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-bench-smoke.json")
    process.arguments = [
      "--n", "1000", "--runs", "1", "--check", "--json", json.path, "--postgresql",
      try PostgreSQLTestServer.server().url,
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    #expect(process.terminationStatus == 0, "\(text)")
    #expect(text.contains("check: every TypedStore result matched the raw one"))
    let rows = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [[String: Any]] ?? []
    #expect(rows.count >= 10)
    #expect(rows.allSatisfy { $0["name"] is String && $0["goal"] != nil && $0["ratio"] != nil })
    let measured = rows.filter { $0["ratio"] is Double }
    #expect(measured.count >= 8)
    // The PostgreSQL rows ran against the tests' server, their results checked too: two saves,
    // six writer rows (history on and off), and the latency row (its stages are indented).
    let postgreSQL = rows.filter { ($0["name"] as? String)?.hasPrefix("PostgreSQL: ") ?? false }
    #expect(postgreSQL.count == 9, "\(text)")
    #expect(postgreSQL.contains { ($0["name"] as? String)?.contains("merged into a context in process B") ?? false })
    // The run and its helper processes (the followers and writers of the sync rows) leave no
    // directory behind.
    #expect(try benchDirectories().subtracting(before).isEmpty)
  }
}
