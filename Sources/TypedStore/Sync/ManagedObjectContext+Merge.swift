/// What merging one transaction into a context did.
///
/// ```swift
/// let result = context.mergeChanges(changes)
/// for (id, attributes) in result.discardedChanges { log("lost unsaved \(attributes) of \(id)") }
/// ```
public struct MergeResult: Sendable, Equatable {
  /// Registered objects reloaded with the store's values, their unsaved changes kept on top.
  public var refreshed: Set<AnyManagedID> = []
  /// Registered objects that left the context because their rows were deleted.
  public var deleted: Set<AnyManagedID> = []
  /// For each deleted object that had unsaved changes, the attributes whose unsaved values
  /// the deletion discarded: never silently.
  public var discardedChanges: [AnyManagedID: Set<String>] = [:]

  public init() {}
}

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
  ///   await context.perform { context in context.mergeChanges(changes) }
  /// }
  /// ```
  @discardableResult
  public func mergeChanges(_ changes: StoreChanges) -> MergeResult {
    guard changes.storeIdentifier == persistentStore.identifier else { return MergeResult() }
    return merge(deleted: changes.deletedIDs, updated: changes.updatedIDs)
  }

  /// Merges a transaction read from history, as `mergeChanges(_:)` merges a live
  /// notification.
  ///
  /// ```swift
  /// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
  ///   context.mergeChanges(transaction)
  /// }
  /// ```
  @discardableResult
  public func mergeChanges(_ transaction: HistoryTransaction) -> MergeResult {
    guard transaction.token.storeIdentifier == persistentStore.identifier else { return MergeResult() }
    let changes = transaction.changes
    return merge(
      deleted: changes.lazy.filter { $0.kind == .delete }.map(\.objectID),
      updated: changes.lazy.filter { $0.kind == .update }.map(\.objectID))
  }

  /// Merges transactions in order, in one visit to the context's executor.
  func mergeChanges(_ transactions: [HistoryTransaction]) {
    for transaction in transactions { mergeChanges(transaction) }
  }

  private func merge(deleted: some Sequence<AnyManagedID>, updated: some Sequence<AnyManagedID>) -> MergeResult {
    var result = MergeResult()
    guard !state.registered.isEmpty else { return result }  // nothing here to bring up to date
    for id in deleted {
      guard let object = registeredLiveObject(for: id) else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      state.forgetDeleted(object)
      result.deleted.insert(id)
      if !edits.isEmpty { result.discardedChanges[id] = edits }
    }
    for id in updated {
      guard let object = registeredLiveObject(for: id), !object.isFault else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      state.refresh(object, mergeChanges: true)
      if object.lifecycle == .invalidated {  // deleted by a later transaction
        result.deleted.insert(id)
        if !edits.isEmpty { result.discardedChanges[id] = edits }
      } else {
        result.refreshed.insert(id)
      }
    }
    return result
  }

  /// The registered object for `id`, unless it is gone from the context already.
  private func registeredLiveObject(for id: AnyManagedID) -> ManagedObject? {
    guard let (key, _) = try? state.key(for: id), let object = state.registeredObject(for: key),
      object.lifecycle != .invalidated
    else { return nil }
    return object
  }
}
