import Foundation

/// One row of the report: an operation, its median times on each side (or only
/// TypedStore's, for an absolute row), its goal for the ratio, and a note where a row reports
/// something else (memory, percentiles). The JSON form (`--json`, docs/performance.json):
///
/// ```json
/// {"name": "...", "raw_ms": 100.3, "typedstore_ms": 161.0, "ratio": 1.6, "goal": 2.5}
/// ```
///
/// `raw_ms`, `typedstore_ms`, `ratio` and `goal` are `null` where they do not apply; `note`
/// is left out when there is none.
struct ReportRow: Codable, Sendable {
  var name: String
  var rawMilliseconds: Double?
  var typedStoreMilliseconds: Double?
  /// The ratio TypedStore / raw should stay under, if the row has one.
  var goal: Double?
  var note: String?

  init(
    name: String, rawMilliseconds: Double? = nil, typedStoreMilliseconds: Double? = nil, goal: Double? = nil,
    note: String? = nil
  ) {
    self.name = name
    self.rawMilliseconds = rawMilliseconds
    self.typedStoreMilliseconds = typedStoreMilliseconds
    self.goal = goal
    self.note = note
  }

  /// TypedStore's time over the raw time, for a row with both.
  var ratio: Double? {
    guard let raw = rawMilliseconds, let typed = typedStoreMilliseconds, raw > 0 else { return nil }
    return typed / raw
  }

  private enum CodingKeys: String, CodingKey {
    case name
    case rawMilliseconds = "raw_ms"
    case typedStoreMilliseconds = "typedstore_ms"
    case ratio, goal, note
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    name = try container.decode(String.self, forKey: .name)
    rawMilliseconds = try container.decodeIfPresent(Double.self, forKey: .rawMilliseconds)
    typedStoreMilliseconds = try container.decodeIfPresent(Double.self, forKey: .typedStoreMilliseconds)
    goal = try container.decodeIfPresent(Double.self, forKey: .goal)
    note = try container.decodeIfPresent(String.self, forKey: .note)
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(name, forKey: .name)
    // `encode` of an optional writes `null`: the JSON keeps every key but `note`.
    try container.encode(rawMilliseconds, forKey: .rawMilliseconds)
    try container.encode(typedStoreMilliseconds, forKey: .typedStoreMilliseconds)
    try container.encode(ratio, forKey: .ratio)
    try container.encode(goal, forKey: .goal)
    try container.encodeIfPresent(note, forKey: .note)
  }
}

/// A run's report: the Markdown table printed (docs/performance.md's form) and the JSON.
struct Report: Sendable {
  var n: Int
  var runs: Int
  var sqliteVersion: String
  var rows: [ReportRow]
  /// Whether `--check` compared every result (and all matched, or the run would have failed).
  var checked: Bool

  var table: String {
    var lines = [
      "typedstore-bench: N = \(n), median of \(runs) run(s) after a warm-up, SQLite \(sqliteVersion)",
      "| operation | raw ms | TypedStore ms | ratio | goal |",
      "|---|---:|---:|---:|---:|",
    ]
    for row in rows {
      let goal = row.goal.map { "≤ \(Self.format($0, digits: $0 * 10 == ($0 * 10).rounded() ? 1 : 2))" } ?? "—"
      let ratio =
        row.ratio.map { Self.format($0, digits: 2) + (row.note.map { " (\($0))" } ?? "") } ?? (row.note ?? "n/a")
      lines.append(
        "| \(row.name) | \(Self.format(row.rawMilliseconds)) | \(Self.format(row.typedStoreMilliseconds)) "
          + "| \(ratio) | \(goal) |")
    }
    if checked { lines.append("check: every TypedStore result matched the raw one") }
    return lines.joined(separator: "\n")
  }

  /// The rows as a JSON array, keys sorted, pretty-printed.
  func json() throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return try encoder.encode(rows)
  }

  private static func format(_ value: Double?, digits: Int = 1) -> String {
    value.map { String(format: "%.\(digits)f", $0) } ?? "n/a"
  }
}
