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

extension ContextState {
  @discardableResult
  func mergeChanges(_ changes: StoreChanges) -> MergeResult {
    guard changes.storeIdentifier == store.identifier else { return MergeResult() }
    return merge(deleted: changes.deletedIDs, updated: changes.updatedIDs)
  }

  @discardableResult
  func mergeChanges(_ transaction: HistoryTransaction) -> MergeResult {
    guard transaction.token.storeIdentifier == store.identifier else { return MergeResult() }
    let changes = transaction.changes
    return merge(
      deleted: changes.lazy.filter { $0.kind == .delete }.map(\.objectID),
      updated: changes.lazy.filter { $0.kind == .update }.map(\.objectID))
  }

  private func merge(deleted: some Sequence<AnyManagedID>, updated: some Sequence<AnyManagedID>) -> MergeResult {
    var result = MergeResult()
    guard !registered.isEmpty else { return result }  // nothing here to bring up to date
    for id in deleted {
      guard let object = registeredLiveObject(for: id) else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      forgetDeleted(object)
      result.deleted.insert(id)
      if !edits.isEmpty { result.discardedChanges[id] = edits }
    }
    for id in updated {
      guard let object = registeredLiveObject(for: id), !object.isFault else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      refresh(object, mergeChanges: true)
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
    guard let (key, _) = try? key(for: id), let object = registeredObject(for: key),
      object.lifecycle != .invalidated
    else { return nil }
    return object
  }
}
