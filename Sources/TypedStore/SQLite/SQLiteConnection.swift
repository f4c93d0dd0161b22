import CSQLite
import Foundation

/// One connection to an SQLite file: the only type in TypedStore that calls the C API.
///
/// A connection is not thread-safe by itself. The store keeps its writer connection inside a
/// `Mutex`, and each context owns its own reader connection on its executor, so a connection
/// is only ever used by one thread at a time (SQLite's multi-thread mode, `SQLITE_OPEN_NOMUTEX`).
///
/// Every connection is configured the same way (see `docs/file-format.md`):
/// - `journal_mode=WAL` (set once by the writer when it creates the file; WAL is persistent),
/// - `synchronous=NORMAL`,
/// - no memory-mapped I/O (`mmap_size` stays 0),
/// - `wal_autocheckpoint=0`: SQLite 3.40 carries the WAL-reset bug fixed upstream in 3.51.3,
///   which needs a checkpoint that runs while another connection commits and restarts the WAL.
///   Automatic checkpoints are PASSIVE and can race a commit, so none run; the writer
///   checkpoints in RESTART mode, which holds the writer lock for its whole run.
final class SQLiteConnection {
  enum OpenMode {
    case readOnly
    case readWrite
    case readWriteCreate
  }

  /// The checkpoint modes TypedStore allows: each one takes the writer lock, so no commit can
  /// race it. PASSIVE is deliberately absent.
  enum CheckpointMode {
    case full
    case restart
    case truncate

    var sqliteValue: Int32 {
      switch self {
      case .full: SQLITE_CHECKPOINT_FULL
      case .restart: SQLITE_CHECKPOINT_RESTART
      case .truncate: SQLITE_CHECKPOINT_TRUNCATE
      }
    }
  }

  let handle: OpaquePointer
  let path: String
  // The mutable fields are `@exclusivity(unchecked)`: a connection is used by one thread at a
  // time (see above) and no closure given to their mutating methods reaches them again; the
  // run-time checks cost a one-object save about a dozen calls.
  @exclusivity(unchecked) private var statements: [String: Statement] = [:]
  /// The statements of `PreparedSQL` texts, by their number.
  @exclusivity(unchecked) private var preparedStatements: [Int: Statement] = [:]
  private let walObserver = WALObserver()
  @exclusivity(unchecked) private(set) var busyTimeout: Duration
  /// The busy handler: kept as long as the connection.
  private let busyWait = BusyWait(timeout: .zero)
  /// Kept until the connection is closed: see `CompanionFileCleanup`.
  private let companions: CompanionFileCleanup?

  // MARK: - Opening

  /// Opens `path`. A read-only connection writes no byte of the database, its `-wal` or its
  /// `-shm`: where the `-shm` exists it is opened read-only (`readonly_shm`), so that not even
  /// a read mark or a rebuilt index goes into it; where it does not, SQLite creates it and
  /// an empty `-wal` (reading a WAL database needs both), and `companions` removes them again
  /// once the last connection that shares it has closed.
  init(
    path: String, mode: OpenMode, busyTimeout: Duration = .seconds(5), companions: CompanionFileCleanup? = nil
  ) throws {
    var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    var name = path
    switch mode {
    case .readOnly:
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
      name = Self.readOnlyURI(path, shmExists: FileManager.default.fileExists(atPath: path + "-shm"))
    case .readWrite: flags |= SQLITE_OPEN_READWRITE
    case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
    }
    self.companions = companions
    var handle: OpaquePointer?
    let code = sqlite3_open_v2(name, &handle, flags, nil)
    guard code == SQLITE_OK, let handle else {
      let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
      if let handle { sqlite3_close_v2(handle) }
      throw SQLiteError(code: code, message: message)
    }
    self.handle = handle
    self.path = path
    self.busyTimeout = busyTimeout
    sqlite3_extended_result_codes(handle, 1)
    SwiftStringFunctions.register(on: handle)
    SwiftDecimalFunctions.register(on: handle)
    busyWait.timeout = busyTimeout
    busyWait.install(on: handle)
  }

  deinit {
    statements.removeAll()
    preparedStatements.removeAll()
    sqlite3_close_v2(handle)
  }

  /// The URI of a read-only open of `path` (sqlite.org, "Uniform Resource Identifiers"):
  /// `mode=ro`, and `readonly_shm=1` when the `-shm` exists.
  static func readOnlyURI(_ path: String, shmExists: Bool) -> String {
    let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/".utf8)
    var escaped = ""
    for byte in path.utf8 {
      escaped += allowed.contains(byte) ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
    }
    return "file:\(escaped)?mode=ro" + (shmExists ? "&readonly_shm=1" : "")
  }

