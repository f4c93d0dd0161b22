import Foundation

/// A position in a store's history: the number of the last transaction seen, bound to the
/// store it came from.
///
/// ```swift
/// let token = try container.currentHistoryToken()
/// // ... later, in this process or another:
/// let missed = try container.fetchHistory(HistoryRequest(after: token))
/// ```
///
/// Tokens are ordered by transaction number and `Codable`, so a consumer can keep its
/// position in a file or in the store. A token names no transaction that can disappear: it
/// stays valid until history after it is deleted (then reading after it throws
/// `HistoryError.tokenExpired`).
public struct HistoryToken: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
  /// The UUID of the store whose history this is a position in.
  public let storeIdentifier: UUID
  /// The number of the last transaction before the position (0: before any transaction).
  public let transactionNumber: Int64

  /// A token for a position you stored yourself; tokens normally come from the store.
  public init(storeIdentifier: UUID, transactionNumber: Int64) {
    self.storeIdentifier = storeIdentifier
    self.transactionNumber = transactionNumber
  }

  /// Orders by transaction number; tokens of different stores are ordered by store UUID first
  /// so that the order stays total, but comparing them means nothing.
  public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
    if lhs.storeIdentifier != rhs.storeIdentifier {
      return lhs.storeIdentifier.uuidString < rhs.storeIdentifier.uuidString
    }
    return lhs.transactionNumber < rhs.transactionNumber
  }

  /// A sentence for logs and error messages.
  public var description: String { "HistoryToken(\(transactionNumber) in \(storeIdentifier))" }

  /// The token as text, `<store UUID>:<transaction number>`: what `typedstore history export`
  /// prints and `--after` takes, and what a script keeps to resume.
  ///
  /// ```swift
  /// let text = token.stringRepresentation          // "6F9619FF-8B86-D011-B42D-00C04FC964FF:42"
  /// let same = HistoryToken(stringRepresentation: text)
  /// ```
  public var stringRepresentation: String { "\(storeIdentifier.uuidString):\(transactionNumber)" }

  /// Parses `stringRepresentation`'s form; nil for any other text.
  public init?(stringRepresentation text: String) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let store = UUID(uuidString: String(parts[0])),
      let number = Int64(parts[1]), number >= 0
    else { return nil }
    self.init(storeIdentifier: store, transactionNumber: number)
  }
}
