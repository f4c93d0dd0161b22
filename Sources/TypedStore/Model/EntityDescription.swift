import Observation

/// One entity of a model: a `ManagedObject` subclass, its attributes and its place in the
/// entity hierarchy.
///
/// ```swift
/// let entity = model.entity(for: Note.self)!
/// print(entity.name, entity.tableName, entity.attributes.map(\.name))
/// ```
public final class EntityDescription: Sendable, CustomStringConvertible {
  /// The entity name: the class name.
  public let name: String
  /// The entity whose class this entity's class inherits from, if any.
  public let superentityName: String?
  /// The entities whose classes directly inherit from this one.
  public let subentityNames: [String]
  /// The top of this entity's hierarchy, whose table stores its rows.
  public let rootName: String
  /// All attributes, inherited ones first, in declaration order.
  public let attributes: [AttributeDescription]
  /// All relationships, inherited ones first, in declaration order.
  public let relationships: [RelationshipDescription]
  /// This entity and every entity below it.
  public let selfAndDescendantNames: [String]
  /// The entity's name in the model version before this one (the class's
  /// `originalEntityName`), when it was renamed: a migration renames its table and keeps its
  /// rows.
  public let originalName: String?

  /// What a row stores besides its key and version, by slot: the attributes and the key
  /// columns of to-one relationships (inherited ones first, then each entity's attributes,
  /// then its key columns). Slots index this list.
  package let storedAttributes: [AttributeDescription]
  /// The stored attributes' accessors, by slot: what the hot paths use (an array of small
  /// values, cheaper to walk than the descriptions).
  let accessors: [any AttributeAccessor]
  /// Where each attribute and relationship wrapper keeps its slot number in an object, and
  /// the number: a new object is numbered by writing these, with no call through an
  /// accessor per field (that cost an insert about 570 instructions per object).
  let slotFields: [SlotField]
  package let index: Int32
  let rootIndex: Int32
  let objectType: ManagedObject.Type
  /// False for an entity read from a store's schema without its class (a tool's model): no
  /// object of it is ever made.
  let hasClass: Bool
  private let attributeIndexByName: [String: Int]
  private let relationshipIndexByName: [String: Int]
  /// The uniqueness constraints that apply to this entity's rows (its own and inherited ones,
  /// `@Attribute(unique: true)` included), each as the slots of its columns.
  let uniqueness: [[Int32]]
  /// The compound constraints this entity declares itself (not inherited).
  let ownCompoundUniqueness: [[Int32]]
  /// The slots of the attributes declared with bounds or their own validation.
  let boundedSlots: [Int32]
  /// For an entity whose class declares `Observable`: the key paths its objects' observation
  /// registrars hear, by slot. Nil for other entities, whose objects report nothing.
  let observationKeyPaths: ObservationKeyPaths?
  /// By slot, for the first element of a composite attribute: the slot after its last
  /// element (a composite's slot is its first element's); 0 for other slots. Empty when the
  /// entity has no composite.
  let compositeEnds: [Int32]
  /// Whether `save()` has rules to check for this entity's objects.
  var hasValidationRules: Bool {
    !boundedSlots.isEmpty
      || relationships.contains { $0.isRequired || $0.minimumCount != nil || $0.maximumCount != nil }
  }

