import Foundation

/// How `exportHistory` writes transactions.
public enum HistoryExportFormat: String, Sendable, CaseIterable {
  /// One JSON object per line, one line per transaction (newline-delimited JSON).
  case ndjson
  /// One JSON array of the same objects, one per line.
  case json
}
