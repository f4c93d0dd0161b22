import Foundation

// Where a merger stands, in this process: a typed value and a sequence of its changes.
extension HistoryMerger {
  /// Where a merger stands in this process. Any process can tell where a consumer stands
  /// from the store (`HistoryConsumer.state(newest:horizon:at:)`, `typedstore consumers list`).
  public enum Status: Sendable {
    /// Not started, or stopped by `stop()`.
    case stopped
    /// `start()` is processing what the consumer had not read.
    case catchingUp
    /// Caught up, processing new commits as they come.
    case following
    /// Stopped by an error at a transaction (not processed): a hook's, a merge's, a history
    /// read's, a migration's (`StoreError.modelChanged`). The store records it too
    /// (`HistoryConsumer.failure`), until the consumer processes that transaction. (An
    /// expired checkpoint is an error `start()` throws before it starts: the status stays
    /// `stopped`, and the store's `HistoryConsumer.state` says `expired`.)
    case failed(error: any Error, transactionNumber: Int64)
  }

  /// How far behind the newest transaction a consumer is.
  public struct Lag: Sendable, Equatable {
    /// Transactions committed that the merger has not processed.
    public let transactions: Int64
    /// When the oldest of them was committed; nil when there is none.
    public let oldestUnread: Date?
  }

  /// Where the merger stands now.
  ///
  /// ```swift
  /// if case .failed(let error, let number) = merger.status {
  ///   logger.error("indexer stopped at transaction \(number): \(error)")
  /// }
  /// ```
  public var status: Status {
    state.withLock { state in
      if let error = state.error { return .failed(error: error, transactionNumber: state.failedAt) }
      guard state.isRunning else { return .stopped }
      return state.caughtUp ? .following : .catchingUp
    }
  }

  /// The merger's lag behind the store's newest transaction: how many transactions, and
  /// since when (read from the store now; no date when history the merger has not read was
  /// pruned).
  ///
  /// ```swift
  /// let lag = try merger.lag()
  /// print("\(lag.transactions) behind, since \(lag.oldestUnread.map(String.init(describing:)) ?? "-")")
  /// ```
  public func lag() throws -> Lag {
    let position = checkpoint
    let newest = try store.currentHistoryToken()
    guard newest.transactionNumber > position.transactionNumber else { return Lag(transactions: 0, oldestUnread: nil) }
    var request = HistoryRequest(after: position)
    request.transactionLimit = 1
    // History the merger has not read may have been pruned past (a stale consumer): then the
    // date is unknown, not an error of the lag; any other failure to read is.
    let oldest: Date?
    do {
      oldest = try store.fetchHistory(request).first?.timestamp
    } catch HistoryError.tokenExpired {
      oldest = nil
    }
    return Lag(transactions: newest.transactionNumber - position.transactionNumber, oldestUnread: oldest)
  }

  /// The merger's status now, then each change of it (started, caught up, failed, stopped),
  /// until the sequence is dropped.
  ///
  /// ```swift
  /// for await status in merger.statusUpdates() {
  ///   if case .failed(let error, _) = status { alert(error) }
  /// }
  /// ```
  public func statusUpdates() -> AsyncStream<Status> {
    let (stream, continuation) = AsyncStream<Status>.makeStream()
    let key = state.withLock { state -> UInt64 in
      state.nextListener += 1
      state.statusListeners[state.nextListener] = continuation
      return state.nextListener
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.statusListeners.removeValue(forKey: key) }
    }
    continuation.yield(status)
    return stream
  }

  /// Tells the status listeners the status now.
  func publishStatus() {
    let status = status
    let listeners = state.withLock { Array($0.statusListeners.values) }
    for listener in listeners { listener.yield(status) }
  }
}
