import Foundation
import TypedStore

// Reading history, against the raw C API reading the same tables into Swift values: N
// changes in one transaction, one large delete that keeps a tombstone per row, N one-row
// saves, and the per-change cost of a read 100 times larger. Deleting history is measured on
// its own, as an absolute time.

extension Bench {
  func historyRows() async throws {
    try await historyChangesRow()
    // History reads cost the same per change whatever the shape of the history.
    try await tombstonedHistoryRow()
    try await singleRowSavesHistoryRow()
    try await perChangeCostRow()
  }

  func historyChangesRow() async throws {
    let n = self.n
    guard selected("fetch history of \(n) changes") else { return }
    do {
      let container = try freshContainer("history")
      try seed(container, rows: n)
      let raw = try RawDatabase(existing: container.persistentStore.url.path)
      try await run("fetch history of \(n) changes", goal: 2.0) {
        try time { try verify("history raw", try raw.readHistory(after: 0).changes, n) }
      } typed: {
        try time { try verify("history", try countHistory(container, after: nil).changes, n) }
      }
    }
  }

  private func tombstonedHistoryRow() async throws {
    let n = self.n
    let name = "fetch history of one delete of \(n) rows with tombstones"
    guard selected(name) else { return }
    let (container, token) = try tombstonedDelete(n)
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    try await run(name, goal: 2.0) {
      try time { try verify("tombstones raw", try raw.readHistory(after: token.transactionNumber).tombstones, n) }
    } typed: {
      try time { try verify("tombstones", try countHistory(container, after: token).tombstones, n) }
    }
  }

  private func singleRowSavesHistoryRow() async throws {
    let n = self.n
    let name = "fetch history of \(n) single-row saves"
    guard selected(name) else { return }
    let container = try freshContainer("small-saves")
    let start = try container.currentHistoryToken
    try container.newBackgroundContext().performAndWait { context in
      for index in 0..<n {
        fill(BenchItem(context: context), BenchRow(index))
        try context.save()
      }
    }
    try container.persistentStore.checkpoint()
    let raw = try RawDatabase(existing: container.persistentStore.url.path)
    try await run(name, goal: 2.0) {
      try time { try verify("saves raw", try raw.readHistory(after: start.transactionNumber).changes, n) }
    } typed: {
      try time { try verify("saves", try countHistory(container, after: start).changes, n) }
    }
  }

  private func perChangeCostRow() async throws {
    let small = max(100, n / 10)
    let large = small * 100
    let name =
      "fetch history, per-change cost at \(large) vs \(small) tombstoned changes (raw column: the smaller × 100)"
    guard selected(name) else { return }
    let (smallStore, smallToken) = try tombstonedDelete(small)
    let (largeStore, largeToken) = try tombstonedDelete(large)
    // The raw column is the small read's time times 100: what the large read costs at the
    // small read's cost per change. The ratio is how much that cost grew.
    try await run(name, goal: 1.5) {
      try time { try verify("small", try countHistory(smallStore, after: smallToken).tombstones, small) } * 100
    } typed: {
      try time { try verify("large", try countHistory(largeStore, after: largeToken).tombstones, large) }
    }
  }

  /// History deletion, on its own: no raw baseline, an absolute time. The history is N changes
  /// in N/100 transactions of 100 updated rows each, every change with its own attribute list,
  /// as many small saves would leave it.
  func historyDeletionRow() throws {
    // The row's name counts the changes it deletes, known only once they are made: `--only`
    // selects it by any part of the name before the numbers, or of the unnumbered name.
    guard
      options.only.map({
        "delete history of changes in transactions (absolute)".localizedCaseInsensitiveContains($0)
          || $0.lowercased().hasPrefix("delete history of")
      }) ?? true
    else { return }
    let container = try freshContainer("history-delete")
    try seed(container, rows: 100)
    let start = try container.currentHistoryToken
    let context = container.newBackgroundContext()
    let transactions = max(1, n / 100)
    try context.performAndWait { context in
      let items = try context.fetch(FetchRequest<BenchItem>())
      for round in 0..<transactions {
        for item in items { item.score = Double(round) }
        try context.save()
      }
    }
    let end = try container.currentHistoryToken
    let deleted = try container.fetchHistory(HistoryRequest(after: start)).reduce(0) { $0 + $1.changes.count }
    let ms = try time {
      try container.deleteHistory(
        before: HistoryToken(storeIdentifier: end.storeIdentifier, transactionNumber: end.transactionNumber + 1))
    }
    try verify("delete history", try container.fetchHistory(HistoryRequest(after: end)).count, 0)
    rows.append(
      ReportRow(
        name: "delete history of \(deleted) changes in \(transactions) transactions (absolute)",
        typedStoreMilliseconds: ms, note: "one transaction"))
  }

  /// Reads the history after `token` (all of it for nil) through the API, and counts its
  /// changes and tombstones.
  func countHistory(_ container: PersistentContainer, after token: HistoryToken?) throws -> (
    changes: Int, tombstones: Int
  ) {
    let history = try container.fetchHistory(token.map { HistoryRequest(after: $0) } ?? HistoryRequest())
    var changes = 0
    var tombstones = 0
    for transaction in history {
      changes += transaction.changes.count
      for change in transaction.changes where change.tombstone != nil { tombstones += 1 }
    }
    return (changes, tombstones)
  }

  /// A fresh store in which `rows` records were inserted and then deleted by one batch delete
  /// that kept a tombstone per row (setup, not timed); returns it and the token before the
  /// delete.
  private func tombstonedDelete(_ rows: Int) throws -> (PersistentContainer, HistoryToken) {
    let container = try freshContainer("tombstones")
    let context = container.newBackgroundContext()
    _ = try context.performAndWait { context in
      try context.execute(BatchInsertRequest<BenchRecord>(count: rows) { index, record in record.name = "r\(index)" })
    }
    let token = try container.currentHistoryToken
    _ = try context.performAndWait { context in try context.execute(BatchDeleteRequest<BenchRecord>()) }
    try container.persistentStore.checkpoint()
    return (container, token)
  }
}
