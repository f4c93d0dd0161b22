import Foundation
import Synchronization

/// The `-wal` and `-shm` files an open made SQLite create, removed again once every
/// connection that holds this value has closed (`SQLiteConnection.removeCompanionFiles`):
/// after a read-only open, which SQLite cannot read a WAL database without, and after a
/// refused open for writing, so that both leave a store's folder as they found it. An open
/// for writing that succeeds calls `keep()`: the files are then the store's, and SQLite
/// deletes them when the last connection closes, as always.
final class CompanionFileCleanup: Sendable {
  let path: String
  /// Whether the `-wal` was absent too (only then is an empty one removed).
  let removesWAL: Bool
  private let isKept = Atomic<Bool>(false)

  /// The cleanup for an open of `path`; nil when its `-shm` exists (another connection's, or
  /// left by a process that was killed), which a read-only open then never writes.
  init?(forOpening path: String) {
    let manager = FileManager.default
    guard !manager.fileExists(atPath: path + "-shm") else { return nil }
    self.path = path
    removesWAL = !manager.fileExists(atPath: path + "-wal")
  }

  func keep() { isKept.store(true, ordering: .relaxed) }

  deinit {
    guard !isKept.load(ordering: .relaxed) else { return }
    SQLiteConnection.removeCompanionFiles(of: path, includingWAL: removesWAL)
  }
}
