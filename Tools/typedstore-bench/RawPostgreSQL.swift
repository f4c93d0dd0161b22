import CLibPQ
import Foundation

/// The raw side of the PostgreSQL rows: libpq's C API, as an application without TypedStore
/// would use it: prepared statements, parameters in text format, one round trip a statement.
final class RawPostgreSQL {
  private let connection: OpaquePointer

  init(url: String) throws {
    guard let connection = PQconnectdb(url), PQstatus(connection) == CONNECTION_OK else {
      throw BenchError.sqlite("libpq could not connect to \(url)")
    }
    self.connection = connection
    PQsetNoticeProcessor(connection, { _, _ in }, nil)  // DROP SCHEMA … CASCADE's notices
  }

  deinit { PQfinish(connection) }

  /// Runs `sql` (no parameters); returns the first column of each row.
  @discardableResult
  func execute(_ sql: String) throws -> [String] {
    try rows(of: PQexec(connection, sql))
  }

  func prepare(_ name: String, _ sql: String) throws {
    try rows(of: PQprepare(connection, name, sql, 0, nil))
  }

  /// Runs the prepared statement `name` with `parameters` in text format.
  func run(_ name: String, _ parameters: [String]) throws {
    let copies = parameters.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    let pointers = copies.map { $0.map { UnsafePointer($0) } }
    _ = try pointers.withUnsafeBufferPointer { values in
      try rows(of: PQexecPrepared(connection, name, Int32(parameters.count), values.baseAddress, nil, nil, 0))
    }
  }

  @discardableResult
  private func rows(of result: OpaquePointer?) throws -> [String] {
    defer { PQclear(result) }
    let status = PQresultStatus(result)
    guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
      throw BenchError.sqlite("PostgreSQL: " + String(cString: PQresultErrorMessage(result)))
    }
    return (0..<PQntuples(result)).map { String(cString: PQgetvalue(result, $0, 0)) }
  }
}
