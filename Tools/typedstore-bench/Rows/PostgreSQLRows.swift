import Foundation
import TypedStore
import TypedStorePostgreSQL

// The PostgreSQL rows (`--postgresql URL`): the store's write path on PostgreSQL
// (`PostgreSQLStoreWriter`: the store's write lock taken first, rows, history, the counter and
// the notification) against raw libpq inserting the same rows, prepared, in one transaction
// each. Each side works in a schema of its own, made fresh for every run. Contexts do not run on
// PostgreSQL in the write rows: they measure the engine's write path, which a save's share on
// SQLite is too. The latency row runs contexts in two processes.

extension Bench {
  func postgreSQLRows() async throws {
    guard let url = options.postgreSQL else { return }
    let objects = n >= 100_000 ? 10_000 : n
    try await run("PostgreSQL: insert \(objects) objects, one save (history on)", goal: 1.5) {
      try postgreSQLRaw(url) { raw in
        try time { try raw.insertTransaction(first: 0, count: objects) }
      }
    } typed: {
      try postgreSQLStore(url) { writer in
        try time { try writer.insertTransaction(first: 0, count: objects, model: model) }
      }
    }
    let saves = n >= 100_000 ? 2000 : 100
    try await run("PostgreSQL: \(saves) saves of one new object (history on)", goal: 2.0) {
      try postgreSQLRaw(url) { raw in
        try time { for index in 0..<saves { try raw.insertTransaction(first: index, count: 1) } }
      }
    } typed: {
      try postgreSQLStore(url) { writer in
        try time { for index in 0..<saves { try writer.insertTransaction(first: index, count: 1, model: model) } }
      }
    }
    try await postgreSQLWriterRows(url)
    try postgreSQLMergeLatencyRow(url)
  }

  /// The latency row on PostgreSQL: process A saves through a container of the store's URL,
  /// process B (this one) merges each commit as its notification arrives (the server's
  /// `NOTIFY`, then the history read).
  private func postgreSQLMergeLatencyRow(_ url: String) throws {
    let commits = n >= 100_000 ? 1000 : 100
    let name =
      "PostgreSQL: commit returned in process A -> merged into a context in process B, \(commits) commits (absolute)"
    guard selected(name) else { return }
    let schema = try freshSchema(url, raw: false)
    defer { dropSchema(url, schema) }
    let location = url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
    guard let storeURL = URL(string: location) else { throw BenchError.mismatch("not a URL: \(location)") }
    let container = try PersistentContainer(name: "latency", model: model, storeURL: storeURL)
    // The listener marks one time when it delivers: its wake-up, notice and read are one stage.
    let stages = try measureMergeLatency(
      commits: commits, container: container, location: location,
      stageNames: [
        "A's save returned -> B's listener delivered it (NOTIFY, history read)", "", "", "-> observer called",
        "-> merged into a context",
      ])
    rows.append(
      ReportRow(name: name, note: String(format: "p50 %.3f ms, p99 %.3f ms", stages.total.p50, stages.total.p99)))
    for (stage, times) in stages.each {
      rows.append(
        ReportRow(
          name: "  PostgreSQL merge latency stage: \(stage) (absolute)",
          note: String(format: "p50 %.3f ms, p99 %.3f ms", times.p50, times.p99)))
    }
  }

  /// W writer processes over the server, each committing its share of one-object saves, timed
  /// from a common start to the last commit. TypedStore's writers take turns on the store's
  /// write lock; the raw side's insert into one table without one.
  private func postgreSQLWriterRows(_ url: String) async throws {
    let commits = n >= 100_000 ? 1600 : 64
    for history in [true, false] {
      for writers in [1, 4, 16] {
        let name =
          "PostgreSQL: \(commits) commits of 1 new object from \(writers) writer process\(writers == 1 ? "" : "es")"
          + " (history \(history ? "on" : "off"))"
        try await run(name, goal: 2.0) {
          try postgreSQLWritersRun(url, side: "raw", writers: writers, commits: commits)
        } typed: {
          try postgreSQLWritersRun(
            url, side: history ? "typed" : "typed-no-history", writers: writers, commits: commits)
        }
      }
    }
  }

  /// `side` is `raw`, `typed` or `typed-no-history` (a store whose writes record no history).
  private func postgreSQLWritersRun(_ url: String, side: String, writers: Int, commits: Int) throws -> Double {
    let raw = side == "raw"
    let schema = try freshSchema(url, raw: raw)
    defer { dropSchema(url, schema) }
    let go = directory.appendingPathComponent(uniqueName("pg-go")).path
    let share = commits / writers
    let outputs = (0..<writers).map { _ in Pipe() }
    let processes = try outputs.map { output in
      try ChildProcess.start(
        ["pg-writer", url, schema, side, String(share), "1", go], output: output)
    }
    for output in outputs {
      guard ChildProcess.readLine(output) == "ready" else { throw BenchError.sqlite("a writer did not connect") }
    }
    let start = monotonicNanoseconds()
    _ = FileManager.default.createFile(atPath: go, contents: nil)
    var last = start
    for (process, output) in zip(processes, outputs) {
      let line = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      let fields = line.split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
      guard process.terminationStatus == 0, let end = fields.first else {
        throw BenchError.sqlite("a writer failed: \(line)")
      }
      last = max(last, end)
    }
    let count = try RawPostgreSQL(url: url).execute(
      "SELECT count(*) FROM \"\(schema)\".\(raw ? "raw" : "\"BenchItem\"")")
    try verify("PostgreSQL writers: rows", count.first ?? "", String(share * writers))
    return Double(last - start) / 1_000_000
  }

