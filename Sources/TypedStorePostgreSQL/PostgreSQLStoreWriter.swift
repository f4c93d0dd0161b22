import Foundation
import Synchronization
import TypedStore

/// The write path of a store on PostgreSQL: what `StoreWriter` is to a store file (issue 27,
/// being built; contexts do not use it yet).
///
/// Every write is one transaction at READ COMMITTED that takes the store's write lock first (the
/// history counter row's, `PostgreSQLConnection.writeTransaction`), applies the change set with
/// the store's own write path (`PersistentStore.write(_:info:connection:history:)`: the same
/// code, through the engine seam, as on SQLite), records its history with the
/// `HistoryRecorder`, which moves the counter and queues the notification last, and commits.
/// So writers on any number of hosts take turns, history numbers are dense and in commit order,
/// and a failure at any step leaves nothing: no rows without history, no history without rows.
///
/// The writer's connection is used by one write at a time (a `Mutex`), as a store file's writer
/// connection is; writers of other processes wait on the lock, up to `lockTimeout`. A write
/// that finds the connection lost (the server restarted, the network went) throws
/// `PostgreSQLError` of kind `.connection`, and the next write connects again: nothing of the
/// failed write was committed, unless the connection went during its `COMMIT`, which only the
/// history can tell (its transaction is there, or not).
package final class PostgreSQLStoreWriter: Sendable {
  /// nil after a lost connection, until the next write connects again.
  private let connection: Mutex<PostgreSQLConnection?>
  private let url: String
  private let schema: String
  /// The store's model, layouts and identity (`PersistentStore(onAnotherEngineAt:…)`).
  package let store: PersistentStore
  private let lockTimeout: Duration
  private let recordsHistory: Bool

  /// A writer of the store in `schema` (whose tables exist) on the server at `url`, connected
  /// now.
  package init(
    url: String, schema: String, store: PersistentStore, lockTimeout: Duration = .seconds(5),
    recordsHistory: Bool = true
  ) throws {
    self.connection = Mutex(try Self.connect(url: url, schema: schema))
    self.url = url
    self.schema = schema
    self.store = store
    self.lockTimeout = lockTimeout
    self.recordsHistory = recordsHistory
  }

  private static func connect(url: String, schema: String) throws(PostgreSQLError) -> PostgreSQLConnection {
    let connection = try PostgreSQLConnection(url: url)
    try connection.use(schema: schema)
    return connection
  }

  /// Writes `changes` in one transaction with its history, and returns what was applied and
  /// what was recorded (nil when nothing was).
  ///
  /// - Throws: what the store's write path throws (`StoreError.mergeConflict`,
  ///   `StoreError.danglingReference`, `StoreError.deleteDenied`, a uniqueness clash), or
  ///   `PostgreSQLError` (`55P03` when the lock was not had in time); nothing is written then.
  package func write(_ changes: RowWrites, info: TransactionInfo) throws -> (AppliedChanges, RecordedChanges?) {
    try inWriteTransaction(info) { connection, history in
      try store.write(changes, info: info, connection: connection, history: history)
    }
  }

  /// Sets attributes of the selected rows with one UPDATE statement and records it, in one
  /// write transaction (a `BatchUpdateRequest`'s work); returns the rows changed.
  package func batchUpdate(
    _ entity: EntityDescription, selection: RowSelection, includesSubentities: Bool = true,
    assignments: [(slot: Int32, value: PrimitiveValue)], info: TransactionInfo
  ) throws -> AffectedRows {
    try inWriteTransaction(info) { connection, history in
      try store.batchUpdate(
        entity, selection: selection, includesSubentities: includesSubentities, assignments: assignments,
        connection: connection, history: history)
    }.0
  }

  /// Deletes the selected rows with one DELETE statement after recording their tombstones,
  /// applying the delete rules, in one write transaction (a `BatchDeleteRequest`'s work);
  /// returns the rows deleted (not those the rules deleted).
  package func batchDelete(
    _ entity: EntityDescription, selection: RowSelection, includesSubentities: Bool = true, info: TransactionInfo
  ) throws -> AffectedRows {
    try inWriteTransaction(info) { connection, history in
      try store.batchDelete(
        entity, selection: selection, includesSubentities: includesSubentities, connection: connection,
        history: history)
    }.0
  }

  /// Runs `body` in one write transaction with its history; returns its result and what was
  /// recorded.
  private func inWriteTransaction<Result: Sendable>(
    _ info: TransactionInfo,
    _ body: @Sendable (PostgreSQLConnection, HistoryRecorder<PostgreSQLConnection>) throws -> Result
  ) throws -> (Result, RecordedChanges?) {
    try connection.withLock { connection in
      let live = try connection ?? Self.connect(url: url, schema: schema)
      connection = live
      do {
        return try live.writeTransaction(lockTimeout: lockTimeout) {
          let history = HistoryRecorder(connection: live, info: info, isEnabled: recordsHistory)
          if let counter = live.lockedCounter {
            history.follows(lastNumber: counter.last, lastChangeID: counter.lastChange)
          }
          let result = try body(live, history)
          return (result, try history.finish(storeIdentifier: store.identifier))
        }
      } catch let error as PostgreSQLError where error.kind == .connection {
        connection = nil  // the next write connects again
        throw error
      }
    }
  }
}
