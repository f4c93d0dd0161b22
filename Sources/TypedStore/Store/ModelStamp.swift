import Foundation
import Synchronization

/// What keeps a process that runs an older model from reading or writing a store that
/// another process migrated: the schema this store was opened against, checked at the start
/// of every transaction of every connection of the store.
///
/// A migration (in any process) changes the tables and the `_metadata` keys `model_hash` and
/// `model_json` in one write transaction, and always commits DDL, so it raises SQLite's schema
/// cookie (`PRAGMA schema_version`). SQLite re-prepares a statement against a changed schema
/// without a word, so a statement of the old model would go on running against the new
/// tables; TypedStore itself has to notice. The cookie is the cheap, exact signal: a number in
/// the file's header, the same for every connection, that changes only when the schema does.
/// (`PRAGMA data_version` is no substitute: it changes at every commit of another connection,
/// a save as much as a migration, and its values are the connection's own, so there is no
/// value "seen at open" to compare with.)
///
/// So each transaction first reads the cookie, on its own snapshot: a read transaction before
/// its first query, a write transaction right after `BEGIN IMMEDIATE`, under the write lock,
/// so that no write can commit against a migrated store. The same cookie as at open means the
/// same schema (the cookie only ever goes up). A different one makes the check read
/// `_metadata.model_hash` from that snapshot: another model's hash throws
/// ``StoreError/modelChanged(stored:running:)``, and the transaction ends having read and
/// written nothing; the same hash (an index a tool added, a `VACUUM`) is remembered as the
/// store's cookie, and the transaction goes on.
final class ModelStamp: Sendable {
  /// The version hash of the model this process runs.
  let modelHash: String
  private let cookie: Atomic<Int64>
  private let state = Mutex(State())

  private struct State {
    var changed: StoreError?
    var observers: [UInt64: @Sendable (StoreError) -> Void] = [:]
    var nextKey: UInt64 = 0
  }

  /// Reads the cookie and the model hash in one snapshot of `connection`, right after the
  /// store was opened with `model`: a migration that committed since the open's own checks is
  /// refused here.
  init(connection: SQLiteConnection, model: ManagedObjectModel) throws {
    modelHash = model.versionHash
    let (cookie, stored) = try connection.readTransaction {
      (try connection.schemaVersion(), try Self.storedHash(connection))
    }
    guard stored == model.versionHash else {
      throw StoreError.modelChanged(stored: stored, running: model.versionHash)
    }
    self.cookie = Atomic(cookie)
  }

  /// The stamp of a migration stage's store. Its contexts read inside the migration's
  /// transaction, on the migration's connection, which checks nothing; a connection of its
  /// own (a store-level read in a stage) reads the committed store, and is refused once that
  /// has a model other than the stage's.
  init(migrationStageOf model: ManagedObjectModel) {
    modelHash = model.versionHash
    cookie = Atomic(-1)
  }

  /// The check every transaction of the store's connections makes first (see the type).
  ///
  /// - Throws: ``StoreError/modelChanged(stored:running:)`` when the store now has another
  ///   model.
  func check(_ connection: SQLiteConnection) throws {
    let current = try connection.schemaVersion()
    if current == cookie.load(ordering: .relaxed) { return }
    let stored = try Self.storedHash(connection)
    guard stored == modelHash else {
      let error = StoreError.modelChanged(stored: stored, running: modelHash)
      report(error)
      throw error
    }
    cookie.store(current, ordering: .relaxed)
  }

  /// The error of the first transaction that found the store migrated, if one did.
  var change: StoreError? { state.withLock { $0.changed } }

  /// Calls `observer` once, on the thread that notices it first, when a transaction finds the
  /// store migrated (at once when one already did); until the returned value is released.
  func observeChange(_ observer: @escaping @Sendable (StoreError) -> Void) -> ModelStampObservation {
    let (key, changed) = state.withLock { state -> (UInt64, StoreError?) in
      state.nextKey += 1
      if state.changed == nil { state.observers[state.nextKey] = observer }
      return (state.nextKey, state.changed)
    }
    if let changed { observer(changed) }
    return ModelStampObservation { [weak self] in
      self?.state.withLock { _ = $0.observers.removeValue(forKey: key) }
    }
  }

  /// Records that the store was found migrated, by a check of this stamp's or by another
  /// engine's connection (whose transactions check the model themselves): the first time,
  /// every observer hears of it.
  func report(_ error: StoreError) {
    let observers = state.withLock { state -> [@Sendable (StoreError) -> Void] in
      guard state.changed == nil else { return [] }
      state.changed = error
      defer { state.observers.removeAll() }
      return state.observers.sorted { $0.key < $1.key }.map(\.value)
    }
    for observer in observers { observer(error) }
  }

  private static func storedHash(_ connection: SQLiteConnection) throws -> String {
    try connection.scalarText("SELECT value FROM _metadata WHERE key = 'model_hash'") ?? ""
  }
}

/// Keeps a ``ModelStamp`` observer registered until it is released or cancelled.
final class ModelStampObservation: Sendable {
  private let onCancel: Mutex<(@Sendable () -> Void)?>

  init(onCancel: @escaping @Sendable () -> Void) {
    self.onCancel = Mutex(onCancel)
  }

  func cancel() {
    let action = onCancel.withLock { action in
      defer { action = nil }
      return action
    }
    action?()
  }

  deinit { cancel() }
}