  /// A writer process of the PostgreSQL writer rows: connects, prints "ready", waits for the
  /// file `go`, commits `commits` transactions of `objects` new objects, and prints the
  /// monotonic time of its last commit in nanoseconds.
  func postgreSQLWriter(url: String, schema: String, side: String, commits: Int, objects: Int, go: String) throws {
    let commit: (Int) throws -> Void
    if side == "raw" {
      let database = try RawPostgreSQL(url: url)
      try database.execute("SET search_path TO \"\(schema)\"")
      try database.prepareInsert()
      commit = { first in try database.insertTransaction(first: first, count: objects) }
    } else {
      let writer = try storeWriter(url, schema: schema, recordsHistory: side != "typed-no-history")
      commit = { first in try writer.insertTransaction(first: first, count: objects, model: self.model) }
    }
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while !FileManager.default.fileExists(atPath: go) { usleep(100) }
    // Keys from the process's own range: raw rows have no key allocation of their own.
    let base = Int(getpid()) * 1_000_000
    for transaction in 0..<commits { try commit(base + transaction * objects) }
    print(monotonicNanoseconds())
  }

  // MARK: - Schemas

  /// A new schema: the raw table, or the store's tables (made through `PostgreSQLStoreTables`).
  private func freshSchema(_ url: String, raw: Bool) throws -> String {
    let schema = "bench_\(getpid())_\(uniqueName(raw ? "raw" : "store").replacingOccurrences(of: "-", with: "_"))"
    if raw {
      let database = try RawPostgreSQL(url: url)
      try database.execute("CREATE SCHEMA \"\(schema)\"")
      try database.execute(
        "CREATE TABLE \"\(schema)\".raw (pk bigint PRIMARY KEY, number bigint NOT NULL, name text NOT NULL, "
          + "category text NOT NULL, score double precision NOT NULL, created double precision NOT NULL)")
    } else {
      _ = try PostgreSQLStoreTables(schema: schema, model: model).open(on: PostgreSQLConnection(url: url))
    }
    return schema
  }

  private func dropSchema(_ url: String, _ schema: String) {
    _ = try? RawPostgreSQL(url: url).execute("DROP SCHEMA \"\(schema)\" CASCADE")
  }

  /// The writer of the store in `schema` on its own connection.
  private func storeWriter(_ url: String, schema: String, recordsHistory: Bool = true) throws -> PostgreSQLStoreWriter {
    let identifier = try PostgreSQLStoreTables(schema: schema, model: model).open(
      on: PostgreSQLConnection(url: url)
    ).identifier
    guard let location = URL(string: url) else { throw BenchError.sqlite("not a URL: \(url)") }
    let store = PersistentStore(onAnotherEngineAt: location, identifier: identifier, model: model)
    return try PostgreSQLStoreWriter(
      url: url, schema: schema, store: store, lockTimeout: .seconds(60), recordsHistory: recordsHistory)
  }

  /// Runs `body` on a raw connection to a fresh schema, then drops the schema (not timed).
  private func postgreSQLRaw(_ url: String, _ body: (RawPostgreSQL) throws -> Double) throws -> Double {
    let schema = try freshSchema(url, raw: true)
    defer { dropSchema(url, schema) }
    let raw = try RawPostgreSQL(url: url)
    try raw.execute("SET search_path TO \"\(schema)\"")
    try raw.prepareInsert()
    let ms = try body(raw)
    try verify("PostgreSQL raw rows", try raw.execute("SELECT count(*) FROM raw").first ?? "", try raw.rowCount())
    return ms
  }

  /// Runs `body` on the writer of a fresh store, then drops its schema (not timed).
  private func postgreSQLStore(_ url: String, _ body: (PostgreSQLStoreWriter) throws -> Double) throws -> Double {
    let schema = try freshSchema(url, raw: false)
    defer { dropSchema(url, schema) }
    return try body(try storeWriter(url, schema: schema))
  }
}

extension RawPostgreSQL {
  func prepareInsert() throws {
    try prepare(
      "insert", "INSERT INTO raw (pk, number, name, category, score, created) VALUES ($1, $2, $3, $4, $5, $6)")
  }

  /// Inserts rows `first..<first + count` in one transaction.
  func insertTransaction(first: Int, count: Int) throws {
    try execute("BEGIN")
    for index in first..<first + count {
      let row = BenchRow(index)
      try run(
        "insert",
        [String(index + 1), String(row.number), row.name, row.category, "\(row.score)", "\(row.created)"])
    }
    try execute("COMMIT")
  }

  func rowCount() throws -> String { try execute("SELECT count(*) FROM raw").first ?? "" }
}

extension PostgreSQLStoreWriter {
  /// Saves rows `first..<first + count` as new `BenchItem`s in one write transaction.
  func insertTransaction(first: Int, count: Int, model: ManagedObjectModel) throws {
    guard let entity = model.entity(named: "BenchItem") else { throw BenchError.sqlite("no BenchItem") }
    var changes = RowWrites()
    changes.inserts = (first..<first + count).map { index in
      let row = BenchRow(index)
      let values: [String: PrimitiveValue] = [
        "number": .integer(row.number), "name": .text(row.name), "category": .text(row.category),
        "score": .real(row.score), "created": .real(row.created),
      ]
      return RowWrites.Insert(
        entityIndex: entity.index, primaryKey: nil, values: entity.storedAttributes.map { values[$0.name] ?? .null })
    }
    _ = try write(changes, info: TransactionInfo(author: "bench"))
  }
}