  /// Deletes the `-shm` (and, with `includingWAL`, an empty `-wal`) of `path` when no
  /// connection anywhere has the file open: SQLite's exclusive lock on it says so, and is held
  /// while the files go, so that no process opens the store in between. A `-wal` that holds
  /// frames is never deleted. Does nothing when the lock cannot be had.
  static func removeCompanionFiles(of path: String, includingWAL: Bool) {
    let manager = FileManager.default
    guard manager.fileExists(atPath: path + "-shm") || (includingWAL && manager.fileExists(atPath: path + "-wal")),
      let lock = (try? exclusiveLock(path: path)) ?? nil
    else { return }
    withExtendedLifetime(lock) {
      if includingWAL, (try? manager.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int == 0 {
        try? manager.removeItem(atPath: path + "-wal")
      }
      try? manager.removeItem(atPath: path + "-shm")
    }
  }

  /// Applies the pragmas every TypedStore connection uses. `journal_mode` is only set by the
  /// writer, since it writes to the file.
  func configure(enableWAL: Bool) throws {
    if enableWAL {
      let mode = try scalarText("PRAGMA journal_mode=WAL")
      guard mode?.lowercased() == "wal" else {
        throw SQLiteError(
          code: SQLITE_ERROR, message: "the store could not switch to WAL mode (got \(mode ?? "nil"))",
          sql: "PRAGMA journal_mode=WAL")
      }
    }
    try execute("PRAGMA synchronous=NORMAL")
    try execute("PRAGMA wal_autocheckpoint=0")
    // After the pragma, which clears any WAL hook: ours only records the WAL's size.
    sqlite3_wal_hook(
      handle,
      { context, _, _, pages in
        if let context {
          Unmanaged<WALObserver>.fromOpaque(context).takeUnretainedValue().pages = pages
        }
        return SQLITE_OK
      }, Unmanaged.passUnretained(walObserver).toOpaque())
  }

  /// True when SQLite opened the file read-only: asked for, or because the process cannot
  /// write it (SQLite then falls back to reading without saying so).
  var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

  /// Whether closing the last connection to the file checkpoints the WAL and deletes the
  /// `-wal` and `-shm` files (SQLite's default, done under an exclusive lock on the file, so
  /// never while another connection uses them). Off while a store is being inspected: a
  /// store refused for a damaged WAL must keep its WAL exactly as it was found.
  func setCheckpointsOnClose(_ enabled: Bool) {
    _ = typedstore_db_config_int(handle, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1)
  }

  /// The journal mode, switched to WAL if it is not WAL yet (a new file). Switching writes
  /// the file's header, so it waits for other connections like a write, up to `deadline`.
  func enableWAL(deadline: ContinuousClock.Instant) throws {
    if try scalarText("PRAGMA journal_mode")?.lowercased() == "wal" { return }
    let clock = ContinuousClock()
    while true {
      do {
        let mode = try scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
          throw SQLiteError(
            code: SQLITE_ERROR, message: "the store could not switch to WAL mode (got \(mode ?? "nil"))",
            sql: "PRAGMA journal_mode=WAL")
        }
        return
      } catch let error as SQLiteError where error.isBusy && clock.now < deadline {
        Thread.sleep(forTimeInterval: 0.001)
      }
    }
  }

  /// Whether another connection, in this process or another, has the file open: tried by
  /// taking SQLite's exclusive lock on it without waiting, on a connection of its own. WAL
  /// connections hold a shared lock for as long as they are open, so this sees idle ones too.
  /// Returns the connection still holding the lock when nobody else has the file (the caller
  /// keeps it for as long as it needs the file to itself), or nil when someone does.
  static func exclusiveLock(path: String) throws -> SQLiteConnection? {
    let connection = try SQLiteConnection(path: path, mode: .readWrite, busyTimeout: .zero)
    connection.setCheckpointsOnClose(false)
    do {
      try connection.execute("PRAGMA locking_mode=EXCLUSIVE")
      _ = try connection.scalarInt("SELECT count(*) FROM sqlite_master")
      return connection
    } catch let error as SQLiteError where error.isBusy {
      return nil
    }
  }

  func setBusyTimeout(_ timeout: Duration) {
    busyTimeout = timeout
    busyWait.timeout = timeout
  }

  // MARK: - Statements

  /// Runs one or more statements that take no arguments.
  func execute(_ sql: String) throws {
    var message: UnsafeMutablePointer<CChar>?
    let code = sqlite3_exec(handle, sql, nil, nil, &message)
    if code != SQLITE_OK {
      let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
      sqlite3_free(message)
      throw SQLiteError(
        code: code, extendedCode: sqlite3_extended_errcode(handle), message: text, sql: sql)
    }
  }

