import Foundation

extension PersistentContainer {
  /// Deletes a store file and its `-wal` and `-shm` companions; missing files are fine.
  ///
  /// ```swift
  /// try PersistentContainer.destroyPersistentStore(at: url)
  /// ```
  ///
  /// - Throws: `StoreError.storeInUse` when a connection, in this process or another, has
  ///   the store open (a container not yet released, another process); nothing is deleted.
  ///   `StoreError.isADirectory` when the path is a directory.
  public static func destroyPersistentStore(at url: URL) throws {
    try PersistentStore.requireFile(at: url, "destroyPersistentStore(at:)", instead: "drop the store's schema")
    try PersistentStore.destroyFiles(at: url.path)
  }
}
