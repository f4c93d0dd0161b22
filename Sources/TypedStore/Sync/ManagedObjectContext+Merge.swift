// Merging committed transactions into a context: Sync adds it to the type Context declares.
extension ManagedObjectContext {
  /// Brings the context's objects up to date with a committed transaction.
  ///
  /// - Updated rows: registered objects that are loaded are reloaded from the store, their
  ///   unsaved changes kept on top, and their row version moves to the one read (so a later
  ///   save conflicts only if the row changes again). Faults load the new values when read.
  /// - Deleted rows: registered objects leave the context (`isDeleted` becomes true); unsaved
  ///   changes they had are listed in the result's `discardedChanges`.
  /// - Inserted rows are not loaded: the next fetch sees them.
  ///
  /// Merging the same transaction again changes nothing. A row updated by the transaction
  /// and deleted by a later one (a merger that lags behind) is treated as deleted.
  ///
  /// ```swift
  /// for await changes in container.storeChanges() {
  ///   await context.perform { context in _ = context.mergeChanges(changes) }
  /// }
  /// ```
  ///
  /// A transaction read from history merges the same way, as the ``StoreChanges`` its commit
  /// published:
  ///
  /// ```swift
  /// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
  ///   context.mergeChanges(StoreChanges(transaction))
  /// }
  /// ```
  @discardableResult
  public func mergeChanges(_ changes: StoreChanges) -> MergeResult { state.mergeChanges(changes) }

  /// Merges transactions in order, in one visit to the context's executor.
  func mergeChanges(_ transactions: [HistoryTransaction]) {
    // With no object registered and no change observer, a merge has nothing to bring up to
    // date and no one to tell: building each transaction's changes (sets of IDs) was most of
    // a consumer's catch-up into a context that holds nothing.
    guard !state.registered.isEmpty || !state.changeObservers.isEmpty else { return }
    for transaction in transactions { state.mergeChanges(StoreChanges(transaction)) }
  }
}

extension ManagedObjectContext: MergeTarget {
  nonisolated func enqueueMerge(_ changes: StoreChanges) { enqueue { $0.mergeChanges(changes) } }
  nonisolated func enqueueRefreshAllObjects() { enqueue { $0.refreshAllObjects() } }
}
