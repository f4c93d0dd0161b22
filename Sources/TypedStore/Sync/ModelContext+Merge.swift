// Merging committed transactions into a model context.
extension ModelContext {
  /// Merges a committed transaction (a transaction read from history as
  /// `StoreChanges(transaction)`); see ``ManagedObjectContext/mergeChanges(_:)``.
  ///
  /// ```swift
  /// modelContext.mergeChanges(changes)
  /// ```
  @discardableResult
  public func mergeChanges(_ changes: StoreChanges) -> MergeResult { state.mergeChanges(changes) }
}

extension ModelExecutor: MergeTarget {
  func enqueueMerge(_ changes: StoreChanges) { post { $0.mergeChanges(changes) } }
  func enqueueRefreshAllObjects() { post { $0.refreshAllObjects() } }
}
