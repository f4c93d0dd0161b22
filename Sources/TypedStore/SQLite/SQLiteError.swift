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

  public var description: String {
    var text = "SQLite error \(code)"
    if extendedCode != code { text += " (extended \(extendedCode))" }
    text += ": \(message)"
    if let sql { text += " — in `\(sql)`" }
    return text
  }
}
