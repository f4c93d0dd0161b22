import Foundation
import Synchronization
import TypedStore

/// The connections and write transactions of a store on PostgreSQL: what SQLite's connections
/// and `StoreWriter` are to a store file (issue 27; docs/postgresql.md).
///
/// Every write is one transaction at READ COMMITTED that takes the store's write lock first (the
/// history counter row's, `PostgreSQLConnection.writeTransaction`), applies its work with the
/// store's own write path (the same code, through the engine seam, as on SQLite), records its
/// history with the `HistoryRecorder`, which moves the counter and queues the notification
/// last, and commits. So writers on any number of hosts take turns, history numbers are dense
/// and in commit order, and a failure at any step leaves nothing: no rows without history, no
/// history without rows.
///
/// The writing connection is used by one write at a time (a `Mutex`), as a store file's writer
/// connection is; writers of other processes wait on the lock, up to `lockTimeout`. A write
/// that finds the connection lost (the server restarted, the network went) throws
/// `PostgreSQLError` of kind `.connection`, and the next write connects again: nothing of the
/// failed write was committed, unless the connection went during its `COMMIT`, which only the
/// history can tell (its transaction is there, or not).
package final class PostgreSQLStoreEngine: StoreEngine {
  /// nil after a lost connection, until the next write connects again.
  private let connection: Mutex<PostgreSQLConnection?>
  private let url: String
  private let schema: String
  private let storeIdentifier: UUID
  private let lockTimeout: Duration
  private let recordsHistory: Bool
  /// The hash of the model the store was opened with, which every transaction checks
  /// (`PostgreSQLConnection.expectedModel`); nil: no check.
  private let modelHash: String?
  private let modelChangeObserver = Mutex<(@Sendable (StoreError) -> Void)?>(nil)

  package var dialect: SQLDialect { .postgreSQL }

  /// The engine of the store `storeIdentifier` in `schema` (whose tables exist) on the server
  /// at `url`, its writing connection connected now. With `modelHash`, every transaction of
  /// its connections first checks that the store still has that model.
  package init(
    url: String, schema: String, storeIdentifier: UUID, lockTimeout: Duration = .seconds(5),
    recordsHistory: Bool = true, modelHash: String? = nil
  ) throws {
    self.connection = Mutex(try Self.connect(url: url, schema: schema))
    self.url = url
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.lockTimeout = lockTimeout
    self.recordsHistory = recordsHistory
    self.modelHash = modelHash
    connection.withLock { connection in
      if let connection { expect(on: connection) }
    }
  }

  private static func connect(url: String, schema: String) throws(PostgreSQLError) -> PostgreSQLConnection {
    let connection = try PostgreSQLConnection(url: url)
    try connection.use(schema: schema)
    return connection
  }

  /// A new connection to the store's schema that checks the model.
  private func connect() throws(PostgreSQLError) -> PostgreSQLConnection {
    let connection = try Self.connect(url: url, schema: schema)
    expect(on: connection)
    return connection
  }

  private func expect(on connection: PostgreSQLConnection) {
    guard let modelHash else { return }
    connection.expectedModel = PostgreSQLConnection.ExpectedModel(hash: modelHash) { [weak self] error in
      self?.modelChanged(error)
    }
  }

  private func modelChanged(_ error: StoreError) {
    modelChangeObserver.withLock { $0 }?(error)
  }

  package func observeModelChange(_ observer: @escaping @Sendable (StoreError) -> Void) {
    modelChangeObserver.withLock { $0 = observer }
  }

  /// A listener of the store's schema (`PostgreSQLChangeListener`), started now, whose events
  /// go to the store's change publisher.
  package func followChanges(
    storeIdentifier: UUID, model: ManagedObjectModel, position: Int64?, pollInterval: Duration,
    takePosition: @escaping @Sendable (Int64) -> Int64, deliver: @escaping @Sendable (RemoteChangeEvent) -> Void
  ) -> any ChangeFollower {
    // The schema's name was checked when the store opened, so the listener's history is made.
    let listener = try? PostgreSQLChangeListener(
      url: url, schema: schema, storeIdentifier: storeIdentifier, model: model, after: position,
      pollInterval: pollInterval, takePosition: takePosition
    ) { [weak self] event in
      if case .modelChanged(let error) = event { self?.modelChanged(error) }
      PostgreSQLChangeFollower.deliver(event, to: deliver)
    }
    guard let listener else { return StoppedFollower() }
    listener.start()
    return PostgreSQLChangeFollower(listener: listener)
  }

  /// A new connection to the store's schema, for one context's reads.
  package func makeReader() throws -> PostgreSQLConnection {
    try connect()
  }

  /// Runs `work` in one write transaction with its history, and hands `committed` what was
  /// recorded once it committed, still holding the engine's connection (so in commit order).
  ///
  /// - Throws: what the store's write path throws (`StoreError.mergeConflict`,
  ///   `StoreError.danglingReference`, `StoreError.deleteDenied`, a uniqueness clash;
  ///   `.uniqueConstraintViolation` for a row the server's unique indexes refuse), or
  ///   `PostgreSQLError` (`55P03` when the lock was not had in time); nothing is written then.
  package func write<Work: StoreWork>(
    _ work: Work, info: TransactionInfo, committed: (RecordedChanges) -> Void
  ) throws -> Work.Result {
    try connection.withLock { connection in
      let live = try connection ?? connect()
      connection = live
      do {
        let (result, recorded) = try live.writeTransaction(lockTimeout: lockTimeout) {
          let history = HistoryRecorder(connection: live, info: info, isEnabled: recordsHistory)
          if let counter = live.lockedCounter {
            history.follows(lastNumber: counter.last, lastChangeID: counter.lastChange)
          }
          let result = try work.apply(connection: live, history: history)
          return (result, try history.finish(storeIdentifier: storeIdentifier))
        }
        if let recorded { committed(recorded) }
        return result
      } catch let error as PostgreSQLError where error.kind == .connection {
        connection = nil  // the next write connects again
        throw error
      } catch let error as PostgreSQLError where error.sqlState == "23505" {
        throw StoreError.uniqueConstraintViolation(entity: error.table ?? "", message: error.message)
      } catch let error as MissingCatalogRow {
        throw StoreError.corrupt(path: "PostgreSQL schema \(schema)", message: error.description)
      }
    }
  }
}

