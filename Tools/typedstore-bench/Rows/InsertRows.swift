import Foundation
import TypedStore

// Inserting N objects in one save, with history recorded and without, against the raw
// C API's prepared INSERT in one transaction.

extension Bench {
  func insertRows() async throws {
    for history in [true, false] { try await insertRow(history: history) }
  }

  func insertRow(history: Bool) async throws {
    let n = self.n
    try await run("insert \(n) objects, one save, history \(history ? "on" : "off")", goal: history ? 1.5 : 1.4) {
      var raw: RawDatabase?
      let ms = try time({ raw = try freshRaw("insert") }) { try raw?.insert(n) }
      try raw?.checkpoint()
      return ms
    } typed: {
      try insertObjects(history: history)
    }
  }

  private func insertObjects(history: Bool) throws -> Double {
    let n = self.n
    var container: PersistentContainer?
    let ms = try time(
      { container = try freshContainer("insert", history: history) },
      {
        try container?.newBackgroundContext().performAndWait { context in
          for index in 0..<n { fill(BenchItem(context: context), BenchRow(index)) }
          try context.save()
        }
      })
    try container?.persistentStore.checkpoint()  // not left to run during the next timing
    if let container {
      let raw = try freshRaw("insert-check", rows: n)
      try verify("insert", try storeChecksum(container), try rawChecksum(raw))
    }
    return ms
  }
}
