import CSQLite

/// An error reported by SQLite, with everything needed to act on it.
///
/// ```swift
/// do { try store.check() } catch let error as SQLiteError where error.isBusy { retryLater() }
/// ```
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, ...).
  public let code: Int32
  /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, ...).
  public let extendedCode: Int32
  /// SQLite's message for the failure.
  public let message: String
  /// The statement that failed, when there was one.
  public let sql: String?

  /// An error with SQLite's result code (the primary code is the low byte of `code`).
  public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
    self.code = code & 0xFF
    self.extendedCode = extendedCode ?? code
    self.message = message
    self.sql = sql
  }

  /// True for `SQLITE_BUSY` and `SQLITE_LOCKED`: another connection holds the lock.
  public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
  /// True for a violated constraint (unique, not null, check, foreign key).
  public var isConstraint: Bool { code == SQLITE_CONSTRAINT }
  /// True when the file is not a database or its pages are damaged.
  public var isCorruption: Bool { code == SQLITE_NOTADB || code == SQLITE_CORRUPT }
  /// True for `SQLITE_BUSY` alone (not `SQLITE_LOCKED`): a checkpoint cut short by a reader.
  var isBusyOnly: Bool { code == SQLITE_BUSY }
  /// True for `SQLITE_NOTADB`: the file is not an SQLite database.
  public var isNotADatabase: Bool { code == SQLITE_NOTADB }
  /// True for `SQLITE_CORRUPT`: the database's pages are damaged.
  public var isCorrupt: Bool { code == SQLITE_CORRUPT }
  /// True for `SQLITE_READONLY` and `SQLITE_CANTOPEN`: the file (or its folder, for the
  /// `-wal` and `-shm` files) cannot be written or opened.
  public var isNotWritable: Bool { code == SQLITE_READONLY || code == SQLITE_CANTOPEN }
  /// True for `SQLITE_CONSTRAINT_UNIQUE`: a unique index refused a row. (Swift does not import
  /// the extended codes, macros with a shift, so they are spelled out here.)
  public var isUniqueConstraint: Bool { extendedCode == SQLITE_CONSTRAINT | (8 << 8) }  // SQLITE_CONSTRAINT_UNIQUE
  /// True for `SQLITE_CONSTRAINT_PRIMARYKEY`: a row's primary key is taken.
  public var isPrimaryKeyConstraint: Bool { extendedCode == SQLITE_CONSTRAINT | (6 << 8) }  // _PRIMARYKEY

  /// An `SQLITE_BUSY` error, for code above SQLite that reports (or simulates) a lock held.
  static func busy(_ message: String) -> SQLiteError {
    SQLiteError(code: SQLITE_BUSY, message: message)
  }

  /// An `SQLITE_ERROR` (SQLite's generic error), for code above SQLite that finds the
  /// database not as SQLite left it.
  static func generic(_ message: String) -> SQLiteError {
    SQLiteError(code: SQLITE_ERROR, message: message)
  }

  /// A textual description: the codes, SQLite's message and the statement.
  public var description: String {
    var text = "SQLite error \(code)"
    if extendedCode != code { text += " (extended \(extendedCode))" }
    text += ": \(message)"
    if let sql { text += " — in `\(sql)`" }
    return text
  }
}
