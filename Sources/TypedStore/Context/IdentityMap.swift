/// One object per row: a context's registered objects by `ObjectKey`.
///
/// Loading rows spends a large share of its time here, so permanent keys go to an
/// open-addressing table per root table, keyed by the primary key with a multiplicative hash
/// (a profile showed SipHash at twice the cost of the rest of the lookup). Temporary keys, one
/// per inserted object and numbered in sequence, go to one more such table.
struct IdentityMap {
  private var permanent: [KeyTable] = []
  private var temporary = KeyTable()

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

  /// Whether no object is registered.
  var isEmpty: Bool { temporary.count == 0 && permanent.allSatisfy { $0.count == 0 } }

  /// Every registered object.
  var values: [ManagedObject] {
    temporary.values + permanent.flatMap(\.values)
  }

  mutating func removeAll() {
    permanent.removeAll()
    temporary = KeyTable()
  }

  /// Forgets every object registered by a temporary key: after a save, which gave each
  /// inserted object its permanent key (one removal per object cost a hash lookup each).
  mutating func removeAllTemporary() {
    temporary = KeyTable()
  }

  /// Drops, from every table that has grown enough since its last look, the objects nothing
  /// else references and that `isDroppable` accepts (see `KeyTable.dropUnreferenced`).
  mutating func dropUnreferenced(where isDroppable: (ManagedObject) -> Bool) {
    for index in permanent.indices { _ = permanent[index].dropUnreferenced(where: isDroppable) }
  }

  /// Moves the table of the root entity `root` out, for a loop that registers many rows
  /// without going through the map (and its exclusivity checks) each time; `restore` puts
  /// it back. Until then the map has no objects of that table.
  mutating func take(root: Int32) -> KeyTable {
    let index = Int(root)
    guard index < permanent.count else { return KeyTable() }
    var table = KeyTable()
    swap(&table, &permanent[index])
    return table
  }

  /// Puts back a table that `take(root:)` moved out.
  mutating func restore(_ table: KeyTable, root: Int32) {
    let index = Int(root)
    if index >= permanent.count {
      permanent += Array(repeating: KeyTable(), count: index - permanent.count + 1)
    }
    permanent[index] = table
  }
}

/// A hash table from `Int64` to objects: linear probing, at most half full, deletion by
/// backward shift (so there are no tombstones). Key and object share an entry, so a probe
/// touches one cache line.
struct KeyTable {
  private struct Entry {
    var key: Int64
    var object: ManagedObject?
  }

  private var entries: [Entry] = []
  private(set) var count = 0
  private var shift = 64
  /// The count at which `dropUnreferenced` next looks for objects to drop.
  private(set) var dropThreshold = KeyTable.minimumDropThreshold

  static let minimumDropThreshold = 4_096

