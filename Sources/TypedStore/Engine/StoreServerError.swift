/// A failure of the database server that keeps a store of another engine than SQLite (a
/// PostgreSQL server), or of the connection to it: what ``SQLiteError`` is to a store file.
/// Reads, saves and batch requests throw it as they are, with nothing written; a connection
/// that was lost connects again at its next transaction.
///
/// ```swift
/// do { try context.save() }
/// catch let error as StoreServerError where error.isBusy { retryLater() }       // the write lock
/// catch let error as StoreServerError where error.isConnectionLost { reportOutage(error) }
/// ```
public struct StoreServerError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What failed.
  public enum Kind: Sendable, Equatable {
    /// The connection could not be made, or was lost (the server restarted, the network went).
    case connection
    /// The server refused a statement (`sqlState` says why).
    case statement
    /// The model cannot be stored on the server as it is (a name longer than it keeps).
    case model
    /// A value cannot be written to, or read from, a column of its type as given.
    case value
  }

  /// What failed: the connection, a statement, the model, or a value.
  public package(set) var kind: Kind
  /// The SQLSTATE the server sent (`55P03` for a lock not had in time, `23505` for a unique
  /// violation, `57P01` for a server shutting down), when it sent one.
  public package(set) var sqlState: String?
  /// What the server or libpq said, as it said it.
  public package(set) var message: String
  /// The constraint a row broke (`Note_pkey`), when the server named one.
  public package(set) var constraint: String?
  /// The table of the row, when the server named one.
  public package(set) var table: String?

  package init(
    kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil, table: String? = nil
  ) {
    self.kind = kind
    self.sqlState = sqlState
    self.message = message
    self.constraint = constraint
    self.table = table
  }

  /// Whether the connection to the server could not be made or was lost: nothing of the
  /// transaction was committed (unless it was lost during its `COMMIT`, which the store's
  /// history tells), and the next transaction connects again.
  public var isConnectionLost: Bool { kind == .connection }

  /// Whether the store's write lock, or a row's lock, was not had within
  /// `StoreOptions.busyTimeout` (SQLSTATE `55P03`): as ``SQLiteError/isBusy`` on a file.
  public var isBusy: Bool { sqlState == "55P03" }

  public var description: String {
    "server \(kind) error" + (sqlState.map { " \($0)" } ?? "") + ": \(message)"
  }
}
