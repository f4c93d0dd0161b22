/// How a save resolves a conflict: an object it updates or deletes whose row another context
/// or process changed or deleted since the object was read.
///
/// ```swift
/// context.mergePolicy = .objectTrump
/// try context.save()   // conflicting attributes take this context's values
/// ```
///
/// Conflicts are found and resolved inside the save's write transaction, so no other writer
/// can commit between the check and the write. After a save that resolved a conflict, the
/// objects involved hold the row as committed (reloaded). What each policy does, by what the
/// object was and what became of its row since it was read:
///
/// - `.error`: throws.
/// - `.storeTrump`:
///   - object updated, row updated: attributes both changed keep the store's value; the
///     object's other changes are saved;
///   - object updated, row deleted: the deletion stands: the object is deleted;
///   - object deleted, row updated: the row stays (the object takes its values).
/// - `.objectTrump`:
///   - object updated, row updated: attributes both changed take the object's value;
///     attributes only the store changed keep it;
///   - object updated, row deleted: the row is inserted again with the object's values;
///   - object deleted, row updated: the row is deleted.
/// - `.overwrite`:
///   - object updated, row updated: every attribute takes the object's value;
///   - object updated, row deleted: the row is inserted again with the object's values;
///   - object deleted, row updated: the row is deleted.
/// - `.rollback`:
///   - object updated, row updated: nothing of the object is saved; it takes the store's values;
///   - object updated, row deleted: the deletion stands: the object is deleted;
///   - object deleted, row updated: the row stays (the object takes its values).
///
/// An object deleted whose row was deleted too is no conflict: the row is gone, as asked.
public enum MergePolicy: Sendable, Hashable, CaseIterable {
  /// The save throws `StoreError.mergeConflict` listing every conflict, and writes nothing.
  case error
  /// Property by property, the store's value wins where both changed (Core Data's
  /// merge-by-property store-trump policy).
  case storeTrump
  /// Property by property, the object's value wins where both changed (Core Data's
  /// merge-by-property object-trump policy).
  case objectTrump
  /// The object's whole state is written over the row.
  case overwrite
  /// The object's changes give way to the store's.
  case rollback
}