extension PostgreSQLStoreEngine {
  /// Opens the store in `schema` on the server at `url` with `model`, creating its tables when
  /// the schema has none and `options.isReadOnly` is false (`PostgreSQLStoreTables.open(on:)`):
  /// its engine and UUID. A write waits for the store's write lock up to `options.busyTimeout`.
  ///
  /// - Throws: what `PostgreSQLStoreTables.open(on:)` throws (`StoreError.modelMismatch`, …),
  ///   `StoreError.notFound` for a read-only open of a schema without a store, or
  ///   `PostgreSQLError` when the server cannot be reached.
  package static func open(
    url: String, schema: String, model: ManagedObjectModel, options: StoreOptions, migration: StagedMigration? = nil
  ) throws -> (engine: PostgreSQLStoreEngine, identifier: UUID) {
    let connection = try PostgreSQLConnection(url: url)
    let opened = try PostgreSQLStoreTables(schema: schema, model: model).open(
      on: connection, options: options, migration: migration)
    // The open's connection holds the schema's in-use lock until the engine's holds it, so
    // that no `destroy(at:)` of another process drops the schema in between.
    let engine = try withExtendedLifetime(connection) {
      try PostgreSQLStoreEngine(
        url: url, schema: schema, storeIdentifier: opened.identifier, lockTimeout: options.busyTimeout,
        recordsHistory: options.recordsHistory, modelHash: model.versionHash)
    }
    return (engine, opened.identifier)
  }

  /// `open(url:schema:model:options:)` as a `PersistentStore` whose contexts read and write on
  /// PostgreSQL; `publish` receives what each of the store's commits in this process recorded,
  /// in commit order. The store's `url` is `location`, or `url` without one.
  package static func openStore(
    url: String, schema: String, model: ManagedObjectModel, options: StoreOptions = StoreOptions(),
    location: URL? = nil, publish: @escaping @Sendable (RecordedChanges) -> Void = { _ in }
  ) throws -> PersistentStore {
    let (engine, identifier) = try open(url: url, schema: schema, model: model, options: options)
    return PersistentStore(
      engine: engine, url: location ?? URL(string: url) ?? URL(fileURLWithPath: schema), identifier: identifier,
      model: model, options: options, publish: publish)
  }
}

