import Foundation

/// The rows a save or a merge touched, by ID.
struct ContextChanges {
  var inserted: Set<AnyManagedID> = []
  var updated: Set<AnyManagedID> = []
  var deleted: Set<AnyManagedID> = []
  var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

  /// Adds the rows the store's delete rules deleted or updated beyond the saved objects.
  mutating func add(_ propagation: DeletePropagation, storeIdentifier: UUID) {
    for (entityName, keys) in propagation.deleted {
      for key in keys {
        deleted.insert(AnyManagedID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(key)))
      }
    }
    for (entityName, keys) in propagation.updated {
      for key in keys {
        updated.insert(AnyManagedID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(key)))
      }
    }
  }
}
