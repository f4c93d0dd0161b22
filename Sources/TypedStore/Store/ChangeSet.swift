/// The rows one save writes, as plain values that can cross from a context to the writer.
struct ChangeSet: Sendable {
  struct Insert: Sendable {
    var entityIndex: Int32
    /// Set when the object already has a permanent ID (`obtainPermanentIDs(for:)`).
    var primaryKey: Int64?
    /// One value per attribute of the entity, in attribute order.
    var values: [PrimitiveValue]
  }

  struct Update: Sendable {
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
  }

  struct Delete: Sendable {
    var entityIndex: Int32
    var primaryKey: Int64
    var version: Int64
  }

  var inserts: [Insert] = []
  var updates: [Update] = []
  var deletes: [Delete] = []
  /// How conflicts with other writers are resolved.
  var policy: MergePolicy = .error

  var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}

/// What a committed change set produced.
struct AppliedChanges: Sendable {
  /// The primary key of each insert, in the change set's order.
  var insertedKeys: [Int64] = []
  /// What resolving conflicts did to objects of the change set, by entity index and key.
  var resolved: [ResolvedRow: Resolution] = [:]
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
