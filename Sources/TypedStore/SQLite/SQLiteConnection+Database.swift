import Foundation

// The SQLite engine's side of the seam (`Engine/Database.swift`).

extension SQLiteConnection: DatabaseConnection {
  var dialect: SQLDialect { .sqlite }

  func execute(script sql: String) throws { try execute(sql) }

  func isUniqueViolation(_ error: any Error) -> Bool {
    (error as? SQLiteError)?.isUniqueConstraint ?? false
  }
}

extension Statement: DatabaseStatement {
  func value(_ column: Int32) -> PrimitiveValue { self.column(column).primitive }
}
