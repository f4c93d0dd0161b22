import Foundation

// How TypedStore reads and writes the `@Relationship` fields of user classes, as
// `ObjectLayout.swift` does for attributes: the model finds each field's byte offset once,
// and an accessor reads and writes the `Relationship<Value>` there. The graph code above works
// with plain arrays of objects; only this file knows the three Swift shapes.

/// The Swift shapes a relationship's value can have: `Destination?`, `Set<Destination>` and
/// `[Destination]`. The initializers of `Relationship` allow only these; the conformances
/// prove it again at run time, when the model is built.
protocol RelationshipValue {
  static var kind: RelationshipKind { get }
  static var destinationType: ManagedObject.Type { get }
  /// The related objects, in order for an ordered relationship.
  var objects: [ManagedObject] { get }
  /// A value holding `objects` (each of which is a `Destination`).
  init(objects: [ManagedObject])
  mutating func insert(_ object: ManagedObject, at index: Int?)
  mutating func remove(_ object: ManagedObject)
  func contains(_ object: ManagedObject) -> Bool
}

extension Optional: RelationshipValue where Wrapped: ManagedObject {
  static var kind: RelationshipKind { .toOne }
  static var destinationType: ManagedObject.Type { Wrapped.self }
  var objects: [ManagedObject] {
    // Not `map`: unspecialized (Wrapped is the user's class), it looked up generic metadata on
    // every call, which cost more than the array itself.
    guard let object = self else { return [] }
    return [object]
  }
  init(objects: [ManagedObject]) { self = objects.first as? Wrapped }
  mutating func insert(_ object: ManagedObject, at index: Int?) { self = object as? Wrapped }
  mutating func remove(_ object: ManagedObject) { if self === object { self = nil } }
  func contains(_ object: ManagedObject) -> Bool { self === object }
}

extension Set: RelationshipValue where Element: ManagedObject {
  static var kind: RelationshipKind { .toMany }
  static var destinationType: ManagedObject.Type { Element.self }
  var objects: [ManagedObject] { map { $0 } }
  init(objects: [ManagedObject]) {
    // A loop into a set of the right capacity: `Set(sequence)` is generic over the sequence
    // too, and unspecialized here (Element is the user's class) it cost much more.
    var set = Set<Element>(minimumCapacity: objects.count)
    for object in objects {
      if let element = object as? Element { set.insert(element) }
    }
    self = set
  }
  mutating func insert(_ object: ManagedObject, at index: Int?) {
    if let element = object as? Element { insert(element) }
  }
  mutating func remove(_ object: ManagedObject) {
    if let element = object as? Element { _ = self.remove(element) as Element? }
  }
  func contains(_ object: ManagedObject) -> Bool {
    guard let element = object as? Element else { return false }
    return firstIndex(of: element) != nil
  }
}

extension Array: RelationshipValue where Element: ManagedObject {
  static var kind: RelationshipKind { .ordered }
  static var destinationType: ManagedObject.Type { Element.self }
  var objects: [ManagedObject] { map { $0 } }
  init(objects: [ManagedObject]) { self = objects.compactMap { $0 as? Element } }
  mutating func insert(_ object: ManagedObject, at index: Int?) {
    guard let element = object as? Element else { return }
    removeAll { $0 === element }
    insert(element, at: Swift.min(Swift.max(index ?? count, 0), count))
  }
  mutating func remove(_ object: ManagedObject) { removeAll { $0 === object } }
  func contains(_ object: ManagedObject) -> Bool { contains { $0 === object } }
}

/// Reads and writes one relationship field of objects of one class, without hooks: the graph
/// code calls these after it has done its own bookkeeping.
protocol RelationshipAccessor: AnyObject, Sendable {
  var kind: RelationshipKind { get }
  var destinationType: ManagedObject.Type { get }
  func objects(in object: ManagedObject) -> [ManagedObject]
  func setObjects(_ objects: [ManagedObject], in object: ManagedObject)
  func insert(_ element: ManagedObject, at index: Int?, in object: ManagedObject)
  func remove(_ element: ManagedObject, in object: ManagedObject)
  func contains(_ element: ManagedObject, in object: ManagedObject) -> Bool
  func isFault(_ object: ManagedObject) -> Bool
  /// Makes the relationship a fault, releasing the objects it held; `foreignKey` is the
  /// related row's key for a to-one whose key the object's row holds (0 for none).
  func makeFault(_ object: ManagedObject, foreignKey: Int64)
  /// Makes the relationship of an object a row is being loaded into for the first time a
  /// fault, leaving its value alone: the wrapper's initial, empty one (building a new empty
  /// value through the generic `RelationshipValue` showed in a prefetch's profile).
  func makeNewObjectFault(_ object: ManagedObject, foreignKey: Int64)
  /// Marks a fault as loaded, holding `objects`.
  func fulfill(_ object: ManagedObject, with objects: [ManagedObject])
  /// Marks a fault as loaded, holding `objects`, which the caller keeps alive meanwhile.
  func fulfill(_ object: ManagedObject, withUnretained objects: UnsafeBufferPointer<Unmanaged<ManagedObject>>)
  func foreignKey(in object: ManagedObject) -> Int64
  func setSlot(_ slot: Int32, in object: ManagedObject)
  /// Where the wrapper's slot number is in objects of the class (`EntityDescription.slotFields`).
  var slotFieldOffset: Int { get }
  /// The relationship's Swift value holding `objects` (a `Set`, an array or an optional).
  func boxedValue(holding objects: [ManagedObject]) -> Any
}

