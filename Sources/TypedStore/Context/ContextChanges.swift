import Foundation

/// The rows a save or a merge touched, by ID.
struct ContextChanges {
  /// Where the changes come from.
  enum Origin {
    /// The context's own save: every row it wrote, and the store's delete rules' changes.
    case save
    /// A merge of other contexts' or processes' transactions.
    case merge
    /// The context's unsaved changes since it last processed them (`processPendingChanges`).
    case pendingChanges
  }
  var origin: Origin = .merge
  /// For a save: the rows the store's delete rules changed beyond the saved objects (which
  /// a live query that follows unsaved changes has seen already).
  var propagated: Set<AnyManagedID> = []
  var inserted: Set<AnyManagedID> = []
  var updated: Set<AnyManagedID> = []
  var deleted: Set<AnyManagedID> = []
  var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

  /// Adds the rows the store's delete rules deleted or updated beyond the saved objects.
  mutating func add(_ propagation: DeletePropagation, storeIdentifier: UUID) {
    for (entityName, keys) in propagation.deleted {
      for key in keys {
        let id = AnyManagedID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(key))
        deleted.insert(id)
        propagated.insert(id)
      }
    }
    for (entityName, keys) in propagation.updated {
      for key in keys {
        let id = AnyManagedID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(key))
        updated.insert(id)
        propagated.insert(id)
      }
    }
  }
}
