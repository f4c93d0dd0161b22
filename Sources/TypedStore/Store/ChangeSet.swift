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
  }

  struct Delete: Sendable {
    var entityIndex: Int32
    var primaryKey: Int64
    var version: Int64
  }

  var inserts: [Insert] = []
  var updates: [Update] = []
  var deletes: [Delete] = []

  var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}

/// What a committed change set produced.
struct AppliedChanges: Sendable {
  /// The primary key of each insert, in the change set's order.
  var insertedKeys: [Int64] = []
}
