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
/// objects involved hold the row as committed (reloaded). What each policy does:
///
/// | the object was | the row, since it was read | `.error` | `.storeTrump` | `.objectTrump` | `.overwrite` | `.rollback` |
/// |---|---|---|---|---|---|---|
/// | updated | updated | throws | attributes both changed keep the store's value; the object's other changes are saved | attributes both changed take the object's value; attributes only the store changed keep it | every attribute takes the object's value | nothing of the object is saved; it takes the store's values |
/// | updated | deleted | throws | the deletion stands: the object is deleted | the row is inserted again with the object's values | the row is inserted again with the object's values | the deletion stands: the object is deleted |
/// | deleted | updated | throws | the row stays (the object takes its values) | the row is deleted | the row is deleted | the row stays (the object takes its values) |
/// | deleted | deleted | no conflict: the row is gone, as asked | | | | |
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