/// Opens `postgresql://` stores for `PersistentStore` and `PersistentContainer` (found by its
/// name, so that an application needs no call to this library: only the URL and the dependency).
///
/// The URL is libpq's connection URI, plus a `schema` query parameter naming the store's schema
/// (lowercase letters, digits and `_`); without one, the schema is the container's name in
/// lowercase, other characters as `_` (`typedstore` without a container).
package enum PostgreSQLStoreOpener: StoreEngineOpener {
  package static func openEngine(
    at url: URL, name: String?, model: ManagedObjectModel, options: StoreOptions, migration: StagedMigration?
  ) throws -> (engine: any StoreEngine, identifier: UUID, location: URL) {
    let (connection, schema) = location(of: url, name: name)
    let opened = try PostgreSQLStoreEngine.open(
      url: connection, schema: schema, model: model, options: options, migration: migration)
    return (opened.engine, opened.identifier, withoutPassword(url))
  }

  /// `url` without a password, in its user part or its query: what a store shows of its
  /// location (errors and the tool print it).
  static func withoutPassword(_ url: URL) -> URL {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
    components.password = nil
    if let items = components.queryItems, items.contains(where: { $0.name == "password" }) {
      components.queryItems = items.filter { $0.name != "password" }
    }
    return components.url ?? url
  }

  package static func read<T>(at url: URL, _ body: (any DatabaseConnection, String) throws -> T) throws -> T {
    let (url, schema) = location(of: url, name: nil)
    let history = try PostgreSQLHistory(schema: schema)  // checks the name
    let connection = try PostgreSQLConnection(url: url)
    try connection.use(schema: history.schema)
    return try connection.readTransaction { try body(connection, "PostgreSQL schema \(schema)") }
  }

  /// Drops the store's schema, in one transaction under the advisory lock opens take: refused
  /// (`StoreError.storeInUse`) while a session of any process uses the store, which every
  /// store connection says with a shared advisory lock of the schema
  /// (`PostgreSQLConnection.use(schema:)`); `StoreError.notATypedStore` for a schema with
  /// other tables and no store. A missing schema is fine.
  ///
  /// It waits up to 5 seconds for those sessions to end: a container just released closes its
  /// change listener's connection a moment later, on the listener's own thread.
  package static func destroy(at url: URL) throws { try destroy(at: url, closingTimeout: .seconds(5)) }

  /// `destroy(at:)`, waiting up to `closingTimeout` for the store's sessions to end.
  package static func destroy(at url: URL, closingTimeout: Duration) throws {
    let (url, schema) = location(of: url, name: nil)
    let history = try PostgreSQLHistory(schema: schema)  // checks the name
    let connection = try PostgreSQLConnection(url: url)
    let place = "PostgreSQL schema \(schema)"
    try connection.transaction {
      try connection.execute("SELECT pg_advisory_xact_lock(hashtext('typedstore'), hashtext($1))", [history.lockName])
      let deadline = ContinuousClock.now + closingTimeout
      while try connection.execute(
        "SELECT pg_try_advisory_xact_lock(hashtext('typedstore-in-use'), hashtext($1))", [history.lockName]
      ).rows.first?.first != "t" {
        guard ContinuousClock.now < deadline else { throw StoreError.storeInUse(path: place) }
        Thread.sleep(forTimeInterval: 0.02)
      }
      let found = try connection.execute(
        """
        SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = $1), to_regclass(quote_ident($1) || '._metadata'),
          (SELECT count(*) FROM pg_class WHERE relnamespace = to_regnamespace($1))
        """, [schema]
      ).rows.first
      guard found?[0] == "1" else { return }  // no schema: nothing to destroy
      guard found?[1] != nil || found?[2] == "0" else { throw StoreError.notATypedStore(path: place) }
      try connection.execute(script: "DROP SCHEMA \"\(schema)\" CASCADE")
    }
  }

  /// The connection URI (without `schema`) and the schema of a store URL.
  static func location(of url: URL, name: String?) -> (connection: String, schema: String) {
    var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
    let given = components?.queryItems?.first { $0.name == "schema" }?.value
    let rest = components?.queryItems?.filter { $0.name != "schema" } ?? []
    components?.queryItems = rest.isEmpty ? nil : rest
    let schema =
      given
      ?? String((name ?? "typedstore").lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    return (components?.string ?? url.absoluteString, schema)
  }
}

/// A follower that follows nothing (a schema whose channel could not be named).
private struct StoppedFollower: ChangeFollower {
  func wake() {}
  func stop() {}
  var isFollowing: Bool { false }
}
