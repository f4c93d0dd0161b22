import CSQLite
import Foundation

/// A prepared statement owned by one `SQLiteConnection`.
///
/// Statements are cached by their SQL text on the connection; `reset()` clears the bindings
/// before each use, so a cached statement never carries arguments from its last run.
final class Statement {
  let handle: OpaquePointer
  let sql: String
  private unowned let connection: SQLiteConnection

  init(connection: SQLiteConnection, sql: String) throws {
    var handle: OpaquePointer?
    let code = sqlite3_prepare_v3(
      connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
    guard code == SQLITE_OK, let handle else {
      throw connection.error(code, sql: sql)
    }
    self.handle = handle
    self.sql = sql
    self.connection = connection
  }

  deinit { sqlite3_finalize(handle) }

  // MARK: - Binding (indices start at 1, as in SQLite)

  func reset() {
    sqlite3_reset(handle)
    sqlite3_clear_bindings(handle)
  }

  /// Resets the statement to run again, keeping its bindings: for loops that bind every
  /// parameter again on each run (clearing them first is wasted work per row).
  func rewind() {
    sqlite3_reset(handle)
  }

  func bindNull(_ index: Int32) {
    sqlite3_bind_null(handle, index)
  }

  func bind(_ value: Int64, at index: Int32) {
    sqlite3_bind_int64(handle, index, value)
  }

  func bind(_ value: Double, at index: Int32) {
    sqlite3_bind_double(handle, index, value)
  }

  func bind(_ value: String, at index: Int32) {
    var value = value
    _ = value.withUTF8 { bytes in
      if let base = bytes.baseAddress, bytes.count > 0 {
        sqlite3_bind_text64(
          handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self),
          UInt64(bytes.count), sqliteTransient, UInt8(SQLITE_UTF8))
      } else {
        sqlite3_bind_text(handle, index, "", 0, nil)
      }
    }
  }

  func bind(_ value: Data, at index: Int32) {
    _ = value.withUnsafeBytes { bytes in
      if let base = bytes.baseAddress, bytes.count > 0 {
        sqlite3_bind_blob64(handle, index, base, UInt64(bytes.count), sqliteTransient)
      } else {
        sqlite3_bind_zeroblob(handle, index, 0)
      }
    }
  }

  // MARK: - Stepping

  /// Advances to the next row; returns false when the statement is done.
  func step() throws -> Bool {
    let code = sqlite3_step(handle)
    switch code {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default: throw connection.error(code, sql: sql)
    }
  }

  /// Runs a statement that returns no rows.
  func run() throws {
    while try step() {}
  }

  // MARK: - Reading columns (indices start at 0, as in SQLite)

  /// How many columns each row has.
  var columnCount: Int32 { sqlite3_column_count(handle) }

  func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

  func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

  func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }

  func string(_ index: Int32) -> String {
    guard let text = sqlite3_column_text(handle, index) else { return "" }
    let count = Int(sqlite3_column_bytes(handle, index))
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
  }

  /// Whether column `index` is text equal to `string`, compared in place: a loop that reads
  /// the same text in many rows makes one `String`, not one per row.
  func textEquals(_ index: Int32, _ string: String) -> Bool {
    guard let text = sqlite3_column_text(handle, index) else { return false }
    let count = Int(sqlite3_column_bytes(handle, index))
    var string = string
    return string.withUTF8 { $0.elementsEqual(UnsafeBufferPointer(start: text, count: count)) }
  }
}

extension Statement {
  /// Column `index` of the current row, looked up once for its storage class and its value.
  ///
  /// Cheaper than `sqlite3_column_type` followed by `int64(_:)` or `string(_:)`, which look
  /// the column up again on every call. SQLite calls the value "unprotected": reading it is only
  /// safe without the connection's mutex because a connection is used by one thread at a
  /// time. The value is valid until the statement steps or resets.
  @inline(__always)
  func column(_ index: Int32) -> ColumnValue {
    ColumnValue(value: sqlite3_column_value(handle, index))
  }
}

/// A value of the current row of a statement (see `Statement.column(_:)`).
struct ColumnValue {
  let value: OpaquePointer?

  var storageClass: StorageClass {
    switch sqlite3_value_type(value) {
    case SQLITE_INTEGER: .integer
    case SQLITE_FLOAT: .real
    case SQLITE_TEXT: .text
    case SQLITE_BLOB: .blob
    default: .null
    }
  }

  var int64: Int64 { sqlite3_value_int64(value) }

  var double: Double { sqlite3_value_double(value) }

  var string: String {
    guard let text = sqlite3_value_text(value) else { return "" }
    let count = Int(sqlite3_value_bytes(value))  // after sqlite3_value_text, as SQLite asks
    return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
  }

  var data: Data {
    guard let bytes = sqlite3_value_blob(value) else { return Data() }
    let count = Int(sqlite3_value_bytes(value))
    return count > 0 ? Data(bytes: bytes, count: count) : Data()
  }
  /// The value as a `PrimitiveValue`.
  var primitive: PrimitiveValue {
    switch storageClass {
    case .null: .null
    case .integer: .integer(int64)
    case .real: .real(double)
    case .text: .text(string)
    case .blob: .blob(data)
    }
  }
}

/// SQLite's five storage classes, as a column value reports them.
enum StorageClass {
  case null, integer, real, text, blob
}

/// SQLite's `SQLITE_TRANSIENT`: copy the bound bytes before the call returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
