import Foundation

// The seam between the store and its engines (DESIGN.md, "Engines"): what `History/` and
// `Store/` need of a database, and nothing of how an engine provides it. `SQLite/` implements
// it for a store file; the `TypedStorePostgreSQL` library implements it for a schema on a
// PostgreSQL server, so that a user who wants SQLite alone never links libpq.
//
// The seam is at the level of SQL: the store's algorithms (history, consumers, conflicts,
// delete rules, pruning) are written once, against these protocols, in SQL both engines run,
// with the few differences asked of `SQLDialect`. Statements are written with SQLite's
// parameters (`?`, `?1`); an engine whose parameters are written otherwise rewrites them
// when it prepares the statement. Identifiers come from the validated model only; values
// are always bound. Code on the seam is generic over `DatabaseConnection`, so that SQLite's
// calls are specialized and cost what they cost before (the benchmark's instruction counts).
//
// On the seam: the consumers' table (`HistoryConsumers`), history reading, filtering and
// deletion (`HistoryReader`), pruning capped at the consumers' checkpoints
// (`PersistentStore.pruneHistory`), the store's metadata and entity codes, the write path
// inside a write transaction (`PersistentStore.write`, the batch requests, `HistoryRecorder`,
// and the conflict, uniqueness, link, reference and delete-rule code around them), reading rows
// into objects (`PersistentStore+Rows`) and the queries (`Query/`, whose translation writes the
// dialect's SQL). An engine's transactions and connections are its own: `StoreWriter` and
// SQLite's connections for a store file, a `StoreEngine` (`PostgreSQLStoreEngine`) otherwise.
// Migration (`SchemaSQL`) and the consistency check run on the seam too. Still written for
// SQLite only: the file's opening and backups.

/// The SQL language differences between the engines that the shared code must know of.
package enum SQLDialect: Sendable, Equatable {
  case sqlite
  case postgreSQL

  /// A statement that selects 1 when a table `name` (bound to its only parameter) exists
  /// among the store's tables.
  package var tableExistsSQL: String {
    switch self {
    case .sqlite: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
    case .postgreSQL: "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?"
    }
  }
}

extension SQLDialect {
  /// A subquery of the texts in the JSON array bound to `parameter` (`?`): how a list of
  /// values is bound as one.
  package func jsonTextValues(_ parameter: String) -> String {
    switch self {
    case .sqlite: "SELECT value FROM json_each(\(parameter))"
    case .postgreSQL: "SELECT json_array_elements_text(CAST(\(parameter) AS json))"
    }
  }

  /// A statement that selects 1 when the table named by its first parameter has a column named
  /// by its second.
  package var columnExistsSQL: String {
    switch self {
    case .sqlite: "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?"
    case .postgreSQL:
      """
      SELECT count(*) FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?
      """
    }
  }

  /// A statement of the names of the columns of the table named by its one parameter.
  package var columnsSQL: String {
    switch self {
    case .sqlite: "SELECT name FROM pragma_table_info(?)"
    case .postgreSQL:
      "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
    }
  }

  /// Statements of one value each, for a store's inspection: the page size, the pages the
  /// store takes, the free ones among them, and the journal mode (PostgreSQL's: its block size,
  /// the schema's blocks, none free, and `postgresql`).
  package var inspectionSQL: (pageSize: String, pageCount: String, freePages: String, journalMode: String) {
    switch self {
    case .sqlite: ("PRAGMA page_size", "PRAGMA page_count", "PRAGMA freelist_count", "PRAGMA journal_mode")
    case .postgreSQL:
      (
        "SELECT CAST(current_setting('block_size') AS bigint)",
        """
        SELECT CAST(coalesce(sum(pg_total_relation_size(c.oid)), 0) / CAST(current_setting('block_size') AS bigint) AS bigint)
        FROM pg_class c WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND c.relkind = 'r'
        """,
        "SELECT 0", "SELECT 'postgresql'"
      )
    }
  }

  /// The number of elements of the JSON array (text) `expression`.
  package func jsonArrayLength(_ expression: String) -> String {
    switch self {
    case .sqlite: "json_array_length(\(expression))"
    case .postgreSQL: "json_array_length(CAST(\(expression) AS json))"
    }
  }

  /// A statement of one integer: the bytes the history tables take on disk.
  package var historyBytesSQL: String {
    switch self {
    case .sqlite:
      """
      SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN
        (SELECT name FROM sqlite_master WHERE tbl_name IN ('_history_transaction', '_history_change'))
      """
    case .postgreSQL:
      "SELECT pg_total_relation_size('_history_transaction') + pg_total_relation_size('_history_change')"
    }
  }