  init(
    name: String, superentityName: String?, subentityNames: [String], rootName: String,
    storedAttributes: [AttributeDescription], relationships: [RelationshipDescription] = [],
    selfAndDescendantNames: [String], index: Int32, rootIndex: Int32, objectType: ManagedObject.Type?,
    uniqueness: [[Int32]] = [], ownCompoundUniqueness: [[Int32]] = [], originalName: String? = nil
  ) {
    self.originalName = originalName
    self.uniqueness = uniqueness
    self.ownCompoundUniqueness = ownCompoundUniqueness
    self.name = name
    self.superentityName = superentityName
    self.subentityNames = subentityNames
    self.rootName = rootName
    self.storedAttributes = storedAttributes
    self.attributes = storedAttributes.filter { $0.foreignKeyOf == nil }
    self.relationships = relationships
    self.relationshipIndexByName = Dictionary(
      relationships.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
    self.accessors = storedAttributes.map(\.accessor)
    self.compositeEnds = Self.compositeEnds(of: storedAttributes)
    self.slotFields = Self.slotFields(storedAttributes: storedAttributes, relationships: relationships)
    self.boundedSlots = storedAttributes.indices.filter {
      storedAttributes[$0].boundsCheck != nil || storedAttributes[$0].validator != nil
    }.map(Int32.init)
    self.selfAndDescendantNames = selfAndDescendantNames
    self.index = index
    self.rootIndex = rootIndex
    self.objectType = objectType ?? ManagedObject.self
    self.hasClass = objectType != nil
    self.observationKeyPaths =
      objectType is any Observable.Type
      ? ObservationKeyPaths(attributeCount: storedAttributes.count, relationshipCount: relationships.count) : nil
    self.attributeIndexByName = Dictionary(
      storedAttributes.enumerated().filter { $1.foreignKeyOf == nil }.map { ($1.name, $0) },
      uniquingKeysWith: { first, _ in first })
  }

  /// A field's slot number and where the number is kept in an object.
  struct SlotField: Sendable {
    let offset: Int
    let slot: Int32
  }

  /// The slot fields of the attributes that have an `Attribute` wrapper (a relationship's
  /// key column and an attribute known only from a schema have none: offset 0) and of the
  /// relationships (but those known only from a schema).
  private static func slotFields(
    storedAttributes: [AttributeDescription], relationships: [RelationshipDescription]
  ) -> [SlotField] {
    var fields: [SlotField] = []
    for (slot, attribute) in storedAttributes.enumerated() where attribute.foreignKeyOf == nil {
      let offset = attribute.accessor.directField.slotOffset
      if offset > 0 { fields.append(SlotField(offset: offset, slot: Int32(slot))) }
    }
    for (index, relationship) in relationships.enumerated() where relationship.accessor.slotFieldOffset > 0 {
      fields.append(SlotField(offset: relationship.accessor.slotFieldOffset, slot: Int32(index)))
    }
    return fields
  }

  private static func compositeEnds(of storedAttributes: [AttributeDescription]) -> [Int32] {
    guard storedAttributes.contains(where: { $0.compositeName != nil }) else { return [] }
    var ends = [Int32](repeating: 0, count: storedAttributes.count)
    var slot = 0
    while slot < storedAttributes.count {
      guard let composite = storedAttributes[slot].compositeName else {
        slot += 1
        continue
      }
      var end = slot + 1
      while end < storedAttributes.count, storedAttributes[end].compositeName == composite,
        storedAttributes[end].entityName == storedAttributes[slot].entityName
      {
        end += 1
      }
      ends[slot] = Int32(end)
      slot = end
    }
    return ends
  }

  /// The slot of the composite whose element is in `slot` (its first element's), or `slot`.
  func compositeSlot(of slot: Int32) -> Int32 {
    guard !compositeEnds.isEmpty, slot >= 0 else { return slot }
    var first = slot
    while first > 0, compositeEnds[Int(first)] == 0,
      let name = storedAttributes[Int(first)].compositeName, storedAttributes[Int(first - 1)].compositeName == name
    {
      first -= 1
    }
    return first
  }

  /// The name of the table that stores this entity's rows (its root entity's name).
  public var tableName: String { rootName }

  /// Whether this entity is the root of its hierarchy.
  public var isRoot: Bool { superentityName == nil }

  /// The attribute with this Swift name.
  public func attribute(named name: String) -> AttributeDescription? {
    attributeIndexByName[name].map { storedAttributes[$0] }
  }

  /// The slot of the attribute with this Swift name.
  func attributeSlot(named name: String) -> Int32? {
    attributeIndexByName[name].map(Int32.init)
  }

  /// The slot observers hear for a change recorded under `slot` in `committedValues`: the
  /// relationship's marker for a to-one's key column, the composite's slot for an element of
  /// one, the slot itself otherwise.
  func observedSlot(of slot: Int32) -> Int32 {
    guard slot >= 0, let name = storedAttributes[Int(slot)].foreignKeyOf,
      let index = relationshipIndexByName[name]
    else { return compositeSlot(of: slot) }
    return ManagedObject.relationshipMarker(Int32(index))
  }

  /// The name of the attribute (or key column's relationship) in `slot`, or of the
  /// relationship a negative slot marks (`ManagedObject.relationshipMarker`).
  func propertyName(ofSlot slot: Int32) -> String {
    slot >= 0 ? storedAttributes[Int(slot)].name : relationships[Int(-slot - 1)].name
  }

  /// The names of the properties of each uniqueness constraint that applies to this entity.
  public var uniquenessConstraints: [[String]] { uniqueness.map { $0.map { storedAttributes[Int($0)].name } } }

  /// The relationship with this Swift name.
  public func relationship(named name: String) -> RelationshipDescription? {
    relationshipIndexByName[name].map { relationships[$0] }
  }

  /// `EntityDescription(<name>)`.
  public var description: String { "EntityDescription(\(name))" }

  /// The value of the `_entity` column in this entity's rows: its 1-based place in the model's
  /// canonical order (superentities first, then by name), which does not depend on the order
  /// the classes were listed in. Stores list the codes in their `_entities` table.
  package var code: Int64 { Int64(index) + 1 }
}
