import CSQLite
import Foundation
import TypedStore

// The processes of the writer rows (`Rows/WriterRows.swift`).

extension Bench {
  /// A writer process: opens the store (or raw database), prints "ready", waits for the file
  /// `go`, commits `commits` transactions of `objects` new objects each, and prints the
  /// monotonic time of its last commit and the p99 of its commits' times, in nanoseconds.
  func writer(store path: String, raw: Bool, commits: Int, objects: Int, go: String) throws {
    let commit: (Int) throws -> Void
    if raw {
      let database = try RawDatabase(existing: path)
      sqlite3_busy_timeout(database.handle, 60_000)
      try database.execute("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;")
      let statement = try database.prepare(
        "INSERT INTO raw (number, name, category, score, created) VALUES (?, ?, ?, ?, ?)")
      commit = { first in
        try database.execute("BEGIN IMMEDIATE")
        for index in first..<first + objects { try database.insert(BenchRow(index), with: statement) }
        try database.execute("COMMIT")
      }
    } else {
      var options = StoreOptions()
      options.busyTimeout = .seconds(60)
      let container = try PersistentContainer(
        name: "writer", model: model, storeURL: URL(fileURLWithPath: path), options: options)
      let context = container.newBackgroundContext()
      commit = { first in
        try context.performAndWait { context in
          for index in first..<first + objects { fill(BenchItem(context: context), BenchRow(index)) }
          try context.save()
        }
      }
    }
    FileHandle.standardOutput.write(Data("ready\n".utf8))  // unbuffered: the parent waits for it
    while !FileManager.default.fileExists(atPath: go) { usleep(100) }
    var durations: [UInt64] = []
    durations.reserveCapacity(commits)
    for transaction in 0..<commits {
      let start = monotonicNanoseconds()
      try commit(transaction * objects)
      durations.append(monotonicNanoseconds() - start)
    }
    let end = monotonicNanoseconds()
    durations.sort()
    // The time of the last commit, then the p99 of one commit's time (its wait for the write
    // lock included), in nanoseconds.
    print(end, durations.isEmpty ? 0 : durations[min(durations.count - 1, durations.count * 99 / 100)])
  }
}
