/// How a store is opened.
///
/// ```swift
/// var options = StoreOptions()
/// options.busyTimeout = .seconds(10)
/// let container = try PersistentContainer(name: "Notes", model: model, storeURL: url, options: options)
/// ```
public struct StoreOptions: Sendable {
  /// How long a write waits for the cross-process write lock before it throws
  /// `SQLiteError` with `SQLITE_BUSY`. SQLite's busy state never reaches a caller sooner.
  public var busyTimeout: Duration = .seconds(5)
  /// Whether every write is recorded in persistent history (on by default).
  public var recordsHistory = true
  /// Pages in the WAL after which the writer checkpoints (RESTART mode) after its commit.
  public var checkpointThresholdPages: Int32 = 1000

  /// The defaults: 5 s busy timeout, history on, checkpoint after 1,000 WAL pages.
  public init() {}
}
