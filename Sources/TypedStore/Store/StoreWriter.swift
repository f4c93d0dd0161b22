import Dispatch
import Foundation
import Synchronization

/// The one write path. Every change to a store — a context save, a batch request, a history
/// deletion — goes through `write(_:_:)`:
///
/// 1. begin an immediate transaction: the cross-process write lock, waited for up to the
///    store's busy timeout and never reported busy before it;
/// 2. apply the rows (the caller's closure);
/// 3. record history for exactly those rows in the same transaction: the closure reports each
///    group of rows to the `HistoryRecorder` as it applies them (deleted rows before they go,
///    so their tombstones can be read), and the recorder writes the change rows set-based;
/// 4. commit; when the commit left the WAL past the threshold, a checkpoint in RESTART mode
///    follows on a background queue, under the same lock (never a PASSIVE checkpoint: see
///    `SQLiteConnection`), so the caller does not wait for it;
/// 5. publish what the transaction changed to in-process observers, in commit order.
///
/// The writer connection lives inside a `Mutex`, so writes from every context of the process
/// run one at a time; writes from other processes wait on SQLite's lock. A failure at any
/// step before the commit rolls everything back: no rows without history, no history
/// without rows, nothing published.
///
/// Three "changes" values meet here, one per direction:
///
/// - context → store: `RowWrites`, the rows one save writes (plain values, built by the
///   context, applied in step 2);
/// - recorder → publisher: `RecordedChanges`, what the `HistoryRecorder` recorded for the
///   transaction (step 3), handed to `publish` after the commit (step 5);
/// - store → context: `StoreChanges`, the public value the publisher makes from a
///   `RecordedChanges` (or from history, for other processes' commits) and contexts merge.
///
/// A fourth stays inside a context: `ContextChanges`, the IDs a save or a merge touched, for
/// the context's own change observers (context → its observers).
///
/// One writer has no connection of its own: a migration stage's (`StagedMigration`). Its
/// contexts write inside the migration's open transaction, each write a savepoint of it with
/// its history recorded as for any write (so that processes on the same storage, which a
/// data-only stage does not refuse, merge what it changed), and nothing published in this
/// process, which has no store yet: other processes read it from history once the migration
/// commits.
final class StoreWriter: Sendable {
  private let connection: Mutex<SQLiteConnection?>
  private let busyTimeout: Duration
  private let checkpointThresholdPages: Int32
  private let recordsHistory: Bool
  private let publish: @Sendable (RecordedChanges) -> Void
  private let storeIdentifier: UUID
  private let path: String
  /// Opened with `StoreOptions.isReadOnly`: every write throws before touching anything.
  let isReadOnly: Bool
  private let checkpointPending = Atomic<Bool>(false)
  /// Used only while `connection`'s lock is held: see `WriterMemo`.
  private let memo = Mutex(WriterMemo())
  private let checkpointQueue = DispatchQueue(label: "TypedStore.checkpoint", qos: .utility)

  init(
    connection: sending SQLiteConnection, path: String, storeIdentifier: UUID, options: StoreOptions,
    publish: @escaping @Sendable (RecordedChanges) -> Void
  ) {
    self.connection = Mutex(connection)
    self.busyTimeout = options.busyTimeout
    self.checkpointThresholdPages = options.checkpointThresholdPages
    self.recordsHistory = options.recordsHistory
    self.publish = publish
    self.storeIdentifier = storeIdentifier
    self.path = path
    self.isReadOnly = options.isReadOnly
  }

  /// The writer of a migration stage's store: it writes only inside the migration's
  /// transaction (`write(_:in:_:)`); anything else throws `StoreError.readOnly`.
  init(migrationStageAt path: String, storeIdentifier: UUID, recordsHistory: Bool) {
    self.connection = Mutex(nil)
    self.busyTimeout = .zero
    self.checkpointThresholdPages = .max
    self.recordsHistory = recordsHistory
    self.publish = { _ in }
    self.storeIdentifier = storeIdentifier
    self.path = path
    self.isReadOnly = true
  }

