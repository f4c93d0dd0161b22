import Foundation
import Synchronization

/// One store file opened with one model: its tables, its metadata and its writer.
///
/// ```swift
/// let store = container.persistentStore
/// print(store.identifier, store.url.path)
/// ```
///
/// Opening never changes a file it refuses, and any number of processes may open or create
/// the same file at once: exactly one creates it, in one write transaction, and the others
/// wait for the write lock and open what it made (`PersistentStore+Opening.swift` has the
/// protocol). A store opened with `StoreOptions.isReadOnly` is never written: its file, its
/// `-wal` and its `-shm` stay byte for byte as they were (docs/file-format.md says how).
public final class PersistentStore: Sendable {
  /// The store's file format version, kept in its metadata.
  ///
  /// Version 3 made `_primary_key` a key floor that inserts leave alone. A store of version 2
  /// is read as it is, and upgraded in place by the first open for writing.
  public static let formatVersion = HistorySchema.recordingFormatVersion

  /// The oldest format version this library opens (see ``formatVersion``).
  static let oldestFormatVersion = 2

  /// The store file.
  public let url: URL
  /// The file SQLite opens for `url`: its path with symbolic links resolved
  /// (`resolvedStorePath`), beside which SQLite keeps the `-wal` and `-shm` files.
  let filePath: String
  /// The store's UUID, fixed when the file is created; part of every `ManagedID`'s URI.
  public let identifier: UUID
  /// The model the store was opened with.
  public let model: ManagedObjectModel
  /// The options the store was opened with.
  public let options: StoreOptions

  let writer: StoreWriter
  /// The schema the store was opened against, checked at the start of every transaction of
  /// its connections: a process whose model another process migrated away from is refused.
  let modelStamp: ModelStamp
  /// A reader for history requests made on the store itself (contexts have their own).
  let historyReader = Mutex<SQLiteConnection?>(nil)
  /// The same, for a store of another engine.
  let engineReader = Mutex<(any DatabaseConnection)?>(nil)
  /// For a read-only store whose opening made SQLite create the `-wal` and `-shm` files:
  /// shared by its connections, it removes them once they have all closed.
  private let companions: CompanionFileCleanup?
  /// By `EntityDescription.index`: the layout of the entity's table.
  private let layoutsByEntity: [TableLayout?]
  /// The engine that keeps the store's rows when it is not the store file's SQLite (see
  /// `init(engine:url:identifier:model:options:publish:)`); nil for a store file.
  /// The SQL of the connections the store's contexts are given without an engine: SQLite's,
  /// or, for a migration stage's store, that of the engine being migrated.
  let detachedDialect: SQLDialect
  let engine: (any StoreEngine)?
  /// Receives what each of the engine's commits recorded, in commit order (a store file's
  /// writer has its own).
  let publishCommitted: @Sendable (RecordedChanges) -> Void

  // MARK: - Opening

  /// Opens the store at `url`, creating it if the file does not exist or is empty.
  ///
  /// - Throws: `StoreError` when the path is a directory, missing or out of the process's
  ///   reach (`permissionDenied`), the file is not a
  ///   database, not a TypedStore store, damaged (its pages or its write-ahead log), of an
  ///   unknown format version, made with another model, or not writable by this process;
  ///   the files are unchanged.
  public convenience init(url: URL, model: ManagedObjectModel, options: StoreOptions = StoreOptions()) throws {
    try self.init(url: url, model: model, options: options, publish: { _ in })
  }

  /// Opens the store; `publish` receives what each committed write changed, in commit order,
  /// while the writer lock is held (it must not block). A URL of another engine's scheme
  /// (`postgresql://`) opens through that engine's library (`StoreEngineOpener`), with
  /// `containerName` naming what the URL leaves out, and migrates as a file does.
  convenience init(
    url: URL, model: ManagedObjectModel, options: StoreOptions, migration: StagedMigration? = nil,
    containerName: String? = nil, publish: @escaping @Sendable (RecordedChanges) -> Void
  ) throws {
    if let opener = try Self.opener(for: url) {
      let opened = try opener.openEngine(
        at: url, name: containerName, model: model, options: options, migration: migration)
      self.init(
        engine: opened.engine, url: opened.location, identifier: opened.identifier, model: model, options: options,
        publish: publish)
      return
    }
    try self.init(fileAt: url, model: model, options: options, migration: migration, publish: publish)
  }

