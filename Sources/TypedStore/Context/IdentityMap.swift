/// One object per row: a context's registered objects by `ObjectKey`.
///
/// Loading rows spends a large share of its time here, so permanent keys go to an
/// open-addressing table per root table, keyed by the primary key with a multiplicative hash
/// (a profile showed SipHash at twice the cost of the rest of the lookup). Temporary keys are
/// few and live in a plain dictionary.
struct IdentityMap {
  private var permanent: [KeyTable] = []
  private var temporary: [Int64: ManagedObject] = [:]

  subscript(key: ObjectKey) -> ManagedObject? {
    get {
      if key.isTemporary { return temporary[key.value] }
      let root = Int(key.rootIndex)
      return root < permanent.count ? permanent[root][key.value] : nil
    }
    set {
      if key.isTemporary {
        temporary[key.value] = newValue
        return
      }
      let root = Int(key.rootIndex)
      if root >= permanent.count {
        guard newValue != nil else { return }
        permanent += Array(repeating: KeyTable(), count: root - permanent.count + 1)
      }
      permanent[root][key.value] = newValue
    }
  }

  /// Every registered object.
  var values: [ManagedObject] {
    Array(temporary.values) + permanent.flatMap(\.values)
  }

  mutating func removeAll() {
    permanent.removeAll()
    temporary.removeAll()
  }
}

/// A hash table from `Int64` to objects: linear probing, at most half full, deletion by
/// backward shift (so there are no tombstones).
struct KeyTable {
  private var keys: [Int64] = []
  private var objects: [ManagedObject?] = []
  private(set) var count = 0
  private var shift = 64

  private func home(_ key: Int64) -> Int {
    // Fibonacci hashing of the key's block of 8, plus its place in the block: keys of one
    // block (consecutive primary keys, the common case) land in neighbouring slots, so a
    // large fetch touches the table sequentially instead of missing the cache on every row,
    // while blocks spread over the whole table whatever their stride.
    let bits = UInt64(bitPattern: key)
    let block = Int(truncatingIfNeeded: ((bits >> 3) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    return (block &+ Int(bits & 7)) & (objects.count - 1)
  }

  /// The slot holding `key`, or the empty slot where it would go.
  private func slot(of key: Int64) -> Int {
    let mask = objects.count - 1
    var index = home(key)
    while objects[index] != nil && keys[index] != key { index = (index + 1) & mask }
    return index
  }

  subscript(key: Int64) -> ManagedObject? {
    get {
      guard count > 0 else { return nil }
      let index = slot(of: key)
      return objects[index]
    }
    set {
      if let newValue {
        if (count + 1) * 2 > objects.count { grow() }
        let index = slot(of: key)
        if objects[index] == nil { count += 1 }
        keys[index] = key
        objects[index] = newValue
      } else if count > 0 {
        remove(at: slot(of: key))
      }
    }
  }

  var values: [ManagedObject] { objects.compactMap { $0 } }

  private mutating func remove(at start: Int) {
    guard objects[start] != nil else { return }
    let mask = objects.count - 1
    var hole = start
    var index = start
    while true {
      index = (index + 1) & mask
      guard objects[index] != nil else { break }
      let wanted = home(keys[index])
      // Move the entry back into the hole unless its home lies cyclically in (hole, index].
      let stays = hole <= index ? (hole < wanted && wanted <= index) : (hole < wanted || wanted <= index)
      if !stays {
        keys[hole] = keys[index]
        objects[hole] = objects[index]
        hole = index
      }
    }
    objects[hole] = nil
    count -= 1
  }

  private mutating func grow() {
    // Quadrupling keeps the rehashing of a large fetch, which registers every row, to a
    // third of what doubling costs.
    let capacity = max(16, objects.count * 4)
    var oldKeys = Array(repeating: Int64(0), count: capacity)
    var oldObjects = [ManagedObject?](repeating: nil, count: capacity)
    swap(&oldKeys, &keys)
    swap(&oldObjects, &objects)
    shift = 64 - capacity.trailingZeroBitCount
    count = 0
    for (key, object) in zip(oldKeys, oldObjects) {
      guard let object else { continue }
      let index = slot(of: key)
      keys[index] = key
      objects[index] = object
      count += 1
    }
  }
}
