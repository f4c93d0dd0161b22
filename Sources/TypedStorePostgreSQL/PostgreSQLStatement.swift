import CLibPQ
import Foundation
import TypedStore

/// A statement prepared on one connection, shaped as the SQLite engine's `Statement` is: bind
/// `PrimitiveValue`s, run, step through the rows and read their values, and how many rows a
/// command changed.
///
/// Values travel in PostgreSQL's text format, written and read by the type the server gives
/// each parameter and column (`PostgreSQLValues`), so that a value reads back as the same
/// `PrimitiveValue` an SQLite store gives: a `Bool` column reads as an integer 0 or 1, a
/// `uuid` as its 16 bytes, a `numeric` as its text. The rows of a run are held in memory until
/// the next run.
package final class PostgreSQLStatement {
  let name: String
  let sql: String
  /// The type of each parameter, as the server inferred it when it prepared the statement.
  let parameterTypes: [Oid]
  private unowned let connection: PostgreSQLConnection
  private var parameters: [String?]
  private var result: OpaquePointer?
  private var row: Int32 = -1
  private var columnTypes: [Oid] = []

  init(name: String, sql: String, parameterTypes: [Oid], connection: PostgreSQLConnection) {
    self.name = name
    self.sql = sql
    self.parameterTypes = parameterTypes
    self.connection = connection
    self.parameters = Array(repeating: nil, count: parameterTypes.count)
  }

  deinit { clearResult() }

  /// Binds `value` to parameter `index` (from 1), written for the parameter's type.
  ///
  /// - Throws: `PostgreSQLError` (`.value`) for a value the parameter's type cannot hold as
  ///   given: text with a NUL character, bytes for a `uuid` that are not 16, a number for text.
  package func bind(_ value: PrimitiveValue, at index: Int32) throws(PostgreSQLError) {
    guard index >= 1, Int(index) <= parameters.count else {
      throw PostgreSQLError(kind: .value, message: "parameter \(index) of \(parameters.count) in \(sql)")
    }
    parameters[Int(index) - 1] = try PostgreSQLValues.text(of: value, as: parameterTypes[Int(index) - 1])
  }

  package func bind(_ value: Int64, at index: Int32) throws(PostgreSQLError) { try bind(.integer(value), at: index) }
  package func bind(_ value: Double, at index: Int32) throws(PostgreSQLError) { try bind(.real(value), at: index) }
  package func bind(_ value: String, at index: Int32) throws(PostgreSQLError) { try bind(.text(value), at: index) }
  package func bind(_ value: Data, at index: Int32) throws(PostgreSQLError) { try bind(.blob(value), at: index) }
  package func bindNull(_ index: Int32) throws(PostgreSQLError) { try bind(.null, at: index) }

  /// Runs the statement with the bound values; its rows are then read with `step()`.
  package func run() throws(PostgreSQLError) {
    clearResult()
    let result = try connection.executePrepared(name, parameters)
    self.result = result
    columnTypes = (0..<PQnfields(result)).map { PQftype(result, $0) }
    // As SQLite's count: rows an INSERT, UPDATE or DELETE wrote (a SELECT's rows are not).
    let command = PQcmdStatus(result).map { String(cString: $0) } ?? ""
    if ["INSERT", "UPDATE", "DELETE", "MERGE"].contains(where: { command.hasPrefix($0 + " ") }) {
      connection.changes = changes
    }
  }

  /// Moves to the next row of the run, running the statement first if it has not run since
  /// its last reset; false after the last row.
  package func step() throws(PostgreSQLError) -> Bool {
    if result == nil { try run() }
    guard let result, row + 1 < PQntuples(result) else { return false }
    row += 1
    return true
  }

  /// How many rows the last run inserted, updated or deleted.
  package var changes: Int {
    guard let result, let text = PQcmdTuples(result) else { return 0 }
    return Int(String(cString: text)) ?? 0
  }

  package var columnCount: Int32 { Int32(columnTypes.count) }

  package func isNull(_ column: Int32) -> Bool {
    guard let result, row >= 0 else { return true }
    return PQgetisnull(result, row, column) == 1
  }

  /// The value of `column` in the current row, read by the column's type.
  package func value(_ column: Int32) throws(PostgreSQLError) -> PrimitiveValue {
    guard let result, row >= 0, column >= 0, column < columnCount else {
      throw PostgreSQLError(kind: .value, message: "no column \(column) in the current row of \(sql)")
    }
    guard PQgetisnull(result, row, column) == 0, let text = PQgetvalue(result, row, column) else { return .null }
    return try PostgreSQLValues.value(of: String(cString: text), as: columnTypes[Int(column)])
  }

  /// Column `column` as an integer: 0 for NULL or a value that is not a number (as SQLite
  /// reads them).
  package func int64(_ column: Int32) -> Int64 {
    switch try? value(column) {
    case .integer(let integer): integer
    case .real(let real): real.isFinite && abs(real) < 9.2e18 ? Int64(real) : 0
    case .text(let text): Int64(text) ?? 0
    default: 0
    }
  }

  /// Column `column` as a number: 0 for NULL or a value that is not a number.
  package func double(_ column: Int32) -> Double {
    switch try? value(column) {
    case .integer(let integer): Double(integer)
    case .real(let real): real
    case .text(let text): Double(text) ?? 0
    default: 0
    }
  }

  /// Column `column` as text: empty for NULL.
  package func string(_ column: Int32) -> String {
    guard let result, row >= 0, PQgetisnull(result, row, column) == 0, let text = PQgetvalue(result, row, column)
    else { return "" }
    return String(cString: text)
  }

  /// Ends the current run and clears the bound values.
  package func reset() {
    clearResult()
    parameters = Array(repeating: nil, count: parameterTypes.count)
  }

  private func clearResult() {
    if let result { PQclear(result) }
    result = nil
    row = -1
    columnTypes = []
  }
}

