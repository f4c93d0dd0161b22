import Foundation
import TypedStore

// Fetching: every object with every attribute read (of a plain entity and of one that
// declares `Observable`), and a #Predicate selecting a tenth of the rows, without an index and
// with one, each against the raw C API reading the same columns.

extension Bench {
  /// The fetch rows; without `observed`, only the plain entity's.
  func fetchRows(observed: Bool = true) async throws {
    let fetchName = "fetch \(n) objects, every attribute read"
    let observedFetchName = "fetch \(n) objects of an Observable entity, every attribute read"
    guard selected(fetchName) || (observed && selected(observedFetchName)) else { return }
    let raw = try freshRaw("fetch", rows: n)
    let container = try freshContainer("fetch")
    try seed(container, rows: n)
    let expected = try raw.fetchAll()
    try await run(fetchName, goal: 1.5) {
      try time { try verify("fetch raw", try raw.fetchAll(), expected) }
    } typed: {
      let context = container.newBackgroundContext()
      _ = try context.performAndWait { context in try context.count(for: FetchRequest<BenchItem>()) }
      return try time {
        let checksum = try context.performAndWait { context in
          var checksum = Checksum()
          for item in try context.fetch(FetchRequest<BenchItem>()) {
            checksum.add(
              number: Int64(item.number), name: item.name, category: item.category, score: item.score,
              created: item.created.timeIntervalSinceReferenceDate)
          }
          return "\(checksum)"
        }
        try verify("fetch", checksum, "\(expected)")
      }
    }

    // The same with an entity that declares `Observable`: each object gets an observation
    // registrar when first read, and each read is reported to Observation: the cost of opting
    // in (issue 29's goal, 1.8).
    guard observed else { return }
    if selected(observedFetchName) { try seed(container, rows: n, of: BenchObservedItem.self) }
    try await run(observedFetchName, goal: 1.8) {
      try time { try verify("fetch raw", try raw.fetchAll(), expected) }
    } typed: {
      let context = container.newBackgroundContext()
      _ = try context.performAndWait { context in try context.count(for: FetchRequest<BenchObservedItem>()) }
      return try time {
        let checksum = try context.performAndWait { context in
          "\(itemChecksum(try context.fetch(FetchRequest<BenchObservedItem>())))"
        }
        try verify("observed fetch", checksum, "\(expected)")
      }
    }
  }

  /// A #Predicate selecting a tenth of the rows, against the raw C API running the same SQL
  /// and reading the same columns: on a column without an index (string equality, so through
  /// Swift's string comparison), and on an indexed integer range.
  func predicateRows() async throws {
    let noIndexName = "fetch with a #Predicate matching 10% of \(n), no index (string ==)"
    let indexedName = "fetch with a #Predicate matching 10% of \(n), indexed (integer range)"
    guard selected(noIndexName) || selected(indexedName) else { return }
    let raw = try freshRaw("predicate", rows: n)
    let container = try freshContainer("predicate")
    try seed(container, rows: n)
    let category = "category 3"
    let expected = try raw.fetchAll(where: " WHERE category = '\(category)' ORDER BY pk")
    try await run(noIndexName, goal: 2.0) {
      try time {
        try verify("predicate raw", try raw.fetchAll(where: " WHERE category = '\(category)' ORDER BY pk"), expected)
      }
    } typed: {
      let context = container.newBackgroundContext()
      let request = FetchRequest<BenchItem>(predicate: #Predicate { $0.category == category })
      _ = try context.performAndWait { context in try context.count(for: request) }
      return try time {
        let checksum = try context.performAndWait { context in "\(itemChecksum(try context.fetch(request)))" }
        try verify("predicate", checksum, "\(expected)")
      }
    }
    guard selected(indexedName) else { return }
    try await indexedPredicateRow(indexedName, raw: raw, container: container)
  }

  private func indexedPredicateRow(_ indexedName: String, raw: RawDatabase, container: PersistentContainer)
    async throws
  {
    try raw.execute("CREATE INDEX raw_number ON raw(number)")
    try seed(container, rows: n, of: BenchIndexedItem.self)
    let (low, high) = (n / 2, n / 2 + n / 10)
    // The same SQL as TypedStore's, which returns rows in primary key order.
    let range = " WHERE number >= \(low) AND number < \(high) ORDER BY pk"
    let expectedRange = try raw.fetchAll(where: range)
    try await run(indexedName, goal: 2.0) {
      try time { try verify("indexed raw", try raw.fetchAll(where: range), expectedRange) }
    } typed: {
      let context = container.newBackgroundContext()
      let request = FetchRequest<BenchIndexedItem>(predicate: #Predicate { $0.number >= low && $0.number < high })
      _ = try context.performAndWait { context in try context.count(for: request) }
      return try time {
        let checksum = try context.performAndWait { context in "\(itemChecksum(try context.fetch(request)))" }
        try verify("indexed", checksum, "\(expectedRange)")
      }
    }
  }
}
