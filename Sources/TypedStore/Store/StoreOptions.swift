/// How a store is opened: TypedStore's counterpart of Core Data's
/// `NSPersistentStoreDescription`.
///
/// Core Data's description names the store's file and type as well as its options; here the
/// file is the container's `storeURL` and the type is always SQLite, so what remains are the
/// options (read-only, history, busy timeout, automatic pruning and the others below). The name
/// says what it holds.
///
/// ```swift
/// var options = StoreOptions()
/// options.busyTimeout = .seconds(10)
/// let container = try PersistentContainer(name: "Notes", model: model, storeURL: url, options: options)
/// ```
public struct StoreOptions: Sendable {
  /// How long a write waits for the cross-process write lock before it throws
  /// `SQLiteError` with `SQLITE_BUSY`. SQLite's busy state never reaches a caller sooner.
  /// Opening waits as long for another process that is creating the same store.
  public var busyTimeout: Duration = .seconds(5)
  /// Whether every write is recorded in persistent history (on by default).
  public var recordsHistory = true
  /// Pages in the WAL after which the writer checkpoints (RESTART mode) after its commit.
  public var checkpointThresholdPages: Int32 = 1000
  /// Opens the store for reading only, as Core Data's read-only store option does: fetches
  /// and history work; a save, a batch request or a history deletion throws
  /// `StoreError.readOnly` before touching anything. The store must exist. Use it for a
  /// store this process may not write.
  ///
  /// ```swift
  /// var options = StoreOptions()
  /// options.isReadOnly = true
  /// let container = try PersistentContainer(name: "Notes", model: model, storeURL: url, options: options)
  /// ```
  public var isReadOnly = false
  /// Opens a store whose write-ahead log is damaged (`StoreError.damagedWAL`) anyway: SQLite
  /// keeps the transactions it can replay and the rest is lost. The damaged log is first
  /// copied beside the store as `<store>-wal.damaged-<seconds since 1970>`, so nothing is
  /// deleted that a recovery tool could still read.
  public var opensDamagedWAL = false

  /// How often a container looks for commits of other processes when inotify reports
  /// nothing (the backstop: inotify wakes the monitor within microseconds of a commit).
  public var remoteChangePollInterval: Duration = .seconds(1)

  /// Whether the remote-change monitor watches the store's folder with inotify (on by
  /// default). Turn it off where inotify does not report other processes' writes (some
  /// container or network file systems): the poll is then the only wake-up, so lower
  /// `remoteChangePollInterval` to the delay you can accept.
  public var remoteChangeUsesInotify = true

  /// Prunes history by itself after commits (off by default); see `AutomaticHistoryPruning`.
  public var automaticHistoryPruning: AutomaticHistoryPruning?

  /// Whether opening a store whose model differs from the given one migrates it (on by
  /// default), as Core Data's `shouldMigrateStoreAutomatically`. Off, such an open throws
  /// `StoreError.modelMismatch` and changes nothing. See [Migration](migration.md).
  ///
  /// ```swift
  /// var options = StoreOptions()
  /// options.shouldMigrateStoreAutomatically = false   // refuse instead of migrating
  /// ```
  public var shouldMigrateStoreAutomatically = true

  /// Whether a migration may be inferred from the two models (on by default), as Core Data's
  /// `shouldInferMappingModelAutomatically`: added and removed entities, attributes,
  /// relationships and indexes, renames declared with `originalName:`, and the other changes
  /// of the inference table in [Migration](migration.md). Off, every migration must be
  /// explicit, and a store with another model throws ``MigrationError/migrationPlanRequired(storeHash:modelHash:)``.
  public var shouldInferMappingModelAutomatically = true

  /// The defaults: 5 s busy timeout, history on, checkpoint after 1,000 WAL pages, read-write,
  /// inferred migration on.
  public init() {}
}
