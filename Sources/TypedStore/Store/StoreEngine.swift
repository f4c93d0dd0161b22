import Foundation

/// The engine of a store whose rows an engine other than SQLite keeps (PostgreSQL, in the
/// `TypedStorePostgreSQL` library): the connections and the write transactions it gives the
/// store layer, which runs its own reading and writing code on them through the engine seam
/// (`DatabaseConnection`). A store file needs none: `PersistentStore` opens SQLite itself.
package protocol StoreEngine: Sendable {
  associatedtype Connection: DatabaseConnection

  /// The SQL the engine speaks, for the queries the store layer writes for it.
  var dialect: SQLDialect { get }

  /// Calls `observer` when a transaction of the engine's connections finds that another
  /// process migrated the store to another model (and so throws `StoreError.modelChanged`).
  func observeModelChange(_ observer: @escaping @Sendable (StoreError) -> Void)

  /// A new connection for one context's reads, used on the context's executor only.
  func makeReader() throws -> Connection

  /// Runs `work` in one write transaction that holds the store's write lock, with its history
  /// recorded (`HistoryRecorder`), and commits it. `committed` gets what the transaction
  /// recorded, in this process's commit order, before the next write of the engine begins.
  /// On any error nothing is written.
  func write<Work: StoreWork>(_ work: Work, info: TransactionInfo, committed: (RecordedChanges) -> Void) throws
    -> Work.Result

  /// Starts following the commits of other processes (and hosts) to the store of `model`,
  /// after transaction `position` or, when it is nil, after the newest when the follower
  /// first reads, which it hands to `takePosition` (called on the follower's own thread, never
  /// from this call) and goes on after what that returns. What it reads goes to `deliver`, in
  /// commit order, at least every `pollInterval`.
  func followChanges(
    storeIdentifier: UUID, model: ManagedObjectModel, position: Int64?, pollInterval: Duration,
    takePosition: @escaping @Sendable (Int64) -> Int64, deliver: @escaping @Sendable (RemoteChangeEvent) -> Void
  ) -> any ChangeFollower
}

/// Opens a store of another engine from its URL, for `PersistentStore(url:…)` and so for
/// `PersistentContainer`: the engine's library (`TypedStorePostgreSQL`) has one, which the store
/// finds by its name when a store URL's scheme is the engine's, so that an application opens a PostgreSQL store with the
/// same code as a file, the URL aside.
package protocol StoreEngineOpener {
  /// Opens (or, unless `options.isReadOnly`, creates) the store at `url` with `model`: its
  /// engine, its UUID and the URL the store shows (`PersistentStore.url`, in errors too), with
  /// no password. `name` is the container's, a default for what the URL leaves out. A store
  /// of another model is migrated as on a file (`options`, `migration`), or refused.
  static func openEngine(
    at url: URL, name: String?, model: ManagedObjectModel, options: StoreOptions, migration: StagedMigration?
  ) throws -> (engine: any StoreEngine, identifier: UUID, location: URL)

  /// Runs `body` in a read transaction of a new connection to the store at `url`, without
  /// opening it as a store (nothing is written, no model is needed), with where errors say
  /// the store is: how its metadata, its model and a migration's report are read.
  static func read<T>(at url: URL, _ body: (any DatabaseConnection, _ location: String) throws -> T) throws -> T

  /// Destroys the store at `url` (`PersistentContainer.destroyPersistentStore(at:)`); a store
  /// that is not there is fine.
  static func destroy(at url: URL) throws
}

extension PersistentStore {
  /// The engine library's opener of stores at URLs of `scheme`, when it is linked into the
  /// process; nil for a file URL.
  ///
  /// - Throws: `StoreError.invalidStoreType` for a scheme no linked library opens.
  static func opener(for url: URL) throws -> (any StoreEngineOpener.Type)? {
    guard let scheme = url.scheme?.lowercased(), scheme != "file" else { return nil }
    guard scheme == "postgresql" || scheme == "postgres",
      // `TypedStorePostgreSQL.PostgreSQLStoreOpener`, by its mangled name (a module's types are
      // in the process when it is linked; PostgreSQLContainerTests opens a store through it).
      let opener = _typeByName("20TypedStorePostgreSQL21PostgreSQLStoreOpenerO") as? any StoreEngineOpener.Type
    else { throw StoreError.invalidStoreType(scheme: scheme) }
    return opener
  }
}

/// One piece of the store's write path (a save's change set, a batch request, reserved keys),
/// run inside a write transaction of either engine: what a closure generic over the connection
/// would be.
package protocol StoreWork: Sendable {
  associatedtype Result: Sendable
  func apply<C: DatabaseConnection>(connection: C, history: HistoryRecorder<C>) throws -> Result
}

