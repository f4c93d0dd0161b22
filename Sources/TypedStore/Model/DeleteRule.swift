import Foundation

/// What happens to related objects when an object is deleted (Core Data's delete rules).
public enum DeleteRule: String, Sendable, Codable, CaseIterable {
  /// The related objects stay; their inverse no longer points at the deleted object.
  case nullify
  /// The related objects are deleted too, with their own rules, loaded or not.
  case cascade
  /// The save throws `StoreError.deleteDenied` while any object is related: nothing changes.
  case deny
}