  /// How many statements this connection was asked for: one per query run through
  /// `statement(_:)`, which is how tests count the queries an operation makes.
  @exclusivity(unchecked) private(set) var statementsRequested = 0

  /// A prepared statement for `sql`, reset and ready to bind. Statements are cached per SQL text.
  func statement(_ sql: String) throws -> Statement {
    statementsRequested &+= 1
    return try cachedStatement(sql)
  }

  /// `statement(_:)` for a text made once (`PreparedSQL`): its statement is found by number.
  func statement(prepared sql: PreparedSQL) throws -> Statement {
    statementsRequested &+= 1
    return try preparedStatement(sql)
  }

  /// `statement(prepared:)`, not counted in `statementsRequested` (see `cachedStatement(_:)`).
  private func preparedStatement(_ sql: PreparedSQL) throws -> Statement {
    if let cached = preparedStatements[sql.number] {
      cached.reset()
      return cached
    }
    let statement = try Statement(connection: self, sql: sql.text)
    preparedStatements[sql.number] = statement
    return statement
  }

  /// `statement(_:)` for the statements that frame a query rather than make one (`BEGIN`,
  /// `COMMIT`, the schema check): not counted in `statementsRequested`.
  private func cachedStatement(_ sql: String) throws -> Statement {
    if let cached = statements[sql] {
      cached.reset()
      return cached
    }
    let statement = try Statement(connection: self, sql: sql)
    statements[sql] = statement
    return statement
  }

  /// The first column of the first row, as text, or nil.
  func scalarText(_ sql: String) throws -> String? {
    let statement = try statement(sql)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(0) else { return nil }
    return statement.string(0)
  }

  /// The first column of the first row, as an integer, or nil.
  func scalarInt(_ sql: String) throws -> Int64? {
    let statement = try statement(sql)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(0) else { return nil }
    return statement.int64(0)
  }

  /// SQLite's `PRAGMA data_version`: changes when any other connection, in this process or
  /// another, commits to the file. A query of the connection's own state: no I/O.
  func dataVersion() throws -> Int64 {
    try scalarInt("PRAGMA data_version") ?? 0
  }

  /// SQLite's schema cookie (`PRAGMA schema_version`): a number in the file's header that
  /// every schema change (`CREATE`, `ALTER`, `DROP`, `VACUUM`) raises by one, the same for
  /// every connection. Reading it takes the snapshot of the transaction it runs in.
  func schemaVersion() throws -> Int64 {
    let statement = try cachedStatement("PRAGMA schema_version")
    defer { statement.reset() }
    return try statement.step() ? statement.int64(0) : 0
  }

  /// Called with the connection at the start of every transaction of `readTransaction` and
  /// `writeTransaction`, before their body: the store checks there, on the transaction's own
  /// snapshot (and, for a write, under the write lock), that the file still has the schema it
  /// was opened with. What it throws ends the transaction, which has then read and written
  /// nothing.
  var transactionCheck: ((SQLiteConnection) throws -> Void)?

  /// Rows changed by the last INSERT, UPDATE or DELETE on this connection.
  var changes: Int { Int(sqlite3_changes64(handle)) }

  /// The rowid of the last row this connection inserted.
  var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

  var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

