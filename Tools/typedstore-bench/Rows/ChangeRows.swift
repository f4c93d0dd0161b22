import Foundation
import TypedStore

// Changing and deleting N objects: through the context (one save), and by batch requests,
// history on, against the raw C API's per-row UPDATE and DELETE or one set-based statement.

extension Bench {
  func changeRows() async throws {
    try await contextChangeRows()
    try await batchChangeRows()
  }

  private func contextChangeRows() async throws {
    let n = self.n
    try await run("change one attribute of \(n) objects, one save, history on", goal: 1.5) {
      try timeRaw("update") { try $0.updateEachScore(n) }
    } typed: {
      let (ms, container) = try timeOnFetched("update") { context, items in
        for item in items { item.score = item.score + 1 }
        try context.save()
      }
      let raw = try freshRaw("update-check", rows: n)
      try raw.updateEachScore(n)
      try verify("update", try storeChecksum(container), try rawChecksum(raw))
      return ms
    }

    try await run("delete \(n) objects through the context, one save, history on", goal: 1.5) {
      try timeRaw("delete") { try $0.deleteEach(n) }
    } typed: {
      let (ms, container) = try timeOnFetched("delete") { context, items in
        for item in items { context.delete(item) }
        try context.save()
      }
      try verify("delete", try storeChecksum(container).first ?? -1, 0.0)
      return ms
    }
  }

  private func batchChangeRows() async throws {
    try await run("batch update of \(n) objects, history on", goal: 1.5) {
      try timeRaw("batch-update") { try $0.execute("UPDATE raw SET score = 1") }
    } typed: {
      let (ms, container) = try timeSeeded("batch-update") { context in
        _ = try context.execute(BatchUpdateRequest<BenchItem>(propertiesToUpdate: [.set(\.score, 1)]))
      }
      try verify("batch update", try storeChecksum(container)[3], Double(n))
      return ms
    }

    try await run("batch delete of \(n) objects, history on", goal: 1.5) {
      try timeRaw("batch-delete") { try $0.execute("DELETE FROM raw") }
    } typed: {
      let (ms, container) = try timeSeeded("batch-delete") { context in
        _ = try context.execute(BatchDeleteRequest<BenchItem>())
      }
      try verify("batch delete", try storeChecksum(container).first ?? -1, 0.0)
      return ms
    }
  }
}
