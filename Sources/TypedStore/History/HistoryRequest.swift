import Foundation

/// Which history to fetch: a start (after a token or a date), an optional end, filters and a
/// page size. Transactions always come in transaction order.
///
/// ```swift
/// var request = HistoryRequest(after: token)
/// request.excludedAuthors = ["importer"]
/// request.entities = [Note.self]
/// request.transactionLimit = 100
/// let page = try container.fetchHistory(request)
/// ```
public struct HistoryRequest: Sendable {
  /// Where the requested history starts.
  public enum Start: Sendable, Hashable {
    /// From the first transaction the store ever recorded (throws if any was deleted).
    case beginning
    /// After the transaction the token names.
    case after(HistoryToken)
    /// After the transactions committed at or before the date.
    case afterDate(Date)
  }

  /// Where the history starts.
  public var start: Start
  /// The last transaction to include, if any.
  public var end: HistoryToken?
  /// Only transactions committed at or before this date, if any.
  public var endDate: Date?
  /// Only transactions by these authors (nil: any author).
  public var authors: Set<String>?
  /// No transactions by these authors (e.g. the consumer's own).
  public var excludedAuthors: Set<String> = []
  /// Only changes of these entities and their subentities (nil: every entity). Transactions
  /// with no such change are left out.
  public var entities: [ManagedObject.Type]?
  /// Only changes of the entities with these names and their subentities (nil: every
  /// entity), for tools without the application's classes. With `entities` too, both count.
  public var entityNames: Set<String>?
  /// At most this many transactions (nil: all). Fetch the next page after the last one's
  /// token.
  public var transactionLimit: Int?

  /// History from `start` (the beginning by default).
  public init(start: Start = .beginning) {
    self.start = start
  }

  /// History after `token`.
  public init(after token: HistoryToken) {
    self.start = .after(token)
  }

  /// History committed after `date`.
  public init(after date: Date) {
    self.start = .afterDate(date)
  }

  /// History after `start`, up to and including `end`.
  public init(after start: HistoryToken, through end: HistoryToken) {
    self.start = .after(start)
    self.end = end
  }
}
