/// One object per row: a context's registered objects by `ObjectKey`.
///
/// Loading rows spends a large share of its time here, so the map does without `Dictionary`
/// and its SipHash, which cost more than the rest of a lookup: permanent keys go to one
/// `KeyTable` per root table (pages of consecutive primary keys, found through a small
/// directory), and temporary keys, one per inserted object and numbered in sequence, to one
/// more `KeyTable`.
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

/// A map from `Int64` keys to objects, built for primary keys, which mostly come in runs of
/// consecutive numbers.
///
/// The keys are split into pages of `pageSize` consecutive keys. A page's objects sit side by
/// side in one array (`slots`), pages in the order they were made; a small open-addressing
/// directory (linear probing, Fibonacci hashing of the page number, at most half full,
/// deletion by backward shift) finds a page. So a fetch in key order, the common case, fills
/// memory sequentially, and a context that goes away releases its objects in about the order
/// they were made, instead of missing the processor's cache on every one (a hash table per
/// key cost a cache miss per row on both ends). A lone key costs one page (`pageSize`
/// references); consecutive keys cost about one reference each.
struct KeyTable {
  /// log2 of the keys per page.
  private static let pageShift = 5
  private static let pageSize = 1 << pageShift

  private struct DirectoryEntry {
    var page: Int64
    /// The page's index in `slots` (in pages), or -1 for an empty entry.
    var index: Int32

    static let empty = DirectoryEntry(page: 0, index: -1)
  }

  private var directory: [DirectoryEntry] = []
  private var directoryShift = 64
  private var pagesInDirectory = 0
  /// The objects, `pageSize` slots a page.
  private var slots: [ManagedObject?] = []
  /// Each page's number (its keys shifted right by `pageShift`).
  private var pageNumbers: [Int64] = []
  /// Each page's object count, or -1 for a page on the free list.
  private var pageCounts: [Int32] = []
  /// Pages with no objects and no directory entry, for reuse.
  private var freePages: [Int32] = []

  private(set) var count = 0
  /// The count at which `dropUnreferenced` next looks for objects to drop.
  private(set) var dropThreshold = KeyTable.minimumDropThreshold

  static let minimumDropThreshold = 4_096

  private func home(_ page: Int64) -> Int {
    Int(truncatingIfNeeded: (UInt64(bitPattern: page) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(directoryShift))
      & (directory.count - 1)
  }

  /// The directory position of `page`, or the empty position where it would go.
  private func position(of page: Int64) -> Int {
    let mask = directory.count - 1
    var index = home(page)
    while directory[index].index >= 0 && directory[index].page != page { index = (index + 1) & mask }
    return index
  }

  /// The slot of `key`, if its page exists.
  private func slot(of key: Int64) -> Int? {
    guard pagesInDirectory > 0 else { return nil }
    let page = directory[position(of: key >> Self.pageShift)].index
    return page < 0 ? nil : Int(page) << Self.pageShift | Int(key & Int64(Self.pageSize - 1))
  }

  subscript(key: Int64) -> ManagedObject? {
    get { slot(of: key).flatMap { slots[$0] } }
    set {
      if let newValue {
        let slot = reserveSlot(for: key)
        if slots[slot] == nil {
          count += 1
          pageCounts[slot >> Self.pageShift] += 1
        }
        slots[slot] = newValue
      } else if let slot = slot(of: key), slots[slot] != nil {
        slots[slot] = nil
        count -= 1
        let page = slot >> Self.pageShift
        pageCounts[page] -= 1
        if pageCounts[page] == 0 { freePage(page) }
      }
    }
  }

  /// The slot of `key` for `object(at:)` and `insert(_:key:at:)`, after making room for it:
  /// one directory lookup serves a lookup that may be followed by an insert.
  mutating func reserveSlot(for key: Int64) -> Int {
    let number = key >> Self.pageShift
    let offset = Int(key & Int64(Self.pageSize - 1))
    if (pagesInDirectory + 1) * 2 > directory.count { growDirectory() }
    let position = position(of: number)
    if directory[position].index >= 0 { return Int(directory[position].index) << Self.pageShift | offset }
    // A page the caller may leave empty (if loading its object fails); `dropUnreferenced`
    // frees such pages.
    let page = newPage(number)
    directory[position] = DirectoryEntry(page: number, index: Int32(page))
    pagesInDirectory += 1
    return page << Self.pageShift | offset
  }

  /// The object in a slot `reserveSlot(for:)` returned.
  func object(at slot: Int) -> ManagedObject? { slots[slot] }

  /// Fills an empty slot `reserveSlot(for: key)` returned, with no change in between.
  mutating func insert(_ object: ManagedObject, key: Int64, at slot: Int) {
    precondition(slots[slot] == nil, "TypedStore: identity map slot already taken")
    assert(
      pageNumbers[slot >> Self.pageShift] == key >> Self.pageShift
        && slot & (Self.pageSize - 1) == Int(key & Int64(Self.pageSize - 1)), "not the slot reserved for this key")
    slots[slot] = object
    pageCounts[slot >> Self.pageShift] += 1
    count += 1
  }

  /// The pages that hold objects (or were reserved for one).
  var pagesInUse: Int { pagesInDirectory }

  /// Every object, page by page.
  var values: [ManagedObject] { slots.compactMap { $0 } }

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
    var dropped = 0
    for page in pageCounts.indices where pageCounts[page] >= 0 {
      for slot in page << Self.pageShift..<(page + 1) << Self.pageShift {
        // Checked before any other reference to the object is made here (false for nil).
        guard isKnownUniquelyReferenced(&slots[slot]) else { continue }
        if let object = slots[slot], isDroppable(object) {
          slots[slot] = nil
          pageCounts[page] -= 1
          dropped += 1
        }
      }
      if pageCounts[page] == 0 { freePage(page) }
    }
    count -= dropped
    if freePages.count > max(64, pageCounts.count / 2) { compact() }
    dropThreshold = max(Self.minimumDropThreshold, count * 2)
    return dropped
  }

