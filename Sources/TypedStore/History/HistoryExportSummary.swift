import Foundation

/// What an export wrote.
public struct HistoryExportSummary: Sendable, Equatable {
  /// Transactions written.
  public var transactions = 0
  /// Changes written (rows inserted, updated or deleted).
  public var changes = 0
  /// The token of the last transaction written: export `after` it to go on where this one
  /// stopped. Nil when nothing was written.
  public var lastToken: HistoryToken?

  /// Nothing written yet.
  public init() {}
}
