/// Reads the attribute columns of one entity's rows into objects: the hot loop of every fetch.
///
/// Built once per entity with its table layout. Each attribute becomes a plain `Field`: its
/// select-list position, its slot and, for the common plain types, its `DirectField`. A column
/// whose storage class is the one the field expects is stored straight into the object; every
/// other value (NULL, a type another tool wrote, a codec-backed attribute) goes through the
/// attribute's accessor, which converts it or throws the typed decoding error.
final class RowReader: Sendable {
  private struct Field: Sendable {
    let direct: DirectField
    let column: Int32
    let slot: Int32
    /// False for a relationship's key column, which has no `Attribute` field to number, and
    /// for a composite's elements but the first, which share the composite's.
    let hasSlotField: Bool
  }

  private let fields: [Field]
  private let accessors: [any AttributeAccessor]
  /// By slot, the relationship whose key column the slot is (nil for attributes): its key
  /// is stored straight into the relationship's field.
  private let foreignKeys: [(any RelationshipAccessor)?]
  /// The relationships whose links other rows hold: faults in every new object.
  private let relationships: [(index: Int32, accessor: any RelationshipAccessor, holdsKey: Bool)]

  init(entity: EntityDescription, positions: [Int32]) {
    accessors = entity.accessors
    foreignKeys = entity.accessors.map { ($0 as? ForeignKeyAccessor)?.relationship }
    relationships = entity.relationships.enumerated().map { (Int32($0), $1.accessor, $1.holdsForeignKey) }
    fields = zip(entity.accessors, positions).enumerated().map { slot, pair in
      Field(
        direct: pair.0.directField, column: pair.1, slot: Int32(slot),
        hasSlotField: entity.storedAttributes[slot].foreignKeyOf == nil && pair.0.directField.slotOffset > 0)
    }
  }

  /// Stores the current row's attribute values in `object`; with `assigningSlots` (a new
  /// object), also gives each field its slot.
  func read(_ statement: Statement, into object: ManagedObject, assigningSlots: Bool) throws {
    try fields.withUnsafeBufferPointer { fields in
      for field in fields {
        let value = statement.column(field.column)
        switch (field.direct.kind, value.storageClass) {
        case (.int, .integer), (.int64, .integer), (.bool, .integer):
          field.direct.store(integer: value.int64, in: object)
        case (.double, .real), (.date, .real):
          field.direct.store(real: value.double, in: object)
        case (.string, .text):
          field.direct.store(text: value.string, in: object)
        case (.none, .integer) where foreignKeys[Int(field.slot)] != nil:
          storeForeignKey(value.int64, field: field, in: object, assigningSlots: assigningSlots)
        default:
          try accessors[Int(field.slot)].decode(value.primitive, into: object)
        }
        if assigningSlots && field.hasSlotField { field.direct.setSlot(field.slot, in: object) }
      }
    }
    if assigningSlots { assignRelationshipSlots(of: object) }
  }

  /// `read(_:into:assigningSlots:)` for another engine's statement, whose columns are read as
  /// the `PrimitiveValue`s the engine gives (the same values an SQLite store holds).
  func read(values statement: some DatabaseStatement, into object: ManagedObject, assigningSlots: Bool) throws {
    for field in fields {
      let value = try statement.value(field.column)
      switch (field.direct.kind, value) {
      case (.int, .integer(let integer)), (.int64, .integer(let integer)), (.bool, .integer(let integer)):
        field.direct.store(integer: integer, in: object)
      case (.double, .real(let real)), (.date, .real(let real)):
        field.direct.store(real: real, in: object)
      case (.string, .text(let text)):
        field.direct.store(text: text, in: object)
      case (.none, .integer(let key)) where foreignKeys[Int(field.slot)] != nil:
        storeForeignKey(key, field: field, in: object, assigningSlots: assigningSlots)
      default:
        try accessors[Int(field.slot)].decode(value, into: object)
      }
      if assigningSlots && field.hasSlotField { field.direct.setSlot(field.slot, in: object) }
    }
    if assigningSlots { assignRelationshipSlots(of: object) }
  }

  @inline(__always)
  private func storeForeignKey(_ key: Int64, field: Field, in object: ManagedObject, assigningSlots: Bool) {
    if assigningSlots {
      foreignKeys[Int(field.slot)]?.makeNewObjectFault(object, foreignKey: key)
    } else {
      foreignKeys[Int(field.slot)]?.makeFault(object, foreignKey: key)
    }
  }

  /// Gives a new object's relationships their slots, and a fault to each whose links other
  /// rows hold.
  private func assignRelationshipSlots(of object: ManagedObject) {
    for relationship in relationships {
      relationship.accessor.setSlot(relationship.index, in: object)
      if !relationship.holdsKey { relationship.accessor.makeNewObjectFault(object, foreignKey: 0) }
    }
  }
}