  /// Opens the store file at `url` (see `init(url:model:options:migration:containerName:publish:)`).
  private init(
    fileAt url: URL, model: ManagedObjectModel, options: StoreOptions, migration: StagedMigration?,
    publish: @escaping @Sendable (RecordedChanges) -> Void
  ) throws {
    self.url = url
    self.filePath = resolvedStorePath(url.path)
    self.model = model
    self.options = options
    let layouts = Self.layouts(of: model)
    self.layoutsByEntity = layouts
    self.engine = nil
    self.detachedDialect = .sqlite
    self.publishCommitted = { _ in }

    let tables = layouts.indices.compactMap { index in
      layouts[index].flatMap { $0.root.index == Int32(index) ? $0 : nil }  // each root's, in the roots' order
    }
    let file = filePath
    let (connection, identifier, companions) = try StoreError.naming(url.path, for: file) {
      try Self.openFile(path: file, model: model, tables: tables, options: options, migration: migration)
    }
    self.identifier = identifier
    self.companions = companions
    let stamp = try ModelStamp(connection: connection, model: model)
    connection.transactionCheck = { try stamp.check($0) }
    self.modelStamp = stamp
    let pruner = AutomaticPruner(options: options)
    self.writer = StoreWriter(
      connection: connection, path: url.path, storeIdentifier: identifier, options: options,
      publish: { committed in
        publish(committed)
        pruner?.didCommit(committed)
      })
    ModelRegistry.register(identifier, model: model)
    pruner?.attach(self)
  }

  /// The store a migration stage's contexts work in: `model` is the stage's version, the
  /// file is the one being migrated, and every write goes into the migration's transaction
  /// through the contexts (`StoreWriter.init(migrationStageAt:storeIdentifier:)`). It is not
  /// registered: IDs of the store resolve with the model it is opened with.
  convenience init(
    migrationStageOf url: URL, identifier: UUID, model: ManagedObjectModel, options: StoreOptions,
    dialect: SQLDialect = .sqlite
  ) {
    self.init(
      detachedAt: url, filePath: dialect == .sqlite ? resolvedStorePath(url.path) : url.path, writerPath: url.path,
      identifier: identifier, model: model, options: options, engine: nil, dialect: dialect, publish: { _ in })
  }

  /// A store whose rows `engine` keeps (a PostgreSQL schema, at `url`), opened already by the
  /// engine's library with `model` and the store's `identifier`: contexts read on the engine's
  /// connections and save, reserve keys and run batch requests in its write transactions,
  /// with the same code as on a store file; `publish` receives what each of them recorded.
  /// It is registered, so that its IDs resolve, and prunes its history by itself as a file
  /// does (`StoreOptions.automaticHistoryPruning`).
  package convenience init(
    engine: any StoreEngine, url: URL, identifier: UUID, model: ManagedObjectModel, options: StoreOptions,
    publish: @escaping @Sendable (RecordedChanges) -> Void
  ) {
    let pruner = AutomaticPruner(options: options)
    self.init(
      detachedAt: url, filePath: url.absoluteString, writerPath: url.absoluteString, identifier: identifier,
      model: model, options: options, engine: engine, dialect: engine.dialect,
      publish: { committed in
        publish(committed)
        pruner?.didCommit(committed)
      })
    let stamp = modelStamp
    engine.observeModelChange { stamp.report($0) }
    ModelRegistry.register(identifier, model: model)
    pruner?.attach(self)
  }

