import Foundation

/// One committed transaction of a store's history: one save or one batch request.
///
/// ```swift
/// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
///   print(transaction.transactionNumber, transaction.author ?? "-", transaction.changes.count)
/// }
/// ```
public struct HistoryTransaction: Sendable, Identifiable {
  /// The transaction's number: increasing, never reused, also after history is deleted.
  public let transactionNumber: Int64
  /// The token just after this transaction: fetch after it for what came next.
  public let token: HistoryToken
  /// When the transaction committed (the writer's clock).
  public let timestamp: Date
  /// The context's `transactionAuthor`, or the batch request's author.
  public let author: String?
  /// The name of the context that saved, if it had one.
  public let contextName: String?
  /// The process that wrote the transaction.
  public let processID: Int32
  /// The rows it inserted, updated and deleted.
  public let changes: [HistoryChange]

  /// The transaction number, as `Identifiable` wants it.
  public var id: Int64 { transactionNumber }

  /// The idempotency key of one of this transaction's changes: the store, the transaction's
  /// number and the change's place in it.
  ///
  /// ```swift
  /// let key = transaction.key(for: change)   // "<store UUID>/42/0"
  /// ```
  public func key(for change: HistoryChange) -> HistoryChangeKey {
    HistoryChangeKey(
      storeIdentifier: token.storeIdentifier, transactionNumber: transactionNumber, changeIndex: change.index)
  }
}