extension PersistentStore {
  /// Runs `work` in one write transaction of the store's engine: the store file's writer
  /// or another engine's; or, inside `transaction` (a migration stage's, on either engine),
  /// in a savepoint of it, with its history, publishing nothing.
  func perform<Work: StoreWork>(_ work: Work, info: TransactionInfo, in transaction: (any DatabaseConnection)? = nil)
    throws -> Work.Result
  {
    if let transaction, !(transaction is SQLiteConnection) {
      return try Self.perform(work, info: info, inMigration: transaction, storeIdentifier: identifier, options: options)
    }
    if let engine {
      guard !options.isReadOnly else { throw StoreError.readOnly(path: url.absoluteString) }
      return try engine.write(work, info: info, committed: publishCommitted)
    }
    return try writer.write(info, in: transaction as? SQLiteConnection) { connection, history in
      try work.apply(connection: connection, history: history)
    }
  }

  /// `work` in a savepoint of another engine's migration transaction.
  private static func perform<Work: StoreWork, Connection: DatabaseConnection>(
    _ work: Work, info: TransactionInfo, inMigration transaction: Connection, storeIdentifier: UUID,
    options: StoreOptions
  ) throws -> Work.Result {
    do {
      return try transaction.savepoint {
        let history = HistoryRecorder(connection: transaction, info: info, isEnabled: options.recordsHistory)
        let result = try work.apply(connection: transaction, history: history)
        _ = try history.finish(storeIdentifier: storeIdentifier)
        return result
      }
    } catch let error as MissingCatalogRow {
      throw StoreError.corrupt(path: "the store being migrated", message: error.description)
    } catch let error as StoreServerError where error.sqlState == "23505" {
      throw StoreError.uniqueConstraintViolation(entity: error.table ?? "", message: error.message)
    }
  }

  /// Throws `StoreError.unsupportedOperation` for a store of another engine than SQLite:
  /// `operation` works on store files only; `instead` says what to do.
  func requireFile(_ operation: String, instead: String) throws {
    guard engine == nil else {
      throw StoreError.unsupportedOperation("\(operation) works on store files only: \(instead)")
    }
  }

  /// Throws `StoreError.unsupportedOperation` for a URL of another engine than SQLite (as
  /// `requireFile(_:instead:)`).
  static func requireFile(at url: URL, _ operation: String, instead: String) throws {
    guard let scheme = url.scheme?.lowercased(), scheme != "file" else { return }
    throw StoreError.unsupportedOperation("\(operation) works on store files only: \(instead)")
  }

  /// The SQL of the store's engine.
  var dialect: SQLDialect { engine?.dialect ?? detachedDialect }

  /// A new connection for one context's reads, of the store's engine.
  func makeReader() throws -> any DatabaseConnection {
    if let engine { return try engine.makeReader() }
    return try makeReadConnection()
  }
}

/// A save's change set (`PersistentStore.write(_:info:connection:history:)`).
package struct ChangeSetWork: StoreWork {
  let store: PersistentStore
  let changes: RowWrites
  let info: TransactionInfo

  package init(store: PersistentStore, changes: RowWrites, info: TransactionInfo) {
    self.store = store
    self.changes = changes
    self.info = info
  }

  package func apply<C: DatabaseConnection>(connection: C, history: HistoryRecorder<C>) throws -> AppliedChanges {
    try store.write(changes, info: info, connection: connection, history: history)
  }
}

/// A batch request's work: an update of the selected rows with `assignments`, or their delete
/// when there are none (`PersistentStore.batchUpdate`, `.batchDelete`).
package struct BatchWork: StoreWork {
  let store: PersistentStore
  let entity: EntityDescription
  let selection: RowSelection
  let filter: RowFilter?
  let includesSubentities: Bool
  let assignments: [(slot: Int32, value: PrimitiveValue)]?

  package init(
    store: PersistentStore, entity: EntityDescription, selection: RowSelection, filter: RowFilter? = nil,
    includesSubentities: Bool, assignments: [(slot: Int32, value: PrimitiveValue)]?
  ) {
    self.store = store
    self.entity = entity
    self.selection = selection
    self.filter = filter
    self.includesSubentities = includesSubentities
    self.assignments = assignments
  }

  package func apply<C: DatabaseConnection>(connection: C, history: HistoryRecorder<C>) throws -> AffectedRows {
    guard let assignments else {
      return try store.batchDelete(
        entity, selection: selection, filter: filter, includesSubentities: includesSubentities,
        connection: connection, history: history)
    }
    return try store.batchUpdate(
      entity, selection: selection, filter: filter, includesSubentities: includesSubentities,
      assignments: assignments, connection: connection, history: history)
  }
}
