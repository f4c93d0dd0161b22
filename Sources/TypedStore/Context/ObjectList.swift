/// A context's updated or deleted objects, in the order they joined the list. Membership is a
/// bit on the object, so adding one costs no hashing; removing one (refresh, undelete, a
/// merged delete) is rare and walks the list.
struct ObjectList: Sequence {
  /// Which list: each is one bit of `ManagedObject.listMembership`.
  enum Kind: UInt8 {
    case updated = 1
    case deleted = 2
  }

  let kind: Kind
  private var list: [ManagedObject] = []
  /// Where the objects that joined since the context last processed its pending changes
  /// start (`ContextState.event`).
  private(set) var eventStart = 0

  init(_ kind: Kind) {
    self.kind = kind
  }

  var isEmpty: Bool { list.isEmpty }
  var count: Int { list.count }
  var last: ManagedObject? { list.last }
  /// The objects, in the order they joined.
  var objects: [ManagedObject] { list }

  func contains(_ object: ManagedObject) -> Bool { object.listMembership & kind.rawValue != 0 }

  mutating func insert(_ object: ManagedObject) {
    guard !contains(object) else { return }
    object.listMembership |= kind.rawValue
    list.append(object)
  }

  mutating func remove(_ object: ManagedObject) {
    guard contains(object) else { return }
    object.listMembership &= ~kind.rawValue
    guard let index = list.firstIndex(where: { $0 === object }) else { return }
    list.remove(at: index)
    if index < eventStart { eventStart -= 1 }
  }

  /// Empties the list, clearing the objects' bit and the `alsoClearing` bits.
  mutating func removeAll(alsoClearing bits: UInt8 = 0) {
    let mask = ~(kind.rawValue | bits)
    for object in list { object.listMembership &= mask }
    list.removeAll()
    eventStart = 0
  }

  /// The objects that joined since `startEvent()`.
  var joinedInEvent: ArraySlice<ManagedObject> { list[eventStart...] }

  /// Marks the end of the list as the start of a new event.
  mutating func startEvent() { eventStart = list.count }

  func makeIterator() -> IndexingIterator<[ManagedObject]> {
    list.makeIterator()
  }
}
