import Foundation

extension PersistentContainer {
  /// Deletes a store file and its `-wal` and `-shm` companions; missing files are fine. A
  /// `postgresql://` store's schema is dropped, with everything in it; a missing one is fine.
  ///
  /// ```swift
  /// try PersistentContainer.destroyPersistentStore(at: url)
  /// ```
  ///
  /// - Throws: `StoreError.storeInUse` when a connection, in this process or another, has
  ///   the store open (a container not yet released, another process); nothing is deleted.
  ///   `StoreError.isADirectory` when the path is a directory; `StoreError.notATypedStore` for a
  ///   schema that holds other tables and no store.
  public static func destroyPersistentStore(at url: URL) throws {
    if let opener = try PersistentStore.opener(for: url) { return try opener.destroy(at: url) }
    try PersistentStore.destroyFiles(at: url.path)
  }
}
