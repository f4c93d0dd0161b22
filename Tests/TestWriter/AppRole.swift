import Foundation
import Synchronization
import TypedStore

/// `typedstore-test-writer app <store> <name> <log> [<prune after n merges>]`: the app of an
/// app-and-extension pair, written as a PersistentHistoryTrackingKit user ports one: a
/// `HistoryMerger` with the default options (a new consumer starts at the beginning), a
/// context holding every event, a hook that ends the pipeline for the author "ignored"
/// (`finish()`, logged "fin <number>") put before the logging hook ("tx <number>"), and, when
/// given, pruning of what every consumer read after every n merges. "start <pid> <checkpoint>"
/// comes first in the log. When `<log>.stop` exists it catches up with the store, stops,
/// checks its live objects against the store's rows and prints "verified <n>" (or
/// "mismatch …"); "error: <error>" and exit 3 when the merger cannot start.
func runApp(path: String, name: String, logPath: String, pruneAfter: Int?) {
  let append = appender(logPath)
  do {
    let container = try openContainer(path)
    let live = container.newBackgroundContext()
    _ = try live.performAndWait { context in try context.fetch(FetchRequest<Event>()).count }
    var options = HistoryMerger.Options()
    options.checkpointInterval = .milliseconds(20)
    if let pruneAfter { options.pruning = HistoryMerger.Pruning(.consumed, .afterMerges(pruneAfter)) }
    let merger = try HistoryMerger(container: container, consumer: name, contexts: [live], options: options)
    let started = Mutex(false)
    let logging = merger.addHook { [merger] event in
      if started.withLock({ wasStarted in
        defer { wasStarted = true }
        return !wasStarted
      }) {
        append("start \(getpid()) \(merger.checkpoint.transactionNumber)")
      }
      append("tx \(event.transaction.transactionNumber)")
    }
    try merger.addHook(before: logging) { [merger] event in
      guard event.transaction.author == "ignored" else { return }
      if started.withLock({ wasStarted in
        defer { wasStarted = true }
        return !wasStarted
      }) {
        append("start \(getpid()) \(merger.checkpoint.transactionNumber)")
      }
      append("fin \(event.transaction.transactionNumber)")
      event.finish()
    }
    waitForTask {
      do {
        try await follow(merger, in: container, until: logPath + ".stop")
      } catch {
        say("error: \(error)")
        exit(3)
      }
      say(try verify(live, against: container))
    }
  } catch {
    say("error: \(error)")
    exit(3)
  }
}

/// "verified <n>" when the context's live events equal the store's rows, "mismatch …" if not.
/// Events of the author "ignored" are not merged (their transactions are finished before the
/// merge), so they are left out.
private func verify(_ live: ManagedObjectContext, against container: PersistentContainer) throws -> String {
  let rows = try container.newBackgroundContext().performAndWait { reader in
    Dictionary(
      uniqueKeysWithValues: try reader.fetch(FetchRequest<Event>()).map {
        ($0.managedID.primaryKey ?? -1, "\($0.source) \($0.sequence)")
      })
  }
  return live.performAndWait { context in
    var mismatches: [String] = []
    var checked = 0
    for case let event as Event in context.registeredObjects
    where !event.isFault && !event.isDeleted && event.source != "ignored" {
      checked += 1
      let key = event.managedID.primaryKey ?? -1
      if rows[key] != "\(event.source) \(event.sequence)" {
        mismatches.append("p\(key): live \(event.source) \(event.sequence), store \(rows[key] ?? "gone")")
      }
    }
    return mismatches.isEmpty ? "verified \(checked)" : "mismatch \(mismatches.prefix(5))"
  }
}
