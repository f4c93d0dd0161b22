/// One relationship of an entity, as the model describes it.
///
/// ```swift
/// let notes = model.entity(for: Folder.self)?.relationship(named: "notes")
/// print(notes?.kind, notes?.destinationEntityName, notes?.inverseName)   // .toMany, "Note", "folder"
/// ```
///
/// A class, as Core Data's `NSRelationshipDescription` is: the graph code takes a description
/// out of its entity for every relationship edit and save, and copying a struct of five
/// strings and an accessor each time cost reference counting on every copy.
public final class RelationshipDescription: Sendable {
  /// The Swift property name.
  public let name: String
  /// To-one, unordered to-many or ordered to-many.
  public let kind: RelationshipKind
  /// The entity of the related objects.
  public let destinationEntityName: String
  /// The destination's relationship that points back at this one.
  public let inverseName: String
  /// What deleting an object does to the objects it is related to by this relationship.
  public let deleteRule: DeleteRule
  /// For a to-one: a save fails while it is nil.
  public let isRequired: Bool
  /// For a to-many: the fewest related objects a save accepts.
  public let minimumCount: Int?
  /// For a to-many: the most related objects a save accepts.
  public let maximumCount: Int?
  /// The entity that declares the relationship (a superentity, for an inherited one).
  public let entityName: String
  /// The relationship's name in the previous model version (`@Relationship(originalName:)`),
  /// when it was renamed: a migration keeps its links.
  public let originalName: String?

  /// Where the links are stored.
  let storage: RelationshipStorage
  let accessor: any RelationshipAccessor
  /// The inverse's index in the destination's `relationships`.
  let inverseIndex: Int32
  /// For `.foreignKey` storage: the key column's slot in the entity's stored attributes.
  let foreignKeySlot: Int32?

  init(
    name: String, kind: RelationshipKind, destinationEntityName: String, inverseName: String,
    deleteRule: DeleteRule, isRequired: Bool, minimumCount: Int?, maximumCount: Int?, entityName: String,
    storage: RelationshipStorage, accessor: any RelationshipAccessor, inverseIndex: Int32, foreignKeySlot: Int32?,
    originalName: String? = nil
  ) {
    self.originalName = originalName
    self.name = name
    self.kind = kind
    self.destinationEntityName = destinationEntityName
    self.inverseName = inverseName
    self.deleteRule = deleteRule
    self.isRequired = isRequired
    self.minimumCount = minimumCount
    self.maximumCount = maximumCount
    self.entityName = entityName
    self.storage = storage
    self.accessor = accessor
    self.inverseIndex = inverseIndex
    self.foreignKeySlot = foreignKeySlot
  }

  /// Whether this object's row holds the related row's key.
  var holdsForeignKey: Bool {
    if case .foreignKey = storage { return true }
    return false
  }
}

/// How a relationship's links are stored (see `docs/file-format.md`).
enum RelationshipStorage: Sendable, Equatable {
  /// A to-one whose key column is in this entity's table. `orderColumn`, in the same table,
  /// holds the row's position in its inverse when the inverse is ordered.
  case foreignKey(column: String, orderColumn: String?)
  /// A relationship whose destination's table holds the key column (the inverse is a to-one
  /// with `.foreignKey` storage); `orderColumn` is set when this side is ordered.
  case inverseForeignKey(column: String, orderColumn: String?)
  /// A many-to-many: a join table of (source, target) keys. `ownColumn` holds this side's
  /// keys (`source` for the side that owns the table, `target` for the other); `orderColumn`
  /// holds the related object's position in this side's list when this side is ordered.
  /// `isOwner` is true for the side whose changes write the links.
  case joinTable(table: String, ownColumn: String, otherColumn: String, orderColumn: String?, isOwner: Bool)
}
