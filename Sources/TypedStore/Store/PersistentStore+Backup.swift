import Foundation

// MARK: - A consistent copy of a live store
//
// While a store is open its committed data lives in two files, the database and its `-wal`
// (until a checkpoint copies the log back), so copying the `.sqlite` file alone gives an
// older store, or a damaged one. A backup reads the store through one SQLite snapshot with
// `VACUUM INTO`, which writes a compact copy of every table (rows, history, consumers'
// checkpoints, metadata) as of one committed transaction, while other connections and
// processes go on writing; it holds no write lock. The copy is written to a temporary file
// beside the destination, made durable (`fsync`) and renamed into place, so a crash leaves
// either no backup or a whole one, never half of one.

extension PersistentStore {
  /// Writes a consistent copy of the store to `url` — every row, the history, the consumers'
  /// checkpoints and the metadata, as of the last transaction committed when it starts —
  /// without stopping writers in this process or another.
  ///
  /// ```swift
  /// let token = try container.persistentStore.backup(to: URL(fileURLWithPath: "/var/backups/orders.sqlite"))
  /// print("backed up through transaction \(token.transactionNumber)")
  /// ```
  ///
  /// The copy is a store of its own file: open it as any store. It is the same store (the
  /// same UUID, so history tokens and consumers' checkpoints carry on) unless `asNewStore` is
  /// true, which gives it a new UUID and no consumers: a copy to start something else from,
  /// whose tokens the original's never match.
  ///
  /// - Parameters:
  ///   - url: where the copy goes; the file must not exist.
  ///   - asNewStore: give the copy a new UUID and no consumers.
  /// - Returns: the token of the newest transaction in the copy.
  /// - Throws: `StoreError.destinationExists` when `url` exists; `StoreError` for a folder
  ///   that cannot be written or a failure of SQLite. The store is never changed, and no file
  ///   is left at `url` on failure.
  @discardableResult
  public func backup(to url: URL, asNewStore: Bool = false) throws -> HistoryToken {
    try requireFile("backup(to:)", instead: "back a PostgreSQL store up with pg_dump")
    let destination = url.path
    guard !FileManager.default.fileExists(atPath: destination) else {
      throw StoreError.destinationExists(path: destination)
    }
    let folder = url.deletingLastPathComponent().path
    let temporary =
      folder + "/.\(url.lastPathComponent).partial-\(ProcessInfo.processInfo.processIdentifier)-"
      + UUID().uuidString.prefix(8)
    defer { try? FileManager.default.removeItem(atPath: temporary) }
    do {
      // Its own snapshot: VACUUM cannot run inside a transaction. The copy holds whatever the
      // store holds then, metadata included, so it needs no model check.
      let source = try makeReadConnection(queryOnly: false)
      let vacuum = try Statement(connection: source, sql: "VACUUM INTO ?")
      vacuum.bind(temporary, at: 1)
      try vacuum.run()
      let token = try Self.finishBackup(at: temporary, storeIdentifier: identifier, asNewStore: asNewStore)
      try Self.makeDurable(temporary, folder: folder)
      guard link(temporary, destination) == 0 else {  // never replaces a file that appeared meanwhile
        if errno == EEXIST { throw StoreError.destinationExists(path: destination) }
        throw StoreError.notWritable(path: destination, reason: String(cString: strerror(errno)))
      }
      try Self.makeDurable(nil, folder: folder)
      return token
    } catch let error as SQLiteError {
      if error.isNotWritable {
        throw StoreError.notWritable(path: destination, reason: error.message)
      }
      throw StoreError.sqlite(error)
    }
  }

  /// Gives the copy a new identity when asked, and returns its newest transaction's token.
  private static func finishBackup(at path: String, storeIdentifier: UUID, asNewStore: Bool) throws -> HistoryToken {
    let copy = try SQLiteConnection(path: path, mode: .readWrite)
    var identifier = storeIdentifier
    if asNewStore {
      identifier = UUID()
      try copy.execute("BEGIN IMMEDIATE")
      let stamp = try Statement(connection: copy, sql: "UPDATE _metadata SET value = ? WHERE key = 'store_uuid'")
      stamp.bind(identifier.uuidString, at: 1)
      try stamp.run()
      try copy.execute("DELETE FROM _history_consumer")
      try copy.execute("COMMIT")
    }
    // `VACUUM INTO` writes a rollback-journal file; a store file is in WAL mode (persistent).
    _ = try copy.scalarText("PRAGMA journal_mode=WAL")
    let newest = try copy.scalarInt("SELECT ifnull(max(number), 0) FROM _history_transaction") ?? 0
    return HistoryToken(storeIdentifier: identifier, transactionNumber: newest)
  }

  /// `fsync` of a file (when given) and of its folder, so that a rename or link survives a
  /// crash.
  private static func makeDurable(_ path: String?, folder: String) throws {
    for target in [path, folder].compactMap({ $0 }) {
      let descriptor = open(target, O_RDONLY)
      guard descriptor >= 0 else {
        throw StoreError.notWritable(path: target, reason: String(cString: strerror(errno)))
      }
      defer { close(descriptor) }
      guard fsync(descriptor) == 0 else {
        throw StoreError.notWritable(path: target, reason: String(cString: strerror(errno)))
      }
    }
  }
}
