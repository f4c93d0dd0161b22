import Foundation
import TypedStore

// The processes of the writer rows (`Rows/WriterRows.swift`).

extension Bench {
  /// The store of a writer process of the benchmark (the writer and readers rows), with a
  /// minute's busy timeout: many processes wait for one write lock.
  func processContainer(_ name: String, path: String) throws -> PersistentContainer {
    var options = StoreOptions()
    options.busyTimeout = .seconds(60)
    return try PersistentContainer(name: name, model: model, storeURL: URL(fileURLWithPath: path), options: options)
  }

  /// A writer process: opens the store (or raw database), prints "ready", waits for the file
  /// `go`, commits `commits` transactions of `objects` new objects each, and prints the
  /// monotonic time of its last commit and the p99 of its commits' times, in nanoseconds.
  func writer(store path: String, raw: Bool, commits: Int, objects: Int, go: String) throws {
    let commit: (Int) throws -> Void
    if raw {
      let (database, statement) = try RawDatabase.openForWriting(path)
      commit = { first in
        try database.execute("BEGIN IMMEDIATE")
        for index in first..<first + objects { try database.insert(BenchRow(index), with: statement) }
        try database.execute("COMMIT")
      }
    } else {
      let container = try processContainer("writer", path: path)
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
