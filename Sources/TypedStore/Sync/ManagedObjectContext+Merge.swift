extension ManagedObjectContext {
  /// Brings the context's objects up to date with a committed transaction: updated objects
  /// are refreshed (their unsaved changes kept on top), deleted objects are dropped. Objects
  /// the context does not hold are left alone; inserted rows appear in the next fetch.
  ///
  /// ```swift
  /// let result = try context.execute(BatchDeleteRequest<Note>())
  /// // in another context:
  /// other.mergeChanges(changes)   // changes: the StoreChanges of that commit
  /// ```
  public func mergeChanges(_ changes: StoreChanges) {
    guard changes.storeIdentifier == persistentStore.identifier else { return }
    for id in changes.deletedIDs {
      guard let (key, _) = try? state.key(for: id), let object = state.registeredObject(for: key) else { continue }
      state.forgetDeleted(object)
    }
    for id in changes.updatedIDs {
      guard let (key, _) = try? state.key(for: id), let object = state.registeredObject(for: key) else { continue }
      if object.isFault { continue }  // a fault loads the new values when first read
      state.refresh(object, mergeChanges: true)
    }
  }
}