  /// Runs `apply` in one write transaction, records its history and commits it; on any
  /// error nothing is written.
  ///
  /// Inside a migration stage, `transaction` is the migration's connection: `apply` runs in a
  /// savepoint of its open transaction, with its history, and publishes nothing.
  ///
  /// - Throws: `StoreError.readOnly` at once for a store opened read-only, or what `apply`
  ///   or SQLite throws.
  func write<Result: Sendable>(
    _ info: TransactionInfo, in transaction: SQLiteConnection? = nil,
    _ apply: @Sendable (SQLiteConnection, HistoryRecorder<SQLiteConnection>) throws -> Result
  ) throws -> Result {
    do {
      return try writeTransaction(info, in: transaction, apply)
    } catch let error as MissingCatalogRow {
      throw StoreError.corrupt(path: path, message: error.description)
    }
  }

  private func writeTransaction<Result: Sendable>(
    _ info: TransactionInfo, in transaction: SQLiteConnection?,
    _ apply: @Sendable (SQLiteConnection, HistoryRecorder<SQLiteConnection>) throws -> Result
  ) throws -> Result {
    if let transaction {
      return try transaction.savepoint {
        let history = HistoryRecorder(connection: transaction, info: info, isEnabled: recordsHistory)
        let result = try apply(transaction, history)
        _ = try history.finish(storeIdentifier: storeIdentifier)
        return result
      }
    }
    guard !isReadOnly else { throw StoreError.readOnly(path: path) }
    return try connection.withLock { connection in
      guard let connection else { throw StoreError.readOnly(path: path) }
      let deadline = ContinuousClock.now + busyTimeout
      var memo: WriterMemo?
      let (result, committed) = try connection.writeTransaction(deadline: deadline) {  // 1
        let history = HistoryRecorder(connection: connection, info: info, isEnabled: recordsHistory)  // 3
        history.memo = self.memo.withLock { $0 }.current(dataVersion: connection.fileDataVersion)
        let result = try apply(connection, history)  // 2 (and 3, group by group)
        let recorded = try history.finish(storeIdentifier: storeIdentifier)
        memo = history.memo
        return (result, recorded)
      }  // 4: committed
      // What this commit leaves is right until another connection commits (`WriterMemo`).
      let version = connection.fileDataVersion
      self.memo.withLock {
        $0 = memo ?? WriterMemo()
        $0.validAt = memo == nil ? nil : version
      }
      if connection.walPages >= checkpointThresholdPages { scheduleCheckpoint() }
      if let committed { publish(committed) }  // 5: still under the lock, so in commit order
      return result
    }
  }

  /// Checkpoints on the background queue, once at a time.
  private func scheduleCheckpoint() {
    guard checkpointPending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    checkpointQueue.async { [weak self] in
      self?.checkpoint()
    }
  }

  /// Copies the WAL into the database file in RESTART mode, holding the writer lock. One that
  /// cannot finish now (a reader still uses the WAL) is retried after a later commit; the data
  /// is committed either way.
  func checkpoint() {
    connection.withLock { connection in
      guard let connection else { return }
      connection.setBusyTimeout(.milliseconds(100))
      _ = try? connection.checkpoint(.restart)
      connection.setBusyTimeout(busyTimeout)
    }
    checkpointPending.store(false, ordering: .releasing)
  }

  /// Copies the WAL into the database file now, in RESTART mode under the writer lock (so
  /// after any background checkpoint in progress), waiting for readers up to the busy
  /// timeout. Returns whether every frame was copied.
  func checkpointNow() throws -> Bool {
    guard !isReadOnly else { throw StoreError.readOnly(path: path) }
    return try connection.withLock { connection in
      guard let connection else { throw StoreError.readOnly(path: path) }
      do {
        let (log, checkpointed) = try connection.checkpoint(.restart)
        return checkpointed >= log
      } catch let error as SQLiteError where error.isBusyOnly {  // a reader kept it short
        return false
      }
    }
  }

  /// Runs `body` with the writer connection outside any transaction.
  func withConnection<Result: Sendable>(_ body: @Sendable (SQLiteConnection) throws -> Result)
    throws -> Result
  {
    try connection.withLock { connection in
      guard let connection else { throw StoreError.readOnly(path: path) }
      return try body(connection)
    }
  }
}