  // MARK: - Pages

  private mutating func newPage(_ number: Int64) -> Int {
    if let page = freePages.popLast().map(Int.init) {
      pageNumbers[page] = number
      pageCounts[page] = 0
      return page
    }
    let page = pageCounts.count
    slots.append(contentsOf: repeatElement(nil, count: Self.pageSize))
    pageNumbers.append(number)
    pageCounts.append(0)
    return page
  }

  /// Takes an empty page out of the directory and puts it on the free list.
  private mutating func freePage(_ page: Int) {
    var hole = position(of: pageNumbers[page])
    let mask = directory.count - 1
    var index = hole
    while true {
      index = (index + 1) & mask
      guard directory[index].index >= 0 else { break }
      let wanted = home(directory[index].page)
      // Move the entry back into the hole unless its home lies cyclically in (hole, index].
      let stays = hole <= index ? (hole < wanted && wanted <= index) : (hole < wanted || wanted <= index)
      if !stays {
        directory[hole] = directory[index]
        hole = index
      }
    }
    directory[hole] = .empty
    pagesInDirectory -= 1
    pageCounts[page] = -1
    freePages.append(Int32(page))
  }

  private mutating func growDirectory() {
    rebuildDirectory(capacity: max(16, directory.count * 2))
  }

  /// A directory of `capacity` entries for the pages in use.
  private mutating func rebuildDirectory(capacity: Int) {
    directory = [DirectoryEntry](repeating: .empty, count: capacity)
    directoryShift = 64 - capacity.trailingZeroBitCount
    pagesInDirectory = 0
    for page in pageCounts.indices where pageCounts[page] >= 0 {
      directory[position(of: pageNumbers[page])] = DirectoryEntry(page: pageNumbers[page], index: Int32(page))
      pagesInDirectory += 1
    }
  }

  /// Moves the pages in use together, in their order, dropping the free ones: objects move,
  /// with no reference counting per object.
  private mutating func compact() {
    var old: [ManagedObject?] = []
    swap(&old, &slots)
    let oldNumbers = pageNumbers
    let oldCounts = pageCounts
    pageNumbers = []
    pageCounts = []
    freePages = []
    let live = oldCounts.lazy.filter { $0 >= 0 }.count
    slots.reserveCapacity(live << Self.pageShift)
    for page in oldCounts.indices where oldCounts[page] >= 0 {
      pageNumbers.append(oldNumbers[page])
      pageCounts.append(oldCounts[page])
      for slot in page << Self.pageShift..<(page + 1) << Self.pageShift { slots.append(old[slot].take()) }
    }
    var capacity = 16
    while live * 2 > capacity { capacity *= 2 }
    rebuildDirectory(capacity: capacity)
  }
}
