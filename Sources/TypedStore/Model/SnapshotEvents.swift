/// Why an object's values were set back from a snapshot, for
/// `ManagedObject.awake(fromSnapshotEvents:)` (Core Data's `NSSnapshotEventType`, with its raw
/// values). TypedStore has no undo manager: of the undo events, none is sent.
///
/// ```swift
/// override func awake(fromSnapshotEvents events: SnapshotEvents) {
///   super.awake(fromSnapshotEvents: events)
///   if events.contains(.rollback) { searchKey = title.lowercased() }
/// }
/// ```
public struct SnapshotEvents: OptionSet, Sendable, Hashable {
  public let rawValue: UInt

  /// Makes a set of events from Core Data's raw value.
  public init(rawValue: UInt) { self.rawValue = rawValue }

  /// An undo of the object's insertion (not sent: TypedStore has no undo manager).
  public static let undoInsertion = SnapshotEvents(rawValue: 1 << 1)
  /// An undo of the object's deletion (not sent).
  public static let undoDeletion = SnapshotEvents(rawValue: 1 << 2)
  /// An undo of a change of the object (not sent).
  public static let undoUpdate = SnapshotEvents(rawValue: 1 << 3)
  /// `rollback()` discarded the object's changes or deletion.
  public static let rollback = SnapshotEvents(rawValue: 1 << 4)
  /// The object was refreshed (not sent: a refresh turns the object into a fault, and it
  /// calls `willTurnIntoFault()`, `didTurnIntoFault()` and `awakeFromFetch()`).
  public static let refresh = SnapshotEvents(rawValue: 1 << 5)
  /// The merge policy resolved a conflict of the object during a save.
  public static let mergePolicy = SnapshotEvents(rawValue: 1 << 6)
}
