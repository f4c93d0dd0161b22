import Foundation

/// Why history cannot be read as asked. Never a silent partial answer.
public enum HistoryError: Error, Sendable, Equatable, CustomStringConvertible {
  /// History after the token was deleted: the oldest transaction still kept is
  /// `horizon.transactionNumber + 1`. Start again from a fresh fetch of the store's data.
  case tokenExpired(horizon: HistoryToken)
  /// The token belongs to another store.
  case foreignStore(expected: UUID, found: UUID)
  /// A range whose end comes before its start, or a negative limit.
  case invalidRequest(String)
  /// The store was opened with `StoreOptions.recordsHistory` off: there is no history to
  /// follow or prune.
  case historyNotRecorded
  /// A consumer name that is empty or longer than 200 characters.
  case invalidConsumerName(String)
  /// No consumer of that name is registered in the store.
  case unknownConsumer(String)
  /// A consumer's lease must be longer than zero.
  case invalidLease(Duration)
  /// A transactional hook's effects were not saved: the consumer's checkpoint is already at
  /// or past the transaction (another merger of the same name, in this process or another,
  /// processed it), or the consumer was removed.
  case consumerMovedOn(consumer: String, transactionNumber: Int64)
  /// A ``HistoryMerger`` started with no context, no model actor and no hook: it would move
  /// its checkpoint past every transaction and do nothing else. Give it contexts, or add a
  /// hook before `start()`.
  case nothingToMerge(consumer: String)
  /// `HistoryMerger.addHook(before:_:)` named a hook the merger does not have (it was
  /// removed).
  case unknownHook(String)

  /// A sentence for logs and error messages.
  public var description: String {
    switch self {
    case .tokenExpired(let horizon):
      "the history asked for was deleted: the oldest transaction kept is \(horizon.transactionNumber + 1); "
        + "read after the horizon (historyHorizon()) once your data is refreshed"
    case .foreignStore(let expected, let found): "the token belongs to store \(found), not \(expected)"
    case .invalidRequest(let reason): "invalid history request: \(reason)"
    case .historyNotRecorded: "the store was opened with recordsHistory off: there is no history to read"
    case .invalidConsumerName(let name): "\"\(name)\" is not a consumer name (1 to 200 characters)"
    case .unknownConsumer(let name): "no consumer named \"\(name)\" is registered in the store"
    case .invalidLease(let lease): "a consumer's lease must be longer than zero (got \(lease))"
    case .consumerMovedOn(let consumer, let number):
      "consumer \"\(consumer)\" is already at or past transaction \(number), or was removed: another merger of "
        + "that name processed it, so its effects were not saved again"
    case .unknownHook(let hook): "the merger has no \(hook): it was removed, or added to another merger"
    case .nothingToMerge(let consumer):
      "consumer \"\(consumer)\" has no context, model actor or hook: it would pass over every transaction; "
        + "give it contexts or add a hook before start()"
    }
  }
}