  private func home(_ key: Int64) -> Int {
    // Fibonacci hashing of the key's block of 8, plus its place in the block: keys of one
    // block (consecutive primary keys, the common case) land in neighbouring slots, so a
    // large fetch touches the table sequentially instead of missing the cache on every row,
    // while blocks spread over the whole table whatever their stride.
    let bits = UInt64(bitPattern: key)
    let block = Int(truncatingIfNeeded: ((bits >> 3) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    return (block &+ Int(bits & 7)) & (entries.count - 1)
  }

  /// The slot holding `key`, or the empty slot where it would go.
  private func slot(of key: Int64) -> Int {
    let mask = entries.count - 1
    var index = home(key)
    while entries[index].object != nil && entries[index].key != key { index = (index + 1) & mask }
    return index
  }

  subscript(key: Int64) -> ManagedObject? {
    get {
      guard count > 0 else { return nil }
      return entries[slot(of: key)].object
    }
    set {
      if let newValue {
        let index = reserveSlot(for: key)
        if entries[index].object == nil { count += 1 }
        entries[index] = Entry(key: key, object: newValue)
      } else if count > 0 {
        remove(at: slot(of: key))
      }
    }
  }

  /// The slot of `key` for `object(at:)` and `insert(_:key:at:)`, after making room for one
  /// more entry: one probe for a lookup that may be followed by an insert.
  mutating func reserveSlot(for key: Int64) -> Int {
    if (count + 1) * 2 > entries.count { grow() }
    return slot(of: key)
  }

  /// The object in a slot `reserveSlot(for:)` returned.
  func object(at slot: Int) -> ManagedObject? { entries[slot].object }

  /// Fills an empty slot `reserveSlot(for: key)` returned, with no change in between.
  mutating func insert(_ object: ManagedObject, key: Int64, at slot: Int) {
    precondition(entries[slot].object == nil, "TypedStore: identity map slot already taken")
    entries[slot] = Entry(key: key, object: object)
    count += 1
  }

  var values: [ManagedObject] { entries.compactMap(\.object) }

  /// Drops the objects that nothing but this table references and that `isDroppable`
  /// accepts, once the table has grown to twice what the last call left (at least
  /// `minimumDropThreshold`), so that the scans cost amortized constant time per object
  /// registered. Returns how many it dropped.
  ///
  /// A context thus keeps an unchanged object only while something else uses it, as Core
  /// Data does, without a weak reference per object (which made every fetch slower): an
  /// object nobody references cannot be told from a new one made for its row later.
  mutating func dropUnreferenced(where isDroppable: (ManagedObject) -> Bool) -> Int {
    guard count >= dropThreshold else { return 0 }
    var drop = [Bool](repeating: false, count: entries.count)
    var dropped = 0
    for index in entries.indices {
      // Checked before any other reference to the object is made here (false for nil).
      guard isKnownUniquelyReferenced(&entries[index].object) else { continue }
      if let object = entries[index].object, isDroppable(object) {
        drop[index] = true
        dropped += 1
      }
    }
    if dropped > 0 { rehash(capacity: entries.count) { !drop[$0] } }
    dropThreshold = max(Self.minimumDropThreshold, count * 2)
    return dropped
  }

  private mutating func remove(at start: Int) {
    guard entries[start].object != nil else { return }
    let mask = entries.count - 1
    var hole = start
    var index = start
    while true {
      index = (index + 1) & mask
      guard entries[index].object != nil else { break }
      let wanted = home(entries[index].key)
      // Move the entry back into the hole unless its home lies cyclically in (hole, index].
      let stays = hole <= index ? (hole < wanted && wanted <= index) : (hole < wanted || wanted <= index)
      if !stays {
        entries[hole] = entries[index]
        hole = index
      }
    }
    entries[hole] = Entry(key: 0, object: nil)
    count -= 1
  }

  private mutating func grow() {
    // Quadrupling keeps the rehashing of a large fetch, which registers every row, to a
    // third of what doubling costs.
    rehash(capacity: max(16, entries.count * 4)) { _ in true }
  }

  /// Moves the entries whose old position `keeps` accepts into a new table of `capacity`
  /// slots: objects move, with no reference counting per entry; the others are released.
  private mutating func rehash(capacity: Int, keeping keeps: (Int) -> Bool) {
    var old = Self.emptyEntries(capacity)
    swap(&old, &entries)
    shift = 64 - capacity.trailingZeroBitCount
    count = 0
    for position in old.indices {
      guard let object = old[position].object.take(), keeps(position) else { continue }
      let index = slot(of: old[position].key)
      entries[index] = Entry(key: old[position].key, object: object)
      count += 1
    }
  }

  /// `capacity` empty entries, written directly (`Array(repeating:count:)` retains its value
  /// once per element, even a nil reference).
  private static func emptyEntries(_ capacity: Int) -> [Entry] {
    [Entry](unsafeUninitializedCapacity: capacity) { buffer, initialized in
      for index in 0..<capacity { buffer.initializeElement(at: index, to: Entry(key: 0, object: nil)) }
      initialized = capacity
    }
  }
}