  /// The main database's data version (`SQLITE_FCNTL_DATA_VERSION`): it moves with every
  /// commit of this connection, and when the connection begins a transaction after another
  /// connection (of any process) committed. Unlike `PRAGMA data_version`, no statement runs.
  var fileDataVersion: UInt32 {
    var version: UInt32 = 0
    sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version)
    return version
  }

  func error(_ code: Int32, sql: String?) -> SQLiteError {
    SQLiteError(
      code: code, extendedCode: sqlite3_extended_errcode(handle),
      message: String(cString: sqlite3_errmsg(handle)), sql: sql)
  }

  // MARK: - Transactions

  /// Runs `body` in a `BEGIN IMMEDIATE` transaction: the cross-process write lock.
  ///
  /// Waiting for the lock is bounded by `deadline`: SQLITE_BUSY never reaches the caller
  /// before it. SQLite's busy handler does most of the waiting; the loop covers the cases
  /// where SQLite reports BUSY without calling the handler.
  func writeTransaction<T>(deadline: ContinuousClock.Instant, _ body: () throws -> T) throws -> T {
    try retryingBusy(until: deadline, Self.beginImmediate)
    writeDeadline = deadline
    defer { writeDeadline = nil }
    do {
      try transactionCheck?(self)  // under the lock: nothing commits against another schema
      let result = try body()
      try retryingBusy(until: deadline, Self.commit)
      return result
    } catch {
      if isInTransaction { try? execute("ROLLBACK") }
      throw error
    }
  }

  /// The deadline of the `writeTransaction` running now, for `undoWrites()`.
  @exclusivity(unchecked) private var writeDeadline: ContinuousClock.Instant?
  /// How many `savepoint(_:)` calls are running now.
  @exclusivity(unchecked) private var savepointDepth = 0

  /// Runs `body` inside a savepoint of the current transaction: on an error, what `body` did
  /// is rolled back and the transaction goes on as it was before.
  func savepoint<T>(_ body: () throws -> T) throws -> T {
    try statement("SAVEPOINT typedstore").run()  // prepared once
    savepointDepth += 1
    defer { savepointDepth -= 1 }
    do {
      let result = try body()
      try statement("RELEASE typedstore").run()
      return result
    } catch {
      try execute("ROLLBACK TO typedstore")
      try execute("RELEASE typedstore")
      throw error
    }
  }

  /// Undoes every write since the innermost running `savepoint(_:)` began or, outside one,
  /// since the running `writeTransaction` began, and goes on in the same scope.
  ///
  /// Outside a savepoint the transaction is rolled back and begun again: the write lock is
  /// taken again (by the same deadline) and `transactionCheck` runs again, so what comes next
  /// sees every commit made in between. This is how a save that meets a conflict starts over
  /// without a savepoint around every save, which made SQLite copy each page the save changed
  /// into a statement journal (and allocate and free 64 KiB for it).
  func undoWrites() throws {
    if savepointDepth > 0 {
      try execute("ROLLBACK TO typedstore")
      return
    }
    guard let deadline = writeDeadline else { throw SQLiteError.generic("undoWrites() outside a write transaction") }
    try execute("ROLLBACK")
    // A conflict found late in a save still gets a whole busy timeout to take the lock again.
    try retryingBusy(until: max(deadline, .now + busyTimeout), Self.beginImmediate)
    try transactionCheck?(self)
  }

  /// Runs `body` in a deferred read transaction, so that several statements see one snapshot
  /// (the one `transactionCheck` checked first). Inside a transaction already, `body` runs in
  /// it. The statements are prepared once: a context runs one of these for every read.
  func readTransaction<T>(_ body: () throws -> T) throws -> T {
    if isInTransaction { return try body() }  // already one snapshot (the writer's transaction)
    try beginReadTransaction()
    defer { endReadTransaction() }
    return try body()
  }

  /// `readTransaction`'s beginning, for callers that cannot pass a closure: `BEGIN DEFERRED`,
  /// then `transactionCheck` (the transaction is ended again when it throws).
  func beginReadTransaction() throws {
    try cachedStatement("BEGIN DEFERRED").run()
    do {
      try transactionCheck?(self)
    } catch {
      endReadTransaction()
      throw error
    }
  }

  /// Ends a read transaction `beginReadTransaction` began.
  func endReadTransaction() {
    if isInTransaction { try? cachedStatement("COMMIT").run() }
  }

  private static let beginImmediate = PreparedSQL("BEGIN IMMEDIATE")
  private static let commit = PreparedSQL("COMMIT")

  private func retryingBusy(until deadline: ContinuousClock.Instant, _ sql: PreparedSQL) throws {
    let clock = ContinuousClock()
    let original = busyTimeout
    defer { setBusyTimeout(original) }
    while true {
      let remaining = clock.now.duration(to: deadline)
      setBusyTimeout(max(remaining, .milliseconds(1)))
      do {
        try preparedStatement(sql).run()  // prepared once: `BEGIN IMMEDIATE` and `COMMIT` frame every save
        return
      } catch let error as SQLiteError where error.isBusy && clock.now < deadline {
        // A busy BEGIN leaves no transaction; a busy COMMIT keeps it open, so both retry as is.
        Thread.sleep(forTimeInterval: 0.001)
      }
    }
  }

  // MARK: - WAL and checkpoints

  /// Frames in the WAL after this connection's last commit.
  var walPages: Int32 { walObserver.pages }

  /// Copies the WAL into the database file in a mode that holds the writer lock.
  /// Returns the frames in the log and the frames checkpointed.
  @discardableResult
  func checkpoint(_ mode: CheckpointMode) throws -> (log: Int32, checkpointed: Int32) {
    var log: Int32 = 0
    var done: Int32 = 0
    let code = sqlite3_wal_checkpoint_v2(handle, nil, mode.sqliteValue, &log, &done)
    guard code == SQLITE_OK else { throw error(code, sql: "checkpoint") }
    walObserver.pages = 0
    return (log, done)
  }
}

/// Receives SQLite's WAL hook, which reports the WAL size after every commit.
private final class WALObserver {
  var pages: Int32 = 0
}
