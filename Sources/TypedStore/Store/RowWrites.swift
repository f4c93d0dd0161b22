/// The rows one save writes, as plain values that can cross from a context to the writer.
package struct RowWrites: Sendable {
  package struct Insert: Sendable {
    var entityIndex: Int32
    /// Set when the object already has a permanent ID (`obtainPermanentIDs(for:)`).
    var primaryKey: Int64?
    /// One value per attribute of the entity, in attribute order.
    var values: [PrimitiveValue]
    /// Set by constraint merging: the stored row this insert became, written over with
    /// `values` when `writesOver`, left as it is otherwise.
    var mergedInto: Int64? = nil
    var writesOver = false

    package init(
      entityIndex: Int32, primaryKey: Int64?, values: [PrimitiveValue], mergedInto: Int64? = nil,
      writesOver: Bool = false
    ) {
      self.entityIndex = entityIndex
      self.primaryKey = primaryKey
      self.values = values
      self.mergedInto = mergedInto
      self.writesOver = writesOver
    }
  }

  package struct Update: Sendable {
    var entityIndex: Int32
    var primaryKey: Int64
    /// The row version the object was read at; the update fails if the row moved on.
    var version: Int64
    var slots: [Int32]
    var values: [PrimitiveValue]
    /// The values the object read for `slots`, to tell which of them another writer changed
    /// too; only for the store-trump policy (empty otherwise).
    var originalValues: [PrimitiveValue] = []
    /// Every attribute's value, for the policies that may write the whole object (a row
    /// inserted again, an overwrite); nil otherwise.
    var allValues: [PrimitiveValue]?
    /// Relationships of the object that changed without its row changing (a to-many, or the
    /// side of a to-one whose key another row holds): recorded in history, not written.
    var relationshipNames: [String] = []

    package init(
      entityIndex: Int32, primaryKey: Int64, version: Int64, slots: [Int32], values: [PrimitiveValue],
      originalValues: [PrimitiveValue] = [], allValues: [PrimitiveValue]? = nil, relationshipNames: [String] = []
    ) {
      self.entityIndex = entityIndex
      self.primaryKey = primaryKey
      self.version = version
      self.slots = slots
      self.values = values
      self.originalValues = originalValues
      self.allValues = allValues
      self.relationshipNames = relationshipNames
    }
  }

  /// The complete, ordered list of an object's side of a relationship stored in a join table
  /// or with an order column, as the context holds it: with `original`, what changes in the
  /// links, and the order of the positions.
  package struct LinkWrite: Sendable {
    var entityIndex: Int32
    var relationshipIndex: Int32
    var owner: Int64
    var targets: [Int64]
    /// The targets the context read before it changed the side. The write then applies only
    /// the difference, so links another writer saved meanwhile stay (and links it removed stay
    /// removed); nil when unknown, and the stored links become `targets`.
    var original: [Int64]? = nil

    package init(entityIndex: Int32, relationshipIndex: Int32, owner: Int64, targets: [Int64], original: [Int64]? = nil)
    {
      self.entityIndex = entityIndex
      self.relationshipIndex = relationshipIndex
      self.owner = owner
      self.targets = targets
      self.original = original
    }
  }

  package struct Delete: Sendable {
    var entityIndex: Int32
    var primaryKey: Int64
    var version: Int64

    package init(entityIndex: Int32, primaryKey: Int64, version: Int64) {
      self.entityIndex = entityIndex
      self.primaryKey = primaryKey
      self.version = version
    }
  }

  package var inserts: [Insert] = []
  package var updates: [Update] = []
  package var deletes: [Delete] = []
  package var links: [LinkWrite] = []
  /// How conflicts with other writers are resolved.
  package var policy: MergePolicy = .error

  package init() {}

  var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty && links.isEmpty }
}

/// What a committed change set produced.
package struct AppliedChanges: Sendable {
  /// The primary key of each insert, in the change set's order.
  package var insertedKeys: [Int64] = []
  /// What resolving conflicts did to objects of the change set, by entity index and key.
  var resolved: [ResolvedRow: Resolution] = [:]
  /// Rows the delete rules deleted or updated beyond the change set's own.
  var propagation = DeletePropagation()
  /// The inserts (by index) that constraint merging made stored rows; their entries in
  /// `insertedKeys` are those rows' keys.
  var mergedInserts: Set<Int> = []
}

/// What delete rules did beyond the deletes asked for: rows deleted by `.cascade`, and rows
/// whose relationship `.nullify` cleared, by entity.
struct DeletePropagation: Sendable {
  var deleted: [(entityName: String, primaryKeys: [Int64])] = []
  var updated: [(entityName: String, primaryKeys: [Int64])] = []
}

/// A row a conflict was resolved for.
struct ResolvedRow: Hashable, Sendable {
  var entityIndex: Int32
  var primaryKey: Int64
}

/// What the object of a resolved row must do after the commit.
enum Resolution: Sendable {
  /// Reload the row (written, inserted again, or left as the store had it).
  case reload
  /// The row is gone: the object is deleted.
  case deleted
  /// The object's deletion was not applied: it stays, and reloads the row.
  case kept
}