/// The `Relationship<Value>` field at `offset` in objects of one class.
///
/// The offsets of the wrapper's parts are read once from `MemoryLayout`, so each access
/// addresses them directly: going through `Relationship<Value>` itself looked its generic
/// metadata up on every call, which profiles showed as most of the cost of a prefetch.
final class RelationshipFieldAccessor<Value: RelationshipValue>: RelationshipAccessor {
  private let valueOffset: Int
  private let slotOffset: Int
  var slotFieldOffset: Int { slotOffset }
  private let faultOffset: Int
  private let keyOffset: Int
  private let makeValue: RelationshipValueBuilder?

  init(offset: Int, makeValue: RelationshipValueBuilder?) {
    self.makeValue = makeValue
    valueOffset = offset + (MemoryLayout<Relationship<Value>>.offset(of: \Relationship<Value>.value) ?? 0)
    slotOffset = offset + (MemoryLayout<Relationship<Value>>.offset(of: \Relationship<Value>.slot) ?? 0)
    faultOffset = offset + (MemoryLayout<Relationship<Value>>.offset(of: \Relationship<Value>.isFault) ?? 0)
    keyOffset = offset + (MemoryLayout<Relationship<Value>>.offset(of: \Relationship<Value>.foreignKey) ?? 0)
  }

  var kind: RelationshipKind { Value.kind }
  var destinationType: ManagedObject.Type { Value.destinationType }

  @inline(__always)
  private func part<T>(_ object: ManagedObject, _ offset: Int, _ type: T.Type) -> UnsafeMutablePointer<T> {
    (Unmanaged.passUnretained(object).toOpaque() + offset).assumingMemoryBound(to: T.self)
  }

  func objects(in object: ManagedObject) -> [ManagedObject] {
    withExtendedLifetime(object) { part(object, valueOffset, Value.self).pointee.objects }
  }
  func setObjects(_ objects: [ManagedObject], in object: ManagedObject) {
    withExtendedLifetime(object) { part(object, valueOffset, Value.self).pointee = value(holding: objects) }
  }
  func insert(_ element: ManagedObject, at index: Int?, in object: ManagedObject) {
    withExtendedLifetime(object) { part(object, valueOffset, Value.self).pointee.insert(element, at: index) }
  }
  func remove(_ element: ManagedObject, in object: ManagedObject) {
    withExtendedLifetime(object) { part(object, valueOffset, Value.self).pointee.remove(element) }
  }
  func contains(_ element: ManagedObject, in object: ManagedObject) -> Bool {
    withExtendedLifetime(object) { part(object, valueOffset, Value.self).pointee.contains(element) }
  }
  func isFault(_ object: ManagedObject) -> Bool {
    withExtendedLifetime(object) { part(object, faultOffset, Bool.self).pointee }
  }
  func makeFault(_ object: ManagedObject, foreignKey: Int64) {
    withExtendedLifetime(object) {
      if !part(object, faultOffset, Bool.self).pointee {
        part(object, valueOffset, Value.self).pointee = Value(objects: [])
        part(object, faultOffset, Bool.self).pointee = true
      }
      part(object, keyOffset, Int64.self).pointee = foreignKey
    }
  }
  func makeNewObjectFault(_ object: ManagedObject, foreignKey: Int64) {
    withExtendedLifetime(object) {
      part(object, faultOffset, Bool.self).pointee = true
      part(object, keyOffset, Int64.self).pointee = foreignKey
    }
  }
  /// The value holding `objects`: through the specialized builder when the declaration
  /// made one (one dynamic cast for the whole value, not one generic call per element).
  @inline(__always)
  private func value(holding objects: [ManagedObject]) -> Value {
    guard makeValue != nil else { return Value(objects: objects) }
    return withExtendedLifetime(objects) {
      objects.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: Unmanaged<ManagedObject>.self) { value(holdingUnretained: $0) }
      }
    }
  }

  @inline(__always)
  private func value(holdingUnretained objects: UnsafeBufferPointer<Unmanaged<ManagedObject>>) -> Value {
    if let makeValue, let value = makeValue(objects) as? Value { return value }
    return Value(objects: objects.map { $0.takeUnretainedValue() })
  }

  func boxedValue(holding objects: [ManagedObject]) -> Any { value(holding: objects) }

  func fulfill(_ object: ManagedObject, with objects: [ManagedObject]) {
    setLoaded(value(holding: objects), in: object)
  }
  func fulfill(_ object: ManagedObject, withUnretained objects: UnsafeBufferPointer<Unmanaged<ManagedObject>>) {
    setLoaded(value(holdingUnretained: objects), in: object)
  }
  @inline(__always)
  private func setLoaded(_ value: Value, in object: ManagedObject) {
    withExtendedLifetime(object) {
      part(object, valueOffset, Value.self).pointee = value
      part(object, keyOffset, Int64.self).pointee = 0
      part(object, faultOffset, Bool.self).pointee = false
    }
  }
  func foreignKey(in object: ManagedObject) -> Int64 {
    withExtendedLifetime(object) { part(object, keyOffset, Int64.self).pointee }
  }
  func setSlot(_ slot: Int32, in object: ManagedObject) {
    withExtendedLifetime(object) { part(object, slotOffset, Int32.self).pointee = slot }
  }
}