extension PostgreSQLStatement: DatabaseStatement {}

/// PostgreSQL's text format for the values TypedStore stores, by type OID: what an SQLite
/// store holds as an integer, a real, text or bytes, written and read so that every value
/// comes back as the same `PrimitiveValue`.
enum PostgreSQLValues {
  /// Type OIDs of `pg_type` (fixed by PostgreSQL's catalog).
  static let bool: Oid = 16
  static let bytea: Oid = 17
  static let int8: Oid = 20
  static let int2: Oid = 21
  static let int4: Oid = 23
  static let text: Oid = 25
  static let float4: Oid = 700
  static let float8: Oid = 701
  static let varchar: Oid = 1043
  static let numeric: Oid = 1700
  static let uuid: Oid = 2950

  /// `value` in the text format of type `type`; nil for NULL.
  static func text(of value: PrimitiveValue, as type: Oid) throws(PostgreSQLError) -> String? {
    switch (value, type) {
    case (.null, _): return nil
    case (.integer(let integer), bool): return integer != 0 ? "t" : "f"
    case (.integer(let integer), int2), (.integer(let integer), int4), (.integer(let integer), int8),
      (.integer(let integer), numeric), (.integer(let integer), float4), (.integer(let integer), float8):
      return String(integer)
    case (.real(let real), float4), (.real(let real), float8), (.real(let real), numeric):
      guard real.isFinite else { return real.isNaN ? "NaN" : real < 0 ? "-Infinity" : "Infinity" }
      return "\(real)"
    case (.text(let string), _) where type != bytea && type != uuid:
      guard !string.utf8.contains(0) else {
        throw PostgreSQLError(kind: .value, message: "PostgreSQL text cannot hold a NUL character")
      }
      return string
    case (.blob(let data), bytea):
      return "\\x" + data.hexDigits
    case (.blob(let data), uuid) where data.count == 16:
      let digits = data.hexDigits
      let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
        String(digits.dropFirst(range.lowerBound).prefix(range.count))
      }
      return parts.joined(separator: "-")
    default:
      throw PostgreSQLError(kind: .value, message: "\(value) cannot be stored in a column of type \(name(of: type))")
    }
  }

  /// The value a column of type `type` holds as `text`.
  static func value(of text: String, as type: Oid) throws(PostgreSQLError) -> PrimitiveValue {
    let value: PrimitiveValue?
    switch type {
    case bool: value = text == "t" ? .integer(1) : text == "f" ? .integer(0) : nil
    case int2, int4, int8: value = Int64(text).map { .integer($0) }
    // A float4 reads as the Float it is, widened exactly, as SQLite holds a Float.
    case float4: value = Float(text).map { .real(Double($0)) }
    case float8: value = Double(text).map { .real($0) }
    case bytea: value = text.hasPrefix("\\x") ? Data(hexDigits: text.dropFirst(2)).map { .blob($0) } : nil
    case uuid: value = Data(hexDigits: text.replacingOccurrences(of: "-", with: "")).map { .blob($0) }
    default: value = .text(text)  // text, varchar, numeric (the decimal as written)
    }
    guard let value else {
      throw PostgreSQLError(kind: .value, message: "\(text) is not a value of type \(name(of: type))")
    }
    return value
  }

  private static func name(of type: Oid) -> String {
    let names: [Oid: String] = [
      bool: "boolean", bytea: "bytea", int8: "bigint", int2: "smallint", int4: "integer", text: "text",
      float4: "real", float8: "double precision", varchar: "varchar", numeric: "numeric", uuid: "uuid",
    ]
    return names[type] ?? "OID \(type)"
  }
}
