import Foundation
import TypedStore

// The processes of the readers row (`Rows/ReadersRow.swift`).

extension Bench {
  /// A reader or a writer of the readers row: opens the store (or raw database), prints
  /// "ready", waits for the file `go`, then for `milliseconds` fetches every row and reads
  /// every attribute (`reads`), or saves one new object at a time; prints how many it made.
  func mixed(store path: String, raw: Bool, reads: Bool, go: String, milliseconds: Int) throws {
    let operation: (Int) throws -> Void
    if raw {
      let (database, insert) = try RawDatabase.openForWriting(path)
      operation = { index in
        guard !reads else {
          _ = try database.fetchAll()
          return
        }
        try database.execute("BEGIN IMMEDIATE")
        try database.insert(BenchRow(index), with: insert)
        try database.execute("COMMIT")
      }
    } else {
      let container = try processContainer("mixed", path: path)
      let context = container.newBackgroundContext()
      operation = { index in
        try context.performAndWait { context in
          if reads {
            _ = itemChecksum(try context.fetch(FetchRequest<BenchItem>()))
            context.reset()
          } else {
            fill(BenchItem(context: context), BenchRow(index))
            try context.save()
          }
        }
      }
    }
    FileHandle.standardOutput.write(Data("ready\n".utf8))  // unbuffered: the parent waits for it
    while !FileManager.default.fileExists(atPath: go) { usleep(100) }
    let end = monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
    var count = 0
    while monotonicNanoseconds() < end {
      try operation(count)
      count += 1
    }
    print(count)
  }
}
