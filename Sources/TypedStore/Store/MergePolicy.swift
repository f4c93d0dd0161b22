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

/// One conflict a save met, as `StoreError.mergeConflict` reports it with the `.error`
/// policy: the object, what it read, what it holds, and what the store holds now.
///
/// ```swift
/// catch StoreError.mergeConflict(let conflicts) {
///   for conflict in conflicts { print(conflict.objectID, conflict.attributes, conflict.storeValues ?? [:]) }
/// }
/// ```
public struct MergeConflict: Sendable, Equatable, CustomStringConvertible {
  /// What happened on each side.
  public enum Kind: Sendable, Equatable {
    /// The object was updated, and the row was updated by another writer.
    case updatedElsewhere
    /// The object was updated, and the row was deleted by another writer.
    case deletedElsewhere
    /// The object was deleted, and the row was updated by another writer.
    case deletedHereUpdatedElsewhere
  }

  /// The object's ID.
  public let objectID: AnyManagedID
  public let kind: Kind
  /// The attributes involved: those the object changed, and those another writer changed.
  public internal(set) var attributes: Set<String>
  /// The values the object read (its snapshot), by attribute.
  public internal(set) var readValues: [String: PrimitiveValue]
  /// The values in the store now, by attribute; nil when the row was deleted.
  public let storeValues: [String: PrimitiveValue]?
  /// The values the object holds in memory, by attribute.
  public internal(set) var objectValues: [String: PrimitiveValue]

  init(objectID: AnyManagedID, kind: Kind, storeValues: [String: PrimitiveValue]?) {
    self.objectID = objectID
    self.kind = kind
    self.storeValues = storeValues
    self.attributes = []
    self.readValues = [:]
    self.objectValues = [:]
  }

  public var description: String {
    let what: String
    switch kind {
    case .updatedElsewhere: what = "was updated here and by another writer"
    case .deletedElsewhere: what = "was updated here and deleted by another writer"
    case .deletedHereUpdatedElsewhere: what = "was deleted here and updated by another writer"
    }
    return "\(objectID) \(what) (attributes: \(attributes.sorted().joined(separator: ", ")))"
  }
}
