import Foundation
import TypedStore

// The processes of the sync rows (`Rows/SyncRows.swift`): the latency row's writer and the
// throughput row's consumers.

extension Bench {
  /// Process A of the latency row: one object per transaction, 1 ms apart, each commit's
  /// return time printed for process B to compare with the time it merged it.
  func latencyWriter(store path: String, commits: Int) throws {
    // A store file's path, or a PostgreSQL store's URL (the PostgreSQL latency row).
    let url = path.hasPrefix("postgresql:") ? URL(string: path) : URL(fileURLWithPath: path)
    guard let url else { throw BenchError.mismatch("not a store URL: \(path)") }
    let container = try PersistentContainer(name: "latency", model: model, storeURL: url)
    let context = container.newBackgroundContext()
    var lines: [String] = []
    for index in 0..<commits {
      let key = try context.performAndWait { context in
        let item = BenchItem(context: context)
        fill(item, BenchRow(index))
        try context.save()
        return item.managedID.primaryKey ?? -1
      }
      lines.append("\(key) \(monotonicNanoseconds())")
      usleep(1000)
    }
    print(lines.joined(separator: "\n"))
  }

  /// A consumer process of the throughput row: follows the store with live objects until the
  /// file `stop` exists.
  func follower(store path: String, consumer name: String, stop: String) async throws {
    let container = try PersistentContainer(name: "follow", model: model, storeURL: URL(fileURLWithPath: path))
    let context = container.newBackgroundContext()
    _ = try context.performAndWait { context in try context.count(for: FetchRequest<BenchItem>()) }
    var options = HistoryMerger.Options()
    options.startsAt = .now  // follows what the writers commit from now on; the catch-up is not measured
    let merger = try HistoryMerger(container: container, consumer: name, contexts: [context], options: options)
    try await merger.start()
    print("following")
    while !FileManager.default.fileExists(atPath: stop) { usleep(20_000) }
    await merger.stop()
  }
}
