import Foundation

/// The persistent history of one store on PostgreSQL: its tables, in the store's schema, and
/// transaction numbers that are dense and in commit order.
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
struct PostgreSQLHistory {
  /// One change of a transaction, as history records it.
  struct Change: Sendable, Equatable {
    enum Kind: Int, Sendable {
      case insert = 1
      case update = 2
      case delete = 3
    }

    var kind: Kind
    var entity: String
    var primaryKey: Int64
    /// For an update, the attributes it changed.
    var changedAttributes: [String] = []
  }

  /// One recorded transaction.
  struct Transaction: Sendable, Equatable {
    var number: Int64
    var author: String?
    var contextName: String?
    var processID: Int32
    var changes: [Change]
  }

  /// The store's schema: letters, digits and `_`, starting with a letter or `_`.
  let schema: String

  init(schema: String) throws(PostgreSQLError) {
    guard let first = schema.first, first.isLetter || first == "_", schema.count <= 48,
      schema.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
    else {
      throw PostgreSQLError(kind: .statement, message: "\(schema) is not a store's schema name")
    }
    self.schema = schema
  }

  /// The channel `pg_notify` announces each transaction's number on.
  var channel: String { "typedstore_\(schema)" }

  private func table(_ name: String) -> String { "\"\(schema)\".\"\(name)\"" }

  /// Creates the schema and the history tables, if missing: in one transaction under an
  /// advisory lock of the schema's name, since two sessions running `CREATE … IF NOT EXISTS`
  /// at once can both try to create and one fail.
  func create(on connection: PostgreSQLConnection) throws {
    try connection.transaction { try createTables(on: connection) }
  }

  /// The name of the advisory lock (`hashtext` of it) that creating or opening the store's
  /// tables holds until its transaction ends.
  var lockName: String { "typedstore:" + schema }

  /// Creates the schema and the history tables, if missing, in the caller's transaction.
  func createTables(on connection: PostgreSQLConnection) throws(PostgreSQLError) {
    try connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [lockName])
    for statement in [
      "CREATE SCHEMA IF NOT EXISTS \"\(schema)\"",
      """
      CREATE TABLE IF NOT EXISTS \(table("_history_counter")) (
        id integer PRIMARY KEY CHECK (id = 1), last bigint NOT NULL)
      """,
      "INSERT INTO \(table("_history_counter")) VALUES (1, 0) ON CONFLICT DO NOTHING",
      """
      CREATE TABLE IF NOT EXISTS \(table("_history_transaction")) (
        number bigint PRIMARY KEY, xid xid8 NOT NULL, timestamp timestamptz NOT NULL,
        author text, context_name text, process_id integer NOT NULL)
      """,
      """
      CREATE TABLE IF NOT EXISTS \(table("_history_change")) (
        number bigint NOT NULL REFERENCES \(table("_history_transaction")) ON DELETE CASCADE,
        position integer NOT NULL, kind smallint NOT NULL, entity text NOT NULL, pk bigint NOT NULL,
        changed text[] NOT NULL, PRIMARY KEY (number, position))
      """,
    ] {
      try connection.execute(statement)
    }
  }

  /// Records the transaction in progress on `connection` and returns its number: call it
  /// last, right before COMMIT. One statement takes the number (locking the counter row until
  /// the transaction ends), writes the transaction and change rows, and queues the
  /// notification.
  @discardableResult
  func record(
    _ changes: [Change], author: String?, contextName: String?, on connection: PostgreSQLConnection
  ) throws(PostgreSQLError) -> Int64 {
    let sql = """
      WITH n AS (UPDATE \(table("_history_counter")) SET last = last + 1 WHERE id = 1 RETURNING last),
      t AS (
        INSERT INTO \(table("_history_transaction")) (number, xid, timestamp, author, context_name, process_id)
        SELECT last, pg_current_xact_id(), clock_timestamp(), $1, $2, pg_backend_pid() FROM n),
      c AS (
        INSERT INTO \(table("_history_change")) (number, position, kind, entity, pk, changed)
        SELECT n.last, x.position, x.kind, x.entity, x.pk, string_to_array(x.changed, ',')
        FROM n, unnest($3::integer[], $4::smallint[], $5::text[], $6::bigint[], $7::text[])
          AS x(position, kind, entity, pk, changed))
      SELECT last, pg_notify($8, last::text) FROM n
      """
    let rows = try connection.execute(
      sql,
      [
        author, contextName, Self.array(changes.indices.map { String($0) }),
        Self.array(changes.map { String($0.kind.rawValue) }), Self.array(changes.map(\.entity)),
        Self.array(changes.map { String($0.primaryKey) }),
        Self.array(changes.map { $0.changedAttributes.joined(separator: ",") }), channel,
      ])
    guard let text = rows.rows.first?.first ?? nil, let number = Int64(text) else {
      throw PostgreSQLError(kind: .statement, message: "the history counter of \(schema) is missing")
    }
    return number
  }

  /// The transactions after number `after`, in order, at most `limit`.
  func transactions(after: Int64, limit: Int = 1000, on connection: PostgreSQLConnection) throws(PostgreSQLError)
    -> [Transaction]
  {
    let transactions = try connection.execute(
      """
      SELECT number, author, context_name, process_id FROM \(table("_history_transaction"))
      WHERE number > $1::bigint ORDER BY number LIMIT $2::integer
      """, [String(after), String(limit)])
    guard let last = transactions.rows.last?.first.flatMap({ $0 }) else { return [] }
    let changes = try connection.execute(
      """
      SELECT number, kind, entity, pk, array_to_string(changed, ',') AS changed FROM \(table("_history_change"))
      WHERE number > $1::bigint AND number <= $2::bigint ORDER BY number, position
      """, [String(after), last])
    var byNumber: [Int64: [Change]] = [:]
    for row in changes.rows {
      guard let number = row[0].flatMap({ Int64($0) }),
        let kind = row[1].flatMap({ Int($0) }).flatMap(Change.Kind.init),
        let entity = row[2], let key = row[3].flatMap({ Int64($0) })
      else { continue }
      let changed = (row[4] ?? "").split(separator: ",").map(String.init)
      byNumber[number, default: []].append(
        Change(kind: kind, entity: entity, primaryKey: key, changedAttributes: changed))
    }
    return transactions.rows.compactMap { row in
      guard let number = row[0].flatMap({ Int64($0) }), let process = row[3].flatMap({ Int32($0) }) else { return nil }
      return Transaction(
        number: number, author: row[1], contextName: row[2], processID: process, changes: byNumber[number] ?? [])
    }
  }

  /// The number of the last committed transaction (0 before the first).
  func lastNumber(on connection: PostgreSQLConnection) throws(PostgreSQLError) -> Int64 {
    let rows = try connection.execute("SELECT last FROM \(table("_history_counter")) WHERE id = 1")
    return rows.rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } ?? 0
  }

  /// `values` as a PostgreSQL array literal of quoted elements, bound as text and cast in SQL.
  static func array(_ values: [String]) -> String {
    "{"
      + values.map { value in
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
      }.joined(separator: ",") + "}"
  }
}
