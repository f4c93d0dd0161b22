import Foundation

/// An object whose deletion a `.deny` relationship refused.
///
/// ```swift
/// catch StoreError.deleteDenied(let denials) {
///   for denial in denials { print(denial.objectID, denial.relationship, denial.relatedIDs) }
/// }
/// ```
public struct DeleteDenial: Sendable, Equatable, CustomStringConvertible {
  /// The object that was to be deleted.
  public var objectID: AnyManagedID
  /// Its relationship whose delete rule is `.deny`.
  public var relationship: String
  /// The related objects that block the deletion.
  public var relatedIDs: [AnyManagedID]

  /// A sentence for logs and error messages.
  public var description: String {
    "\(objectID) is still related through \(relationship) to \(relatedIDs.map(\.description).joined(separator: ", "))"
  }
}
