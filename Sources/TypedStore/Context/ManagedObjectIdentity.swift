import Foundation

/// Gives every entity class a `managedID` typed by its own class.
@_documentation(visibility: internal)
public protocol ManagedObjectIdentity: AnyObject {}

extension ManagedObject: ManagedObjectIdentity {}

extension ManagedObjectIdentity where Self: ManagedObject {
  /// The object's typed ID: temporary until the object is saved (or given a permanent ID),
  /// then permanent.
  ///
  /// ```swift
  /// let id: ManagedID<Note> = note.managedID
  /// ```
  public var managedID: ManagedID<Self> {
    if keyPathRecorder != nil {
      // A probe finding what a key path reads (`#Predicate { $0.folder?.managedID == id }`).
      recordedIdentityRead = true
      return ManagedID(
        unchecked: AnyManagedID(
          storeIdentifier: ManagedObject.probeStoreIdentifier, entityName: entity?.name ?? "", key: .permanent(0)))
    }
    guard let state = tracker as? ContextState, let id = state.anyID(of: self) else {
      preconditionFailure("TypedStore: \(type(of: self)) has no ID before it is inserted into a context")
    }
    return ManagedID(unchecked: id)
  }
}
