/// One object per row: a context's registered objects by `ObjectKey`.
///
/// Keys are split by root table, so each dictionary is keyed by a plain `Int64`, which hashes
/// much faster than a struct key; loading rows spends a large share of its time here.
struct IdentityMap {
  private var permanent: [[Int64: ManagedObject]] = []
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
        permanent += Array(repeating: [:], count: root - permanent.count + 1)
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
