import Foundation

// What the demo's processes report to it when they end: one line of JSON on their standard
// output, typed on both sides.

/// What a writer process did.
struct WriterReport: Codable, Sendable {
  var pid: Int32
  /// Transactions committed: saves and batch requests.
  var commits: Int
  var inserted: Int
  var updated: Int
  var deleted: Int
}

/// What the merging process saw, and whether its live objects ended equal to the store.
struct MergerReport: Codable, Sendable {
  var pid: Int32
  /// Transactions merged.
  var transactions: Int
  var inserted: Int
  var updated: Int
  var deleted: Int
  /// Median and 99th percentile of commit-to-merge latency, in milliseconds.
  var p50: Double
  var p99: Double
  /// The notes the merger's context holds at the end.
  var liveObjects: Int
  /// Whether its notes (values, folder) and folders (notes) equal a fresh read of the store.
  var matchesStore: Bool
  /// The transaction number of its checkpoint.
  var checkpoint: Int64
}

enum DemoReport {
  /// The report as the one line a process prints.
  static func line(_ report: some Encodable) throws(Failure) -> String {
    do {
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys
      return String(decoding: try encoder.encode(report), as: UTF8.self)
    } catch {
      throw .failed("cannot write the report: \(error)")
    }
  }

  /// The report a process printed; `process` names it in the error.
  static func decode<Report: Decodable>(_ type: Report.Type, from output: String, process: String) throws(Failure)
    -> Report
  {
    do {
      return try JSONDecoder().decode(type, from: Data(output.utf8))
    } catch {
      throw .failed("\(process) printed no report: \(output.isEmpty ? "nothing" : output)")
    }
  }
}
