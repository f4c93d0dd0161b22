import Foundation

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
  /// What the two writers did to the object.
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

  /// A sentence for logs and error messages.
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
