import CSQLite
import Foundation

/// The baseline: the same work done with the raw SQLite C API, prepared statements and one
/// transaction, with the open flags and pragmas TypedStore uses (no connection mutex, WAL,
/// synchronous=NORMAL, no automatic checkpoint: both sides checkpoint outside the timings).
final class RawDatabase {
  let handle: OpaquePointer

  init(path: String) throws {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    var handle: OpaquePointer?
    guard
      sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        == SQLITE_OK, let handle
    else { throw BenchError.sqlite("cannot open \(path)") }
    self.handle = handle
    try execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;")
  }

  /// Opens an existing file (a TypedStore store, to read its tables the raw way).
  init(existing path: String) throws {
    var handle: OpaquePointer?
    guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle
    else {
      throw BenchError.sqlite("cannot open \(path)")
    }
    self.handle = handle
  }

  deinit { sqlite3_close_v2(handle) }

  /// Copies the WAL into the database file, as TypedStore's writer does after large commits.
  func checkpoint() throws { try execute("PRAGMA wal_checkpoint(RESTART)") }

  func execute(_ sql: String) throws {
    guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
      throw BenchError.sqlite(String(cString: sqlite3_errmsg(handle)) + " in " + sql)
    }
  }

  func prepare(_ sql: String) throws -> OpaquePointer {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError.sqlite(String(cString: sqlite3_errmsg(handle)) + " in " + sql)
    }
    return statement
  }

  /// Runs `sql` and returns its first row's columns as doubles (for checksums).
  func numbers(_ sql: String) throws -> [Double] {
    let statement = try prepare(sql)
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW else { return [] }
    return (0..<sqlite3_column_count(statement)).map { sqlite3_column_double(statement, $0) }
  }

  // MARK: - The baseline operations

  static let createSQL =
    "CREATE TABLE raw (pk INTEGER PRIMARY KEY, number INTEGER NOT NULL, name TEXT NOT NULL, "
    + "category TEXT NOT NULL, score REAL NOT NULL, created REAL NOT NULL)"

  func insert(_ rows: Int) throws {
    let statement = try prepare(
      "INSERT INTO raw (pk, number, name, category, score, created) VALUES (?, ?, ?, ?, ?, ?)")
    defer { sqlite3_finalize(statement) }
    try execute("BEGIN IMMEDIATE")
    for index in 0..<rows {
      sqlite3_bind_int64(statement, 1, Int64(index + 1))
      try insert(BenchRow(index), with: statement, from: 2)
    }
    try execute("COMMIT")
  }

  /// Steps every row into Swift structs; returns a checksum of what was read.
  func fetchAll(where condition: String = "") throws -> Checksum {
    let statement = try prepare("SELECT number, name, category, score, created FROM raw\(condition)")
    defer { sqlite3_finalize(statement) }
    var rows: [BenchRow] = []
    while sqlite3_step(statement) == SQLITE_ROW {
      rows.append(
        BenchRow(
          number: sqlite3_column_int64(statement, 0), name: text(statement, 1), category: text(statement, 2),
          score: sqlite3_column_double(statement, 3), created: sqlite3_column_double(statement, 4)))
    }
    var checksum = Checksum()
    for row in rows { checksum.add(row) }
    return checksum
  }

  func updateEachScore(_ rows: Int) throws {
    let statement = try prepare("UPDATE raw SET score = ? WHERE pk = ?")
    defer { sqlite3_finalize(statement) }
    try execute("BEGIN IMMEDIATE")
    for index in 0..<rows {
      sqlite3_bind_double(statement, 1, BenchRow.score(index) + 1)  // no strings made: only the score is used
      sqlite3_bind_int64(statement, 2, Int64(index + 1))
      guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError.sqlite("update failed") }
      sqlite3_reset(statement)
    }
    try execute("COMMIT")
  }

  func deleteEach(_ rows: Int) throws {
    let statement = try prepare("DELETE FROM raw WHERE pk = ?")
    defer { sqlite3_finalize(statement) }
    try execute("BEGIN IMMEDIATE")
    for index in 0..<rows {
      sqlite3_bind_int64(statement, 1, Int64(index + 1))
      guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError.sqlite("delete failed") }
      sqlite3_reset(statement)
    }
    try execute("COMMIT")
  }

  /// Reads the history of a TypedStore store after transaction `number` into Swift values:
  /// what `fetchHistory` returns, read the plainest way — each transaction's columns, and for
  /// each row changed its kind, entity, key, attribute list and tombstone (text, as stored).
  /// A change row holds one key (`pk`), a run (`pk` to `last_pk`) or a JSON array (`keys`),
  /// expanded here. Returns the number of changes and of tombstones.
  func readHistory(after number: Int64) throws -> (changes: Int, tombstones: Int) {
    struct Change {
      var kind: Int64
      var entity: String
      var pk: Int64
      var changed: String?
      var tombstone: String?
    }
    struct Transaction {
      var number: Int64
      var timestamp: Double
      var author: String?
      var contextName: String?
      var processID: Int64
      var changes: [Change] = []
    }
    var transactions: [Transaction] = []
    let headers = try prepare(
      "SELECT number, timestamp, author, context_name, process_id "
        + "FROM _history_transaction WHERE number > ? ORDER BY number"
    )
    defer { sqlite3_finalize(headers) }
    sqlite3_bind_int64(headers, 1, number)
    while sqlite3_step(headers) == SQLITE_ROW {
      transactions.append(
        Transaction(
          number: sqlite3_column_int64(headers, 0), timestamp: sqlite3_column_double(headers, 1),
          author: optionalText(headers, 2), contextName: optionalText(headers, 3),
          processID: sqlite3_column_int64(headers, 4)))
    }
    let statement = try prepare(
      "SELECT c.transaction_number, c.kind, c.entity, c.pk, c.keys, c.changed, c.last_pk, c.tombstone "
        + "FROM _history_change c WHERE c.transaction_number > ? ORDER BY c.id"
    )
    defer { sqlite3_finalize(statement) }
    sqlite3_bind_int64(statement, 1, number)
    var changes = 0
    var tombstones = 0
    var position = 0  // both are in commit order: one pass pairs them
    while sqlite3_step(statement) == SQLITE_ROW {
      let transaction = sqlite3_column_int64(statement, 0)
      while position < transactions.count && transactions[position].number < transaction { position += 1 }
      guard position < transactions.count, transactions[position].number == transaction else { continue }
      let kind = sqlite3_column_int64(statement, 1)
      let entity = text(statement, 2)
      let changed = optionalText(statement, 5)
      let tombstone = optionalText(statement, 7)
      if tombstone != nil { tombstones += 1 }
      var keys: [Int64] = []
      if sqlite3_column_type(statement, 6) != SQLITE_NULL {  // a run of consecutive keys
        keys = Array(sqlite3_column_int64(statement, 3)...sqlite3_column_int64(statement, 6))
      } else if sqlite3_column_type(statement, 4) == SQLITE_NULL {
        keys = [sqlite3_column_int64(statement, 3)]
      } else {
        var value: Int64 = 0
        var inNumber = false
        for byte in text(statement, 4).utf8 {
          if byte >= 48 && byte <= 57 {
            value = value * 10 + Int64(byte - 48)
            inNumber = true
          } else if inNumber {
            keys.append(value)
            value = 0
            inNumber = false
          }
        }
      }
      for key in keys {
        transactions[position].changes.append(
          Change(kind: kind, entity: entity, pk: key, changed: changed, tombstone: tombstone))
      }
      changes += keys.count
    }
    return (changes, tombstones)
  }

  private func optionalText(_ statement: OpaquePointer, _ index: Int32) -> String? {
    sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : text(statement, index)
  }

  /// Opens the database of a writer process of the benchmark (the writer and readers rows):
  /// SQLite's own busy handler, `synchronous=NORMAL`, no automatic checkpoint; and its
  /// one-row insert for `insert(_:with:from:)`.
  static func openForWriting(_ path: String) throws -> (RawDatabase, insert: OpaquePointer) {
    let database = try RawDatabase(existing: path)
    sqlite3_busy_timeout(database.handle, 60_000)
    try database.execute("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;")
    let insert = try database.prepare(
      "INSERT INTO raw (number, name, category, score, created) VALUES (?, ?, ?, ?, ?)")
    return (database, insert)
  }

  /// Binds `row` to `statement` (`INSERT INTO raw (number, name, category, score, created)
  /// VALUES (?, ?, ?, ?, ?)`, its columns from parameter `first` on), steps it and resets it.
  func insert(_ row: BenchRow, with statement: OpaquePointer, from first: Int32 = 1) throws {
    sqlite3_bind_int64(statement, first, row.number)
    bindText(statement, first + 1, row.name)
    bindText(statement, first + 2, row.category)
    sqlite3_bind_double(statement, first + 3, row.score)
    sqlite3_bind_double(statement, first + 4, row.created)
    guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError.sqlite("insert failed") }
    sqlite3_reset(statement)
  }

  func bindText(_ statement: OpaquePointer, _ index: Int32, _ value: String) {
    var value = value
    value.withUTF8 { bytes in
      guard let base = bytes.baseAddress else {
        sqlite3_bind_text(statement, index, "", 0, nil)
        return
      }
      sqlite3_bind_text(
        statement, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count),
        unsafeBitCast(-1, to: sqlite3_destructor_type.self))
    }
  }

  private func text(_ statement: OpaquePointer, _ index: Int32) -> String {
    guard let bytes = sqlite3_column_text(statement, index) else { return "" }
    return String(
      decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, index))), as: UTF8.self)
  }
}

enum BenchError: Error, CustomStringConvertible {
  case sqlite(String)
  case mismatch(String)

  var description: String {
    switch self {
    case .sqlite(let message): "SQLite: \(message)"
    case .mismatch(let message): "results differ: \(message)"
    }
  }
}
