import ArgumentParsing
import Foundation
import Synchronization
import TypedStore

/// `typedstore demo-merger`: the demo's merging process. A `HistoryMerger` merges every
/// writer's commits into a context, noting each transaction's latency, until the demo says
/// on stdin that the writers are done ("stop <newest transaction>"); it then compares its
/// live objects with a fresh read of the store and prints a `MergerReport`.
enum DemoMerger {
  private struct Seen {
    var latencies: [Double] = []
    var inserted = 0
    var updated = 0
    var deleted = 0
  }

  static func run(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let container = try DemoStore.container(path)
    let context = container.newBackgroundContext()
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try perform("cannot start the merger") {
      try HistoryMerger(container: container, consumer: "demo-merger", contexts: [context], options: options)
    }
    let seen = Mutex(Seen())
    merger.addHook { event in
      let latency = Date().timeIntervalSince(event.transaction.timestamp) * 1000
      seen.withLock {
        $0.latencies.append(latency)
        $0.inserted += event.inserted(Note.self).count + event.inserted(Folder.self).count
        $0.updated += event.updated(Note.self).count
        $0.deleted += event.deleted(Note.self).count
      }
    }
    do { try await merger.start() } catch { throw .failed("cannot start the merger: \(error)") }
    print("ready")
    fflush(nil)

    // The parent says when the writers are done: "stop <newest transaction>".
    let target = await onThread { readLine() }.flatMap { Int64($0.split(separator: " ").last ?? "") } ?? 0
    let deadline = Date().addingTimeInterval(30)
    while merger.checkpoint.transactionNumber < target && merger.error == nil && Date() < deadline {
      try? await Task.sleep(for: .milliseconds(2))
    }
    await merger.stop()
    if let error = merger.error { throw .failed("the merger stopped: \(error)") }

    let (objects, matches) = try compare(context, with: container)
    let report = seen.withLock { $0 }
    let sorted = report.latencies.sorted()
    func percentile(_ p: Double) -> Double {
      sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
    let merged = MergerReport(
      pid: getpid(), transactions: sorted.count, inserted: report.inserted, updated: report.updated,
      deleted: report.deleted, p50: percentile(0.5), p99: percentile(0.99), liveObjects: objects,
      matchesStore: matches, checkpoint: merger.checkpoint.transactionNumber)
    print(try DemoReport.line(merged))
  }

  /// The merger's objects (merged as the writers committed) against a fresh read of the rows:
  /// each note's values and folder, and each folder's notes, both sides of the relationship.
  /// Returns the merged notes' count and whether the two agree.
  private static func compare(
    _ context: ManagedObjectContext, with container: PersistentContainer
  ) throws(Failure) -> (Int, Bool) {
    try perform("cannot compare with the store") {
      try context.performAndWait { context in
        func values(_ notes: [Note]) -> [ManagedID<Note>: String] {
          Dictionary(
            uniqueKeysWithValues: notes.map {
              ($0.managedID, "\($0.title)|\($0.done)|\($0.revision)|\($0.folder?.name ?? "-")")
            })
        }
        func contents(_ folders: [Folder]) -> [String: Set<ManagedID<Note>>] {
          Dictionary(uniqueKeysWithValues: folders.map { ($0.name, Set($0.notes.map(\.managedID))) })
        }
        let merged = try context.fetch(FetchRequest<Note>())
        let mergedFolders = try context.fetch(FetchRequest<Folder>())
        let fresh = ModelContext(store: container.persistentStore)
        let rows = try fresh.fetch(FetchRequest<Note>())
        let storedFolders = try fresh.fetch(FetchRequest<Folder>())
        return (
          merged.count,
          withExtendedLifetime(fresh) {
            values(merged) == values(rows) && contents(mergedFolders) == contents(storedFolders)
          }
        )
      }
    }
  }
}
