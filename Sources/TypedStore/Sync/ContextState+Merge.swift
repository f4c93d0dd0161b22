extension ContextState {
  /// Merging reads the rows it refreshes in one read transaction. When that snapshot already
  /// holds transactions after the one being merged, they are merged too, from the same
  /// snapshot: the context never shows a row newer than the transactions it has merged, and
  /// `mergedThrough` moves to the snapshot's last transaction. Merging a transaction at or
  /// below `mergedThrough` again changes nothing.
  @discardableResult
  func mergeChanges(_ changes: StoreChanges) -> MergeResult {
    guard changes.storeIdentifier == store.identifier else { return MergeResult() }
    defer {
      notifyChanges(
        ContextChanges(inserted: changes.insertedIDs, updated: changes.updatedIDs, deleted: changes.deletedIDs))
      // As Core Data's merge: the objects it refreshed and deleted are reported at once.
      processPendingChanges()
    }
    isMerging = true
    defer { isMerging = false }
    return merge(
      through: changes.token?.transactionNumber, deleted: changes.deletedIDs, updated: changes.updatedIDs)
  }

  /// Later transactions read from history to catch up within one snapshot, at most; beyond
  /// this, every loaded object is refreshed instead.
  private static let catchUpLimit: Int64 = 1_000

  private func merge(
    through number: Int64?, deleted: some Sequence<AnyManagedID>, updated: some Sequence<AnyManagedID>
  ) -> MergeResult {
    if let number, number <= mergedThrough { return MergeResult() }  // merged already
    guard !registered.isEmpty else { return MergeResult() }  // nothing here to bring up to date
    guard let number, store.options.recordsHistory, let connection = try? reader() else {
      return apply(deleted: deleted, updated: updated)
    }
    do {
      return try connection.readTransaction {
        let newest = try HistoryReader.currentNumber(connection)
        defer { mergedThrough = max(newest, number) }
        guard newest > number else { return apply(deleted: deleted, updated: updated) }
        guard newest - number <= Self.catchUpLimit else { return refreshEverything() }
        var deleted = Set(deleted)
        var updated = Set(updated)
        let request = HistoryRequest(
          after: HistoryToken(storeIdentifier: store.identifier, transactionNumber: number),
          through: HistoryToken(storeIdentifier: store.identifier, transactionNumber: newest))
        let later = try HistoryReader.fetch(
          request, storeIdentifier: store.identifier, model: model, connection: connection)
        for change in later.lazy.flatMap(\.changes) {
          switch change.changeType {
          case .delete: deleted.insert(change.objectID)
          case .update: updated.insert(change.objectID)
          case .insert: break
          }
        }
        return apply(deleted: deleted, updated: updated.subtracting(deleted))
      }
    } catch {
      // The later history is gone (pruned) or unreadable: refresh what is loaded, which
      // brings every object to the snapshot as well.
      return (try? connection.readTransaction { refreshEverything() }) ?? apply(deleted: deleted, updated: updated)
    }
  }

  /// Refreshes every loaded object and reports it.
  private func refreshEverything() -> MergeResult {
    var result = MergeResult()
    for object in registered.values where !object.isFault && object.lifecycle != .invalidated {
      guard let id = anyID(of: object), !object.isInserted else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      refresh(object, mergeChanges: true)
      record(id, edits: edits, in: &result, deleted: object.lifecycle == .invalidated)
    }
    return result
  }

  private func apply(deleted: some Sequence<AnyManagedID>, updated: some Sequence<AnyManagedID>) -> MergeResult {
    var result = MergeResult()
    for id in deleted {
      guard let object = registeredLiveObject(for: id) else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      forgetDeleted(object)
      record(id, edits: edits, in: &result, deleted: true)
    }
    for id in updated {
      guard let object = registeredLiveObject(for: id), !object.isFault else { continue }
      let edits = object.isUpdated ? object.changedAttributeNames : []
      refresh(object, mergeChanges: true)
      record(id, edits: edits, in: &result, deleted: object.lifecycle == .invalidated)  // deleted later
    }
    return result
  }

  private func record(_ id: AnyManagedID, edits: Set<String>, in result: inout MergeResult, deleted: Bool) {
    if deleted {
      result.deleted.insert(id)
      if !edits.isEmpty { result.discardedChanges[id] = edits }
    } else {
      result.refreshed.insert(id)
    }
  }

  /// The registered object for `id`, unless it is gone from the context already.
  private func registeredLiveObject(for id: AnyManagedID) -> ManagedObject? {
    guard let (key, _) = try? key(for: id), let object = registeredObject(for: key),
      object.lifecycle != .invalidated
    else { return nil }
    return object
  }
}
