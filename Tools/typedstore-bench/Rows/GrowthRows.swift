import Foundation
import TypedStore

// Growth with size: the insert (history on), fetch and history rows again at N / 10 and
// N × 10 in one table, so that a ratio that grows with N shows (at N = 100,000: 10,000 and
// 1,000,000 beside the main table's 100,000).

extension Bench {
  func growthRows() async throws {
    let base = options.n
    for size in [base / 10, base * 10] where size >= 10 {
      growthSize = size
      defer { growthSize = nil }
      try await insertRow(history: true)
      try await fetchRows(observed: false)
      try await historyChangesRow()
    }
  }
}