  /// A subquery of the integers in the JSON array bound to its one parameter (`?`), in one
  /// column named `value`: how a list of keys is bound as one.
  package var jsonIntegerValues: String {
    switch self {
    case .sqlite: "SELECT value FROM json_each(?)"
    case .postgreSQL: "SELECT CAST(value AS bigint) AS value FROM json_array_elements_text(CAST(? AS json)) AS k(value)"
    }
  }
}

/// A statement prepared on a `DatabaseConnection`, used by one thread at a time: bind values
/// (parameters from 1), run it or step through its rows, read the current row's columns (from 0).
package protocol DatabaseStatement: AnyObject {
  func bind(_ value: PrimitiveValue, at index: Int32) throws
  func bind(_ value: Int64, at index: Int32) throws
  func bind(_ value: Double, at index: Int32) throws
  func bind(_ value: String, at index: Int32) throws
  func bind(_ value: Data, at index: Int32) throws
  func bindNull(_ index: Int32) throws
  /// Moves to the next row; false when there is none. The first call runs the statement.
  func step() throws -> Bool
  /// Runs the statement to its end (a command).
  func run() throws
  /// Ends the current run and clears the bound values; the next `step()` runs it again.
  func reset()
  /// Ends the current run, for a caller that binds every parameter again before the next.
  func rewind()
  /// The number of columns of the statement's rows.
  var columnCount: Int32 { get }
  func isNull(_ column: Int32) -> Bool
  func int64(_ column: Int32) -> Int64
  func double(_ column: Int32) -> Double
  func string(_ column: Int32) -> String
  func value(_ column: Int32) throws -> PrimitiveValue
  /// Whether column `column` is text equal to `string` (an engine may compare in place).
  func textEquals(_ column: Int32, _ string: String) -> Bool
}

extension DatabaseStatement {
  package func rewind() { reset() }

  package func textEquals(_ column: Int32, _ string: String) -> Bool {
    !isNull(column) && self.string(column) == string
  }
}

/// A connection to a store's database, used by one thread at a time.
package protocol DatabaseConnection: AnyObject {
  associatedtype PreparedStatement: DatabaseStatement
  var dialect: SQLDialect { get }
  /// The statement of `sql`, prepared once and kept by the connection.
  func statement(_ sql: String) throws -> PreparedStatement
  /// The statement of `sql`, prepared once and kept by the connection under its number.
  func statement(prepared sql: PreparedSQL) throws -> PreparedStatement
  /// Runs `sql`, one or more statements with no parameters.
  func execute(script sql: String) throws
  /// The rows the last statement run inserted, updated or deleted.
  var changes: Int { get }
  /// Runs `body` in a read transaction, so that its statements see one snapshot; inside a
  /// transaction already, `body` runs in it.
  func readTransaction<T>(_ body: () throws -> T) throws -> T
  /// Inside a write transaction: undoes every write since it (or its innermost savepoint)
  /// began and goes on in the same scope, holding the store's write lock again, so that what
  /// comes next sees every commit made in between.
  func undoWrites() throws
  /// Inside a write transaction: runs `body` in a savepoint, released when it returns and
  /// rolled back to when it throws (the transaction goes on either way).
  func savepoint<T>(_ body: () throws -> T) throws -> T
  /// Whether `error`, thrown by one of the connection's statements, is a unique index's
  /// refusal of a row (not a primary key's).
  func isUniqueViolation(_ error: any Error) -> Bool
}

extension DatabaseConnection {
  package func statement(prepared sql: PreparedSQL) throws -> PreparedStatement { try statement(sql.text) }

  /// The first column of the first row of `sql`, as an integer, or nil.
  package func scalarInt(_ sql: String) throws -> Int64? {
    let statement = try statement(sql)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(0) else { return nil }
    return statement.int64(0)
  }

  /// The first column of the first row of `sql`, as text, or nil.
  package func scalarText(_ sql: String) throws -> String? {
    let statement = try statement(sql)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(0) else { return nil }
    return statement.string(0)
  }

  /// Whether the store has a table `name`.
  package func tableExists(_ name: String) throws -> Bool {
    let statement = try statement(dialect.tableExistsSQL)
    defer { statement.reset() }
    try statement.bind(name, at: 1)
    return try statement.step() && statement.int64(0) > 0
  }
}
