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
    list.removeAll { $0 === object }
  }

  mutating func removeAll() {
    for object in list { object.listMembership &= ~kind.rawValue }
    list.removeAll()
  }

  func makeIterator() -> IndexingIterator<[ManagedObject]> {
    list.makeIterator()
  }
}
