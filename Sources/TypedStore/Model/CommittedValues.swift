/// The saved values of the attributes of one object that changed since its last save, by
/// slot. Usually one or two entries: a small array, cheaper than a dictionary per object,
/// kept in slot order as entries are added (a save reads each object's entries in that order,
/// and sorting a copy for each object cost an array per object saved).
struct CommittedValues: Sequence {
  private var entries: [(key: Int32, value: PrimitiveValue)] = []

  var isEmpty: Bool { entries.isEmpty }

  /// The changed slots, in slot order.
  var keys: [Int32] { entries.map(\.key) }

  subscript(slot: Int32) -> PrimitiveValue? {
    get { entries.first { $0.key == slot }?.value }
    set {
      if let index = entries.firstIndex(where: { $0.key == slot }) {
        if let newValue { entries[index].value = newValue } else { entries.remove(at: index) }
      } else if let newValue {
        if let later = entries.firstIndex(where: { $0.key > slot }) {
          entries.insert((slot, newValue), at: later)
        } else {
          entries.append((slot, newValue))
        }
      }
    }
  }

  mutating func removeAll() { entries.removeAll() }

  /// Entries in slot order.
  func makeIterator() -> IndexingIterator<[(key: Int32, value: PrimitiveValue)]> {
    entries.makeIterator()
  }
}
