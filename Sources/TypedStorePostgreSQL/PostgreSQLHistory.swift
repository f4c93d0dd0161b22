import Foundation
import TypedStore

/// The persistent history of one store on PostgreSQL: its tables, in the store's schema, and
/// transaction numbers that are dense and in commit order.
///
/// The tables have the SQLite store's shape (`HistorySchema`, `docs/history.md`), so that the
/// store's history reading, pruning and export run on them unchanged (`HistoryReader`, through
/// the engine seam): a transaction row per number with the range of its change rows, change
/// rows of one key, a run of keys or a JSON list of keys. Each transaction row also keeps the
/// PostgreSQL transaction's `xid8`.
///
/// A consumer reads "after T" and must never miss a transaction that commits late with a
/// lower number. Numbers from a sequence do not promise that: a sequence value is taken when
/// asked, and transactions commit in any order, so a reader that saw 7 commit can miss 6
/// committing after it (the outbox gap). Here the number comes from one counter row, updated
/// by the last statement of each write transaction at READ COMMITTED: the row's lock is held
/// until COMMIT, so the transaction that took number N has committed before any other can take
/// N + 1, and a reader that sees N sees everything below it. The same statement records the
/// transaction and its changes and sends `pg_notify`, which the server delivers at commit, in
/// commit order. Each transaction's `xid8` is kept too, for a later mode that orders by it.
///
/// What this needs: every write transaction of the store takes its number through `record`,
/// in the same transaction as its rows, at READ COMMITTED (at REPEATABLE READ the waiting
/// writer gets a serialization failure instead of the next number). The price: a store's
/// writers commit one at a time from their numbering statement on, through the commit's
/// flush; the `xid8` is what a higher-throughput mode would order by.
package struct PostgreSQLHistory {
  /// One change row of a transaction: rows of one entity that had the same change.
  package struct Change: Sendable, Equatable {
    var kind: HistoryChange.Kind
    var entity: String
    /// In order; a run of consecutive keys is stored as its first and last.
    var primaryKeys: [Int64]
    /// For an update, the attributes it changed.
    var changedAttributes: [String] = []

    init(kind: HistoryChange.Kind, entity: String, primaryKeys: [Int64], changedAttributes: [String] = []) {
      self.kind = kind
      self.entity = entity
      self.primaryKeys = primaryKeys
      self.changedAttributes = changedAttributes
    }

    package init(kind: HistoryChange.Kind, entity: String, primaryKey: Int64, changedAttributes: [String] = []) {
      self.init(kind: kind, entity: entity, primaryKeys: [primaryKey], changedAttributes: changedAttributes)
    }
  }

  /// The store's schema: letters, digits and `_`, starting with a letter or `_`.
  let schema: String

  package init(schema: String) throws(PostgreSQLError) {
    guard let first = schema.first, first.isLetter || first == "_", schema.count <= 48,
      schema.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
    else {
      throw PostgreSQLError(kind: .statement, message: "\(schema) is not a store's schema name")
    }
    self.schema = schema
  }

  /// The channel `pg_notify` announces each transaction's number on.
  var channel: String { "typedstore_\(schema)" }

  /// The name of the advisory lock that creating or opening the store's tables holds until its
  /// transaction ends: the two-key lock (`hashtext('typedstore')`, `hashtext` of the name),
  /// apart from the one-key locks applications take.
  var lockName: String { "typedstore:" + schema }

  private func table(_ name: String) -> String { "\"\(schema)\".\"\(name)\"" }

  /// Creates the schema and the history tables, if missing, in the caller's transaction, under
  /// the advisory lock of the schema's name (two sessions running `CREATE … IF NOT EXISTS` at
  /// once can both try to create, and one fail).
  func createTables(on connection: PostgreSQLConnection) throws(PostgreSQLError) {
    try connection.execute("SELECT pg_advisory_xact_lock(hashtext('typedstore'), hashtext($1))", [lockName])
    for statement in [
      "CREATE SCHEMA IF NOT EXISTS \"\(schema)\"",
      """
      CREATE TABLE IF NOT EXISTS \(table("_history_counter")) (
        id integer PRIMARY KEY CHECK (id = 1), last bigint NOT NULL, last_change bigint NOT NULL)
      """,
      "INSERT INTO \(table("_history_counter")) VALUES (1, 0, 0) ON CONFLICT DO NOTHING",
      """
      CREATE TABLE IF NOT EXISTS \(table("_history_transaction")) (
        number bigint PRIMARY KEY, timestamp double precision NOT NULL, author text, context_name text,
        process_id bigint NOT NULL, first_change bigint NOT NULL DEFAULT 0, last_change bigint NOT NULL DEFAULT 0,
        recorded_by bigint NOT NULL, xid xid8 NOT NULL)
      """,
      """
      CREATE TABLE IF NOT EXISTS \(table("_history_change")) (
        id bigint PRIMARY KEY, transaction_number bigint NOT NULL, kind bigint NOT NULL, entity text NOT NULL,
        pk bigint, last_pk bigint, keys text, changed text, tombstone text)
      """,
    ] {
      try connection.execute(statement)
    }
  }

  /// Records the transaction in progress on `connection` and returns its number: call it
  /// last, right before COMMIT. One statement takes the number and the range of change row
  /// IDs (locking the counter row until the transaction ends), writes the transaction and
  /// change rows, and queues the notification. `processID` is the writing process's.
  @discardableResult
  package func record(
    _ changes: [Change], author: String?, contextName: String?, processID: Int32 = getpid(),
    on connection: PostgreSQLConnection
  ) throws(PostgreSQLError) -> Int64 {
    // The change rows' IDs are the counter's `last_change` before, plus their positions: one
    // range per transaction, in commit order, as `HistoryReader` reads them; a transaction with
    // no change rows has the empty range where the next would go (`before + 1` through
    // `before`), as the SQLite store's migration markers do, so a page's range stays whole.
    // Timestamps are
    // seconds since 2001, as Foundation's reference date and the SQLite store keep them.
    let sql = """
      WITH n AS (
        UPDATE \(table("_history_counter")) SET last = last + 1, last_change = last_change + $4::bigint
        WHERE id = 1 RETURNING last, last_change - $4::bigint AS before),
      t AS (
        INSERT INTO \(table("_history_transaction"))
          (number, timestamp, author, context_name, process_id, first_change, last_change, recorded_by, xid)
        SELECT last, extract(epoch FROM clock_timestamp())::double precision - 978307200, $1, $2, $3::bigint,
          before + 1, before + $4::bigint,
          $12::bigint, pg_current_xact_id() FROM n),
      c AS (
        INSERT INTO \(table("_history_change")) (id, transaction_number, kind, entity, pk, last_pk, keys, changed)
        SELECT n.before + x.position, n.last, x.kind, x.entity, x.pk, x.last_pk, x.keys, x.changed
        FROM n, unnest($5::bigint[], $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[])
          WITH ORDINALITY AS x(kind, entity, pk, last_pk, keys, changed, position))
      SELECT last, pg_notify($11, last::text) FROM n
      """
    let rows = changes.map(Self.row)
    let result = try connection.execute(
      sql,
      [
        author, contextName, String(processID), String(changes.count), Self.array(rows.map { String($0.kind) }),
        Self.array(rows.map(\.entity)), Self.array(rows.map { $0.pk.map(String.init) }),
        Self.array(rows.map { $0.lastPK.map(String.init) }), Self.array(rows.map(\.keys)),
        Self.array(rows.map(\.changed)), channel, String(HistorySchema.recordingFormatVersion),
      ])
    guard let text = result.rows.first?.first ?? nil, let number = Int64(text) else {
      throw PostgreSQLError(kind: .statement, message: "the history counter of \(schema) is missing")
    }
    return number
  }

  /// A change as its row stores it: one key in `pk`, a run in `pk` through `lastPK`, other
  /// lists in `keys` (a JSON array); an update's attributes in `changed` (a JSON array).
  private static func row(_ change: Change)
    -> (kind: Int, entity: String, pk: Int64?, lastPK: Int64?, keys: String?, changed: String?)
  {
    let keys = change.primaryKeys
    let changed = change.kind == .update ? HistorySchema.jsonArray(change.changedAttributes) : nil
    if keys.count == 1 { return (change.kind.rawValue, change.entity, keys[0], nil, nil, changed) }
    if let first = keys.first, let last = keys.last, last &- first == Int64(keys.count - 1),
      keys.enumerated().allSatisfy({ $0.element == first &+ Int64($0.offset) })
    {
      return (change.kind.rawValue, change.entity, first, last, nil, changed)
    }
    return (change.kind.rawValue, change.entity, nil, nil, HistorySchema.jsonArray(keys), changed)
  }

  /// The number of the last committed transaction (0 before the first).
  func lastNumber(on connection: PostgreSQLConnection) throws(PostgreSQLError) -> Int64 {
    let rows = try connection.execute("SELECT last FROM \(table("_history_counter")) WHERE id = 1")
    return rows.rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } ?? 0
  }

  /// `values` as a PostgreSQL array literal (nil elements as NULL), bound as text and cast in
  /// SQL.
  static func array(_ values: [String?]) -> String {
    "{"
      + values.map { value in
        guard let value else { return "NULL" }
        return "\""
          + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
      }.joined(separator: ",") + "}"
  }
}