  /// A store with no file connection of its own: its writer (named `writerPath` in errors)
  /// refuses every write outside a migration stage's transaction, and `engine`, when given,
  /// keeps its rows.
  private init(
    detachedAt url: URL, filePath: String, writerPath: String, identifier: UUID, model: ManagedObjectModel,
    options: StoreOptions, engine: (any StoreEngine)?, dialect: SQLDialect,
    publish: @escaping @Sendable (RecordedChanges) -> Void
  ) {
    self.url = url
    self.filePath = filePath
    self.model = model
    self.options = options
    self.identifier = identifier
    self.layoutsByEntity = Self.layouts(of: model)
    self.companions = nil
    self.modelStamp = ModelStamp(migrationStageOf: model)
    self.writer = StoreWriter(
      migrationStageAt: writerPath, storeIdentifier: identifier, recordsHistory: options.recordsHistory)
    self.engine = engine
    self.detachedDialect = dialect
    self.publishCommitted = publish
  }

  /// A store whose rows another engine keeps (a PostgreSQL schema, at `url`): its model,
  /// table layouts and identity, for that engine's writer, which runs the store's write path
  /// (`write(_:info:connection:history:)`) on its own connection. Its own writer refuses every
  /// write; it is not registered.
  package convenience init(onAnotherEngineAt url: URL, identifier: UUID, model: ManagedObjectModel) {
    self.init(migrationStageOf: url, identifier: identifier, model: model, options: StoreOptions())
  }

  private static func layouts(of model: ManagedObjectModel) -> [TableLayout?] {
    var layouts = [TableLayout?](repeating: nil, count: model.entities.count)
    for root in model.entities where root.isRoot {
      let hierarchy = model.entities.filter { $0.rootName == root.name }
      let layout = TableLayout(root: root, hierarchy: hierarchy, entityCount: model.entities.count)
      for entity in hierarchy { layouts[Int(entity.index)] = layout }
    }
    return layouts
  }

  // MARK: - Connections and layout

  /// A new connection for reading, used by one context on its executor. `queryOnly` false is
  /// for `VACUUM INTO` (a backup), which writes another file and which `query_only` refuses.
  func makeReadConnection(queryOnly: Bool = true) throws -> SQLiteConnection {
    let connection = try SQLiteConnection(
      path: filePath, mode: options.isReadOnly ? .readOnly : .readWrite, busyTimeout: options.busyTimeout,
      companions: companions)
    try connection.configure(enableWAL: false)
    if queryOnly { try connection.execute("PRAGMA query_only=1") }
    let stamp = modelStamp
    connection.transactionCheck = { try stamp.check($0) }
    return connection
  }

  func layout(of entity: EntityDescription) -> TableLayout {
    // By index, not by the root's name: hashing the name showed in every save's profile.
    let index = Int(entity.index)
    guard index < layoutsByEntity.count, let layout = layoutsByEntity[index] else {
      preconditionFailure("entity \(entity.name) has no table in this store")
    }
    return layout
  }

  /// The metadata of the open store.
  public func metadata() throws -> [String: String] {
    if engine != nil { return try withHistoryReader { try Self.readMetadata($0) ?? [:] } }
    return try writer.withConnection { try Self.readMetadata($0) ?? [:] }
  }

  /// Copies every committed transaction from the write-ahead log into the store file now.
  ///
  /// The store does this by itself, on a background queue, after a commit that grows the log
  /// past `StoreOptions.checkpointThresholdPages`; the next write waits for that work. Call
  /// this before copying the store file, or right after a large import, to do the work now.
  /// It waits for a write in progress (in this process or another) up to the busy timeout.
  ///
  /// ```swift
  /// try container.persistentStore.checkpoint()
  /// ```
  ///
  /// - Returns: true when the whole log was copied; false when a reader still using older
  ///   transactions kept part of it in the log (it is copied by a later checkpoint). A store of
  ///   another engine (PostgreSQL) has no log of its own: true, at once.
  /// - Throws: `StoreError` when SQLite fails.
  @discardableResult
  public func checkpoint() throws -> Bool {
    if engine != nil { return true }
    do {
      return try writer.checkpointNow()
    } catch let error as SQLiteError {
      throw Self.storeError(error, path: url.path)
    }
  }
}
