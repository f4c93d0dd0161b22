import CLibPQ
import Foundation
import TypedStore

// The only code of the PostgreSQL engine that touches libpq, as `SQLite/` is for SQLite: a
// connection, statements with bound parameters (never spliced), transactions, typed errors,
// and LISTEN/NOTIFY. Values travel in PostgreSQL's text format; the callers cast parameters
// in SQL (`$1::bigint`) where a type matters.

/// A failure reported by libpq or by the server: TypedStore's public `StoreServerError`, which
/// applications catch without importing this library.
package typealias PostgreSQLError = StoreServerError

/// The rows a statement returned, as text (nil for NULL).
struct PostgreSQLRows: Sendable, Equatable {
  var columns: [String]
  var rows: [[String?]]

  /// The value of `column` in row `row`.
  subscript(row: Int, column: String) -> String? {
    guard let index = columns.firstIndex(of: column) else { return nil }
    return rows[row][index]
  }
}

/// A notification a listening connection received (`NOTIFY` or `pg_notify`).
package struct PostgreSQLNotification: Sendable, Equatable {
  var channel: String
  var payload: String
  /// The server process of the session that sent it.
  var processID: Int32
}

/// One connection to a PostgreSQL server through libpq: used by one thread at a time, as an
/// SQLite connection is.
package final class PostgreSQLConnection {
  private let connection: OpaquePointer

  /// Connects to the server `url` names (`postgresql://user@host:port/database`, or
  /// `postgresql:///database?host=/socket/folder`).
  ///
  /// Unless the URL says otherwise, connecting gives up after 10 seconds and a silent peer is
  /// found out by TCP keepalives within about half a minute. Whatever the server's or the
  /// role's settings, the session then sends text as UTF-8, numbers with every digit they
  /// need to read back exactly, and bytes in hex: what `PostgreSQLValues` reads.
  package init(url: String) throws(PostgreSQLError) {
    // Defaults first: the URL (expanded from `dbname`) overrides what comes before it.
    let settings: [(String, String)] = [
      ("connect_timeout", "10"), ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"),
      ("keepalives_count", "3"), ("tcp_user_timeout", "30000"), ("dbname", url),
    ]
    let made = Self.withCStrings(settings.map(\.0) + [nil]) { keywords in
      Self.withCStrings(settings.map(\.1) + [nil]) { values in PQconnectdbParams(keywords, values, 1) }
    }
    guard let connection = made else {
      throw PostgreSQLError(kind: .connection, message: "libpq could not allocate a connection")
    }
    guard PQstatus(connection) == CONNECTION_OK else {
      let message = Self.message(PQerrorMessage(connection))
      PQfinish(connection)
      throw PostgreSQLError(kind: .connection, message: message)
    }
    self.connection = connection
    // Notices (a NOTICE from CREATE ... IF NOT EXISTS) go nowhere instead of to stderr.
    PQsetNoticeProcessor(connection, { _, _ in }, nil)
    try execute(script: Self.sessionSettings)
  }

  private static let sessionSettings =
    "SET client_encoding = 'UTF8'; SET extra_float_digits = 3; SET bytea_output = 'hex'"

  /// The schema `use(schema:)` named, to name again in a new session.
  private var schema: String?

  /// The model a store's connection expects the store to have: what keeps a process that
  /// runs an older model from reading or writing a store another process migrated (as
  /// `ModelStamp` does on SQLite). Every read and write transaction reads the store's
  /// `model_hash` first, in the same round trip as its `BEGIN` (a write after taking the
  /// write lock, so that no write commits against a migrated store), and another hash throws
  /// `StoreError.modelChanged` with nothing read or written; `changed` hears of it. nil (an
  /// open's connection, a migration's): no check.
  package var expectedModel: ExpectedModel?

  /// See `expectedModel`.
  package struct ExpectedModel: Sendable {
    package let hash: String
    package let changed: @Sendable (StoreError) -> Void

    package init(hash: String, changed: @escaping @Sendable (StoreError) -> Void) {
      self.hash = hash
      self.changed = changed
    }
  }

  /// The statement that reads the store's model hash, last in a transaction's first round trip.
  private static let modelHashSQL = "SELECT value FROM _metadata WHERE key = 'model_hash'"

  /// What a read transaction runs before it reads the hash: a lock of `_metadata` that
  /// takes no snapshot, which a migration holds exclusively until it commits
  /// (`lockAgainstReaders(timeout:)`). So a read either ends before a migration changes a
  /// table, or begins after it, its snapshot then seeing the new hash.
  private static let readLockSQL = "LOCK TABLE _metadata IN ACCESS SHARE MODE"

  /// Throws `StoreError.modelChanged` (and reports it) when `stored` is not the expected hash.
  private func checkModel(_ stored: String?) throws {
    guard let expected = expectedModel, stored != expected.hash else { return }
    let error = StoreError.modelChanged(stored: stored ?? "", running: expected.hash)
    expected.changed(error)
    throw error
  }

  /// Connects again when the connection was lost (the server restarted, the network went),
  /// between transactions, so that a connection a context or a store keeps works again once
  /// the server is back: the session's settings and schema are set again, and its prepared
  /// statements, gone with the old session, are prepared again when next asked for. The
  /// statement that found the connection lost threw `.connection`; so does this while the
  /// server cannot be reached.
  func reconnectIfLost() throws(PostgreSQLError) {
    guard PQstatus(connection) != CONNECTION_OK else { return }
    PQreset(connection)
    guard PQstatus(connection) == CONNECTION_OK else {
      throw PostgreSQLError(kind: .connection, message: Self.message(PQerrorMessage(connection)))
    }
    prepared.removeAll()
    try execute(script: Self.sessionSettings)
    if let schema { try use(schema: schema) }
  }

  deinit { PQfinish(connection) }

  /// The server process serving this connection (`pg_backend_pid()`).
  var processID: Int32 { PQbackendPID(connection) }

  /// Runs one statement with its parameters bound (`$1`, `$2`, … in `sql`), as text; nil is
  /// NULL. Returns the rows it returned (none for a command).
  @discardableResult
  func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgreSQLError) -> PostgreSQLRows {
    if parameters.contains(where: { $0?.utf8.contains(0) ?? false }) {
      throw PostgreSQLError(kind: .statement, message: "PostgreSQL text cannot hold a NUL character")
    }
    let result = try checked(
      Self.withCStrings(parameters) { values in
        PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
      })
    defer { PQclear(result) }
    return Self.rows(of: result)
  }

  /// `result` when it reports success; otherwise frees it and throws the error it reports (or
  /// the connection's, when libpq made no result).
  func checked(_ result: OpaquePointer?) throws(PostgreSQLError) -> OpaquePointer {
    guard let result else {
      throw PostgreSQLError(kind: .connection, message: Self.message(PQerrorMessage(connection)))
    }
    switch PQresultStatus(result) {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
      return result
    default:
      defer { PQclear(result) }
      let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
      let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n"))).map { String(cString: $0) }
      let table = PQresultErrorField(result, Int32(UInt8(ascii: "t"))).map { String(cString: $0) }
      let kind: PostgreSQLError.Kind = PQstatus(connection) == CONNECTION_OK ? .statement : .connection
      throw PostgreSQLError(
        kind: kind, sqlState: sqlState, message: Self.message(PQresultErrorMessage(result)), constraint: constraint,
        table: table)
    }
  }

  /// The prepared statements of this connection, by SQL text.
  private var prepared: [String: PostgreSQLStatement] = [:]
  /// The number in the next prepared statement's name: never used twice on the connection.
  private var nextStatementNumber = 1

  /// The rows the last prepared statement run inserted, updated or deleted.
  package internal(set) var changes = 0

  /// The statement of `sql`, prepared on the server on first use and kept for the
  /// connection's life, reset: the server plans it once, and tells the types of its
  /// parameters, by which `PostgreSQLStatement.bind(_:at:)` writes values. Parameters are
  /// PostgreSQL's `$1`, `$2`, … or SQLite's `?1` and `?`, which are rewritten as PostgreSQL's
  /// (`PostgreSQLConnection.parameters(in:)`).
  package func statement(_ sql: String) throws(PostgreSQLError) -> PostgreSQLStatement {
    if let statement = prepared[sql] {
      statement.reset()
      return statement
    }
    let name = "s\(nextStatementNumber)"
    nextStatementNumber += 1
    PQclear(try checked(PQprepare(connection, name, Self.parameters(in: sql), 0, nil)))
    let description: OpaquePointer
    do {
      description = try checked(PQdescribePrepared(connection, name))
    } catch {
      _ = try? execute(script: "DEALLOCATE \(name)")
      throw error
    }
    defer { PQclear(description) }
    let types = (0..<PQnparams(description)).map { PQparamtype(description, $0) }
    let statement = PostgreSQLStatement(name: name, sql: sql, parameterTypes: types, connection: self)
    prepared[sql] = statement
    return statement
  }

  /// `sql` with SQLite's parameters written as PostgreSQL's (`ParameterRewriter`).
  static func parameters(in sql: String) -> String {
    var rewriter = ParameterRewriter(sql)
    return rewriter.rewrite()
  }

  /// Runs the prepared statement `name` with `parameters` in text format (nil is NULL).
  func executePrepared(_ name: String, _ parameters: [String?]) throws(PostgreSQLError) -> OpaquePointer {
    try checked(
      Self.withCStrings(parameters) { values in
        PQexecPrepared(connection, name, Int32(parameters.count), values, nil, nil, 0)
      })
  }

  /// Runs `body` in a transaction at READ COMMITTED: committed when it returns, rolled back
  /// when it throws. A transaction a failed statement aborted is rolled back and throws even
  /// when `body` caught the statement's error (PostgreSQL answers such a COMMIT with ROLLBACK).
  @discardableResult
  package func transaction<T>(_ body: () throws -> T) throws -> T {
    try committing(begin: { try execute("BEGIN ISOLATION LEVEL READ COMMITTED") }, body)
  }

  /// Runs `begin`, then `body`, then `COMMIT`; rolls back when any of them throws, or when a
  /// statement aborted the transaction. Refuses to run inside another transaction, where
  /// `BEGIN` only warns and the `COMMIT` would end the caller's transaction early.
  private func committing<T>(begin: () throws -> Void, _ body: () throws -> T) throws -> T {
    try reconnectIfLost()
    guard PQtransactionStatus(connection) == PQTRANS_IDLE else {
      throw PostgreSQLError(kind: .statement, message: "a transaction is already open on this connection")
    }
    do {
      try begin()
      let value = try body()
      guard PQtransactionStatus(connection) == PQTRANS_INTRANS else {
        throw PostgreSQLError(
          kind: .statement, sqlState: "25P02", message: "a statement of the transaction failed; it was rolled back")
      }
      try execute("COMMIT")
      return value
    } catch {
      _ = try? execute("ROLLBACK")
      throw error
    }
  }

  /// How long a write transaction waits for a row lock (the store's write lock among them);
  /// nil outside one.
  private var writeLockTimeout: Duration?

  /// Runs `body` in a write transaction of the store whose schema the connection uses: at
  /// READ COMMITTED, holding the store's write lock from its first statement (the history
  /// counter row's, `SELECT … FOR UPDATE`: what SQLite's `BEGIN IMMEDIATE` is to a store
  /// file), so that the store's single-writer algorithms (keys as one above the largest,
  /// version checks, conflict resolution, the history recorder's numbers and change IDs) run
  /// as they do on SQLite, and history numbers are dense and in commit order. Waiting for the
  /// lock, or any row lock, gives up after `lockTimeout` (SQLSTATE `55P03`). Committed when
  /// `body` returns, rolled back when it throws.
  package func writeTransaction<T>(lockTimeout: Duration, _ body: () throws -> T) throws -> T {
    defer { (writeLockTimeout, lockedCounter) = (nil, nil) }
    return try committing(begin: { try beginWriting(lockTimeout: lockTimeout) }, body)
  }

  /// The history counter row as the write transaction in progress locked it: the last number
  /// and the last change row ID given out. nil outside a write transaction.
  package private(set) var lockedCounter: (last: Int64, lastChange: Int64)?

  /// Begins a write transaction and takes the store's write lock, in one round trip.
  private func beginWriting(lockTimeout: Duration) throws {
    // PostgreSQL takes up to 2^31 - 1 ms (about 24 days); 0 would mean no timeout at all.
    let milliseconds = Int64(min(Double(Int32.max), max(1, (lockTimeout / .milliseconds(1)).rounded(.up))))
    // With a model to check, the hash is read by a statement of its own after the lock is had:
    // at READ COMMITTED it sees every commit before it, a migration's too.
    let lock =
      expectedModel == nil
      ? "SELECT last, last_change FROM _history_counter WHERE id = 1 FOR UPDATE"
      : "SELECT 1 FROM _history_counter WHERE id = 1 FOR UPDATE; SELECT last, last_change, ("
        + Self.modelHashSQL + ") FROM _history_counter WHERE id = 1"
    let result = try checked(
      PQexec(
        connection, "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = \(milliseconds); " + lock))
    defer { PQclear(result) }
    let rows = Self.rows(of: result).rows
    guard let row = rows.first, row.count >= 2, let last = row[0].flatMap({ Int64($0) }),
      let lastChange = row[1].flatMap({ Int64($0) })
    else {
      throw PostgreSQLError(kind: .statement, message: "the store's history counter is missing")
    }
    if expectedModel != nil { try checkModel(row.count > 2 ? row[2] : nil) }
    lockedCounter = (last, lastChange)
    writeLockTimeout = lockTimeout
  }

  /// Inside a transaction begun otherwise (an open's): takes the store's write lock, the
  /// history counter row's, waiting up to `timeout`, so that no write transaction of the store
  /// commits before this one ends.
  func lockWrites(timeout: Duration) throws(PostgreSQLError) {
    let milliseconds = Int64(min(Double(Int32.max), max(1, (timeout / .milliseconds(1)).rounded(.up))))
    try execute(
      script: "SET LOCAL lock_timeout = \(milliseconds); SELECT 1 FROM _history_counter WHERE id = 1 FOR UPDATE")
  }

  /// Inside a migration's transaction, after `lockWrites(timeout:)`: waits, up to the same
  /// timeout, until no read transaction of the store's connections is under way, and keeps
  /// new ones waiting until this transaction ends (their `_metadata` lock).
  func lockAgainstReaders() throws(PostgreSQLError) {
    try execute(script: "LOCK TABLE _metadata IN ACCESS EXCLUSIVE MODE")
  }

  /// Undoes the write transaction's writes and begins it again, holding the write lock again:
  /// what comes next sees every commit made in between (a save that met a conflict starts
  /// over). A statement that failed leaves PostgreSQL's transaction aborted; this is how it
  /// goes on.
  package func undoWrites() throws {
    if savepointDepth > 0 {
      try execute(script: "ROLLBACK TO SAVEPOINT typedstore")
      return
    }
    lockedCounter = nil
    guard let lockTimeout = writeLockTimeout else {
      throw PostgreSQLError(kind: .statement, message: "undoWrites() outside a write transaction")
    }
    try execute(script: "ROLLBACK")
    try beginWriting(lockTimeout: lockTimeout)
  }

  /// The savepoints `savepoint(_:)` has open.
  private var savepointDepth = 0

  /// Runs `body` in a savepoint of the transaction in progress (a migration's): released when
  /// it returns, rolled back to when it throws; `undoWrites()` inside it rolls back to it.
  package func savepoint<T>(_ body: () throws -> T) throws -> T {
    try execute(script: "SAVEPOINT typedstore")
    savepointDepth += 1
    defer { savepointDepth -= 1 }
    do {
      let result = try body()
      try execute(script: "RELEASE SAVEPOINT typedstore")
      return result
    } catch {
      try execute(script: "ROLLBACK TO SAVEPOINT typedstore; RELEASE SAVEPOINT typedstore")
      throw error
    }
  }

  /// Runs `body` in a read-only transaction at REPEATABLE READ, so that its statements see
  /// one snapshot; inside a transaction already, `body` runs in it.
  package func readTransaction<T>(_ body: () throws -> T) throws -> T {
    try reconnectIfLost()
    guard PQtransactionStatus(connection) == PQTRANS_IDLE else { return try body() }
    let begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    do {
      if expectedModel == nil {
        try execute(script: begin)
      } else {
        // The transaction's snapshot is taken by its first query: the hash's, after the lock.
        let result = try checked(PQexec(connection, begin + "; " + Self.readLockSQL + "; " + Self.modelHashSQL))
        let stored = Self.rows(of: result).rows.first?.first ?? nil
        PQclear(result)
        try checkModel(stored)
      }
      let value = try body()
      try execute(script: "COMMIT")
      return value
    } catch {
      _ = try? execute(script: "ROLLBACK")
      throw error
    }
  }

  /// Runs `sql`, one or more statements with no parameters.
  package func execute(script sql: String) throws(PostgreSQLError) {
    PQclear(try checked(PQexec(connection, sql)))
  }

  /// Makes `schema` (letters, digits and `_`) where the connection's statements find the
  /// tables they name without a schema: a store's tables, for the SQL both engines run. The
  /// session holds a shared advisory lock of the schema from then on, so that the store is
  /// not destroyed under it (`PostgreSQLStoreOpener.destroy(at:)`).
  package func use(schema: String) throws(PostgreSQLError) {
    guard !schema.isEmpty, schema.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
      throw PostgreSQLError(kind: .statement, message: "\(schema) is not a schema name")
    }
    // The shared lock says the store is in use while the session lasts (`destroy(at:)`).
    try execute(
      script: "SET search_path TO \"\(schema)\"; "
        + "SELECT pg_advisory_lock_shared(hashtext('typedstore-in-use'), hashtext('typedstore:\(schema)'))")
    self.schema = schema
  }

  /// Starts listening on `channel` (a name made of letters, digits and `_`).
  package func listen(_ channel: String) throws(PostgreSQLError) {
    guard !channel.isEmpty, channel.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
      throw PostgreSQLError(kind: .statement, message: "\(channel) is not a channel name")
    }
    try execute("LISTEN \"\(channel)\"")
  }

  /// The notifications that arrived, waiting up to `timeout` for the first when none has:
  /// the server delivers a transaction's notifications when it commits, in commit order.
  package func notifications(waitingUpTo timeout: Duration) throws(PostgreSQLError) -> [PostgreSQLNotification] {
    let deadline = ContinuousClock.now + max(timeout, .zero)
    while true {
      let received = try drainNotifications()
      let remaining = deadline - ContinuousClock.now
      guard received.isEmpty, remaining > .zero else { return received }
      // Whole milliseconds, rounded up, at most a minute per poll (the loop goes on after it).
      let (seconds, attoseconds) = min(remaining, .seconds(60)).components
      let milliseconds = Int32(seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
      var poller = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
      if poll(&poller, 1, milliseconds) < 0 && errno != EINTR {
        throw PostgreSQLError(kind: .connection, message: "poll failed: \(String(cString: strerror(errno)))")
      }
    }
  }

  private func drainNotifications() throws(PostgreSQLError) -> [PostgreSQLNotification] {
    // A server that shuts down sends its reason and closes: the input reads, and the connection
    // is gone (its socket would then poll as readable forever).
    guard PQconsumeInput(connection) == 1, PQstatus(connection) == CONNECTION_OK else {
      throw PostgreSQLError(kind: .connection, message: Self.message(PQerrorMessage(connection)))
    }
    var received: [PostgreSQLNotification] = []
    while let notification = PQnotifies(connection) {
      received.append(
        PostgreSQLNotification(
          channel: String(cString: notification.pointee.relname), payload: String(cString: notification.pointee.extra),
          processID: notification.pointee.be_pid))
      PQfreemem(notification)
    }
    return received
  }

  // MARK: - Helpers

  private static func rows(of result: OpaquePointer) -> PostgreSQLRows {
    let columnCount = PQnfields(result)
    let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
    let rows = (0..<PQntuples(result)).map { row in
      (0..<columnCount).map { column -> String? in
        PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
      }
    }
    return PostgreSQLRows(columns: columns, rows: rows)
  }

  static func message(_ text: UnsafePointer<CChar>?) -> String {
    text.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
  }

  /// Calls `body` with the parameters as C strings (NULL for nil), alive for the call. (A NUL
  /// character would end a C string early; `execute` refuses such a value first.)
  static func withCStrings<R>(
    _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R
  ) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { for copy in copies { free(copy) } }
    let pointers = copies.map { $0.map { UnsafePointer($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
  }
}

extension PostgreSQLConnection: DatabaseConnection {
  package var dialect: SQLDialect { .postgreSQL }

  /// A unique violation (`23505`) of one of the store's unique indexes (named `_unique_…` by
  /// `TableLayout`, and kept so when shortened), not of a primary key: as SQLite's
  /// `SQLITE_CONSTRAINT_UNIQUE`.
  package func isUniqueViolation(_ error: any Error) -> Bool {
    guard let error = error as? PostgreSQLError, error.sqlState == "23505" else { return false }
    return (error.constraint ?? "").hasPrefix("_unique_")
  }
}
