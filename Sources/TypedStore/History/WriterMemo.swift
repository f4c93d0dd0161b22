/// What the writer connection learned about the store in its own last commit: the next
/// primary key of the tables it inserted into and the next history transaction number and change ID. A
/// write transaction that finds the memo valid uses these instead of asking the database (two
/// queries of a one-object save, about 12,000 of its 80,000 instructions).
///
/// The memo is valid only while no other connection has committed since: `validAt` is the
/// connection's data version right after the commit that left it (`SQLiteConnection.fileDataVersion`),
/// which SQLite moves when the connection begins a transaction after another connection's
/// commit, in this process or another, and with every commit of its own. Every write through
/// the store's writer hands the memo back at its commit: those that move what it holds keep
/// it right (inserts, `reservePrimaryKeys`), the others leave it as it was (a checkpoint row, a
/// history deletion, which never moves the horizon past the next number). A commit of this
/// connection outside the writer's `write` (there is none today) would leave it invalid. A
/// transaction that begins again after a conflict (`undoWrites`) drops it.
///
/// Deletes never move what it holds: the next key is one above the largest key and the key
/// floor, and a delete of a table's largest keys raises the floor to them.
struct WriterMemo {
  /// The connection's data version right after the commit that left these values; nil for
  /// none.
  var validAt: UInt32?
  /// By root entity index: the table's next primary key, 0 when not known.
  private var nextKeys: [Int64] = []
  /// The next history transaction number, when known.
  var nextNumber: Int64?
  /// The ID of the next history change row, when known (a deletion of the last change rows
  /// leaves it above the largest: IDs are skipped, never given twice).
  var nextChangeID: Int64?

  /// The memo to begin a transaction with: this one when the connection's data version is
  /// still the one it was left at, an empty one otherwise.
  func current(dataVersion: UInt32) -> WriterMemo {
    validAt == dataVersion ? self : WriterMemo()
  }

  /// The next primary key of the table of root entity `root`, when known.
  func nextKey(root: Int32) -> Int64? {
    let index = Int(root)
    return index < nextKeys.count && nextKeys[index] > 0 ? nextKeys[index] : nil
  }

  mutating func setNextKey(_ key: Int64, root: Int32) {
    let index = Int(root)
    if index >= nextKeys.count { nextKeys += repeatElement(0, count: index - nextKeys.count + 1) }
    nextKeys[index] = key
  }
}
