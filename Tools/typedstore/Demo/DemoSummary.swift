import Foundation
import TypedStore

/// What the demo prints at the end: a table of what each process saw, whether the merger's
/// live objects equal the store, the store's history, and commands to try on the store that
/// run as printed, where the demo was started (no `typedstore` need be on the PATH).
struct DemoSummary {
  var path: String
  var writers: [WriterReport]
  var merger: MergerReport
  /// The store's history: transactions and changes by entity and kind.
  var history: String
  /// The newest token's string representation.
  var newestToken: String

  /// The text, its commands starting with `tool` (``ToolInvocation/command``).
  func text(tool: String) -> String {
    var lines = [
      "TypedStore demo: \(path)", "",
      StoreCommands.table(table), "",
      "The merger's live objects: \(merger.liveObjects) notes, equal to the store's rows "
        + "(values, each note's folder, each folder's notes): " + (merger.matchesStore ? "yes" : "NO"),
      "History: \(history)",
      "Newest token: \(newestToken); consumer demo-merger is at "
        + "\(merger.checkpoint).",
      "",
      "Try, on this store:",
    ]
    lines += followUpCommands.map { "  \(tool) \($0)" }
    if !merger.matchesStore { lines.append("\nThe merger's objects differ from the store.") }
    return lines.joined(separator: "\n")
  }

  private var table: [[String]] {
    var rows = [["PROCESS", "PID", "COMMITS", "INSERTED", "UPDATED", "DELETED", "MERGED", "LATENCY P50", "P99"]]
    for (index, writer) in writers.enumerated() {
      rows.append([
        "writer-\(index + 1)", String(writer.pid), String(writer.commits), String(writer.inserted),
        String(writer.updated), String(writer.deleted), "—", "—", "—",
      ])
    }
    rows.append([
      "merger", String(merger.pid), "—", String(merger.inserted), String(merger.updated), String(merger.deleted),
      String(merger.transactions), String(format: "%.2f", merger.p50) + " ms",
      String(format: "%.2f", merger.p99) + " ms",
    ])
    return rows
  }

  /// The commands to try, after the tool's name.
  private var followUpCommands: [String] {
    let store = Values.shellQuoted(path)
    return [
      "history export --store \(store) --limit 3",
      "history export --store \(store) --gzip -o history.ndjson.gz",
      "history watch --store \(store)",
      "demo-writer --store \(store) --name writer-3 --seconds 2   # more commits, in another shell",
      "history stats --store \(store)",
      "history prune --store \(store) --consumed --dry-run",
      "history prune --store \(store) --consumed --archive archive.ndjson.gz",
      "consumers list --store \(store)",
      "inspect --store \(store)",
      "check --store \(store)",
    ]
  }
}