/// Implemented by `Relationship` so the model can recognise its fields among a class's fields.
protocol RelationshipField {
  static func makeAccessor(offset: Int, makeValue: RelationshipValueBuilder?)
    -> (any RelationshipAccessor)?
}

extension Relationship: RelationshipField {
  static func makeAccessor(offset: Int, makeValue: RelationshipValueBuilder?)
    -> (any RelationshipAccessor)?
  {
    guard let valueType = Value.self as? any RelationshipValue.Type else { return nil }
    return makeRelationshipAccessor(valueType, offset: offset, makeValue: makeValue)
  }
}

private func makeRelationshipAccessor<Value: RelationshipValue>(
  _: Value.Type, offset: Int, makeValue: RelationshipValueBuilder?
) -> any RelationshipAccessor {
  RelationshipFieldAccessor<Value>(offset: offset, makeValue: makeValue)
}

/// Reads and writes the key column of a to-one relationship whose key the object's row holds:
/// an attribute slot like any other, so that change tracking, updates, conflicts and history
/// treat it as one. Its value is the related row's primary key, or NULL.
final class ForeignKeyAccessor: AttributeAccessor {
  let relationship: any RelationshipAccessor
  let entityName: String
  let relationshipName: String
  let codec: any ValueCodec = StandardCodec<Int64?>()
  let directField = DirectField(kind: .none, valueOffset: 0, slotOffset: 0)

  init(relationship: any RelationshipAccessor, entityName: String, relationshipName: String) {
    self.relationship = relationship
    self.entityName = entityName
    self.relationshipName = relationshipName
  }

  func encode(_ object: ManagedObject) throws -> PrimitiveValue {
    if relationship.isFault(object) {
      let key = relationship.foreignKey(in: object)
      return key == 0 ? .null : .integer(key)
    }
    guard let target = relationship.objects(in: object).first else { return .null }
    guard target.trackerLink === object.trackerLink, let key = target.objectKey, !key.isTemporary else {
      throw UnwritableRelationshipKey(
        entity: entityName, relationship: relationshipName,
        reason: target.trackerLink === object.trackerLink
          ? "the related object has no permanent ID yet" : "the related object belongs to another context")
    }
    return .integer(key.value)
  }

  func decode(_ value: PrimitiveValue, into object: ManagedObject) throws {
    switch value {
    case .null: relationship.makeFault(object, foreignKey: 0)
    case .integer(let key): relationship.makeFault(object, foreignKey: key)
    default: throw AttributeDecodingError(expected: Int64.self, found: value)
    }
  }

  func decode(_ value: PrimitiveValue, slot: Int32, into object: ManagedObject) throws {
    try decode(value, into: object)
  }

  func setSlot(_ slot: Int32, in object: ManagedObject) {}
  func currentValue(of object: ManagedObject) -> Any { relationship.objects(in: object).first as Any }
}
