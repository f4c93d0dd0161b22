import Foundation
import TypedStore

/// The write path of a store on PostgreSQL without contexts: change sets and batch requests
/// written straight through a `PostgreSQLStoreEngine`, each in one write transaction with its
/// history, for the writer processes of the tests and the benchmark.
package final class PostgreSQLStoreWriter: Sendable {
  /// The store's model, layouts and identity (`PersistentStore(onAnotherEngineAt:…)`).
  package let store: PersistentStore
  private let engine: PostgreSQLStoreEngine

  /// A writer of the store in `schema` (whose tables exist) on the server at `url`, connected
  /// now.
  package init(
    url: String, schema: String, store: PersistentStore, lockTimeout: Duration = .seconds(5),
    recordsHistory: Bool = true
  ) throws {
    self.store = store
    self.engine = try PostgreSQLStoreEngine(
      url: url, schema: schema, storeIdentifier: store.identifier, lockTimeout: lockTimeout,
      recordsHistory: recordsHistory)
  }

  /// Writes `changes` in one transaction with its history, and returns what was applied and
  /// what was recorded (nil when nothing was).
  ///
  /// - Throws: what `PostgreSQLStoreEngine.write(_:info:committed:)` throws; nothing is
  ///   written then.
  package func write(_ changes: RowWrites, info: TransactionInfo) throws -> (AppliedChanges, RecordedChanges?) {
    var recorded: RecordedChanges?
    let applied = try engine.write(ChangeSetWork(store: store, changes: changes, info: info), info: info) {
      recorded = $0
    }
    return (applied, recorded)
  }

  /// Sets attributes of the selected rows with one UPDATE statement and records it, in one
  /// write transaction (a `BatchUpdateRequest`'s work); returns the rows changed.
  package func batchUpdate(
    _ entity: EntityDescription, selection: RowSelection, includesSubentities: Bool = true,
    assignments: [(slot: Int32, value: PrimitiveValue)], info: TransactionInfo
  ) throws -> AffectedRows {
    let work = BatchWork(
      store: store, entity: entity, selection: selection, includesSubentities: includesSubentities,
      assignments: assignments)
    return try engine.write(work, info: info) { _ in }
  }

  /// Deletes the selected rows with one DELETE statement after recording their tombstones,
  /// applying the delete rules, in one write transaction (a `BatchDeleteRequest`'s work);
  /// returns the rows deleted (not those the rules deleted).
  package func batchDelete(
    _ entity: EntityDescription, selection: RowSelection, includesSubentities: Bool = true, info: TransactionInfo
  ) throws -> AffectedRows {
    let work = BatchWork(
      store: store, entity: entity, selection: selection, includesSubentities: includesSubentities,
      assignments: nil)
    return try engine.write(work, info: info) { _ in }
  }
}
