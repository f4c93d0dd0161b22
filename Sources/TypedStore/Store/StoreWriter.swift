import Foundation
import Synchronization

/// The one write path. Every change to a store goes through `write(_:_:)`:
///
/// 1. begin an immediate transaction: the cross-process write lock, waited for up to the
///    store's busy timeout and never reported busy before it;
/// 2. apply the rows (the caller's closure);
/// 3. record history for exactly those rows in the same transaction — the seam the history
///    layer fills (`recordHistory`); until then nothing is recorded;
/// 4. commit, then checkpoint in RESTART mode when the WAL has grown past the threshold
///    (never a PASSIVE checkpoint: see `SQLiteConnection`);
/// 5. publish what changed to in-process observers — the seam the change-notification layer
///    fills.
///
/// The writer connection lives inside a `Mutex`, so writes from every context of the process
/// run one at a time; writes from other processes wait on SQLite's lock.
final class StoreWriter: Sendable {
  private let connection: Mutex<SQLiteConnection>
  private let busyTimeout: Duration
  private let checkpointThresholdPages: Int32

  init(connection: sending SQLiteConnection, options: StoreOptions) {
    self.connection = Mutex(connection)
    self.busyTimeout = options.busyTimeout
    self.checkpointThresholdPages = options.checkpointThresholdPages
  }

  /// Runs `apply` in one write transaction and commits it; on any error nothing is written.
  func write<Result: Sendable>(
    _ info: TransactionInfo, _ apply: @Sendable (SQLiteConnection) throws -> Result
  ) throws -> Result {
    try connection.withLock { connection in
      let deadline = ContinuousClock.now + busyTimeout
      let result = try connection.writeTransaction(deadline: deadline) {  // 1, 4
        try apply(connection)  // 2
        // 3: history recording joins here (persistent history issue).
      }
      if connection.walPages >= checkpointThresholdPages {
        // A checkpoint that cannot finish now (a reader holds an old snapshot) is retried
        // after a later commit; the data is already committed either way.
        connection.setBusyTimeout(.milliseconds(100))
        _ = try? connection.checkpoint(.restart)
        connection.setBusyTimeout(busyTimeout)
      }
      return result
    }
    // 5: publishing to observers joins here (change notifications issue).
  }

  /// Runs `body` with the writer connection outside any transaction (store creation).
  func withConnection<Result: Sendable>(_ body: @Sendable (SQLiteConnection) throws -> Result)
    throws -> Result
  {
    try connection.withLock { try body($0) }
  }
}
