import Foundation

// MARK: - Opening and creating a store file
//
// Any number of processes may open or create the same path at the same moment, so opening
// is a protocol in which every decision that depends on what another process may be doing is
// taken under SQLite's locks, and nothing is ever deleted:
//
// 1. The path is looked at without opening it: a directory, a missing file or folder, a
//    folder the process may not search, a file or folder this process cannot write are typed
//    errors. No file descriptor is opened on the database file: closing one would release
//    every POSIX lock this process holds on the file, SQLite's included (see "How To Corrupt
//    An SQLite Database File" on sqlite.org).
// 2. A write-ahead log that holds commits SQLite would not replay is refused before SQLite
//    touches it, when no connection has the store open (no `-shm`); otherwise under the
//    write lock in step 5 (and, for an open for writing, first as in step 3).
// 3. Where a `-shm` exists, an open for writing first makes the checks that can refuse the
//    file (step 4's, and the WAL's, as a read-only open makes it) on a read-only connection,
//    which writes no byte of the three files: the writer connection's first read would
//    write into the `-shm`, and a refused open leaves every file as it was.
//    The writer connection is opened with checkpoint-on-close off, so that closing it after a
//    refusal can never checkpoint or delete a WAL. (When the open succeeds it is switched
//    back on: the last connection to close then checkpoints and deletes `-wal` and `-shm`,
//    which SQLite does only under an exclusive lock, when no other connection exists.) The
//    `-wal` and `-shm` files a refused open made SQLite create go again
//    (`CompanionFileCleanup`).
// 4. A read decides what the file is: a TypedStore store (its format and model are checked),
//    another application's database (refused, nothing written), or a file with no tables
//    at all: new, empty, or being created by another process right now.
// 5. Only a file with no tables or a TypedStore store is switched to WAL. Then, inside
//    `BEGIN IMMEDIATE` (the cross-process write lock, waited for up to the busy timeout), the
//    metadata is read again: if another process created the store meanwhile, it is checked
//    and opened; if not, this process creates every table in that one transaction. Exactly
//    one process creates; the others wait on the lock and open what it made.
//
// A read-only open never writes: it waits (up to the busy timeout) for a creator to commit,
// and checks the WAL without the write lock, trusting only a result that stays the same. Its
// connections open an existing `-shm` read-only; where there is none, SQLite creates it and
// an empty `-wal` to read the WAL database, and they go again when the store's last
// connection closes, if no other connection has the file open by then.

extension PersistentStore {
  /// Opens or creates the store file at `path` and returns its writer connection, its UUID
  /// and, for a read-only open that made SQLite create the `-wal` and `-shm` files, what
  /// removes them again (every read connection of the store holds it).
  static func openFile(
    path: String, model: ManagedObjectModel, tables: [TableLayout], options: StoreOptions,
    migration: StagedMigration? = nil
  ) throws -> (SQLiteConnection, UUID, CompanionFileCleanup?) {
    let deadline = ContinuousClock.now + options.busyTimeout
    try checkPath(path, options: options)
    var damagedWALCopied = false
    try checkWALBeforeOpening(path: path, options: options, copied: &damagedWALCopied)
    // The log's generation, and what the WAL index said was published, read before this
    // connection's first read can rebuild the index from the log (recovery stops at damage).
    let before = WALInspection.before(path: path, limit: deadline)
    // The companion files this open makes SQLite create, if it does: they go again when the
    // open is refused, and, for a read-only open, when its last connection closes.
    let companions = CompanionFileCleanup(forOpening: path)
    if !options.isReadOnly && companions == nil {
      try refuseWithoutWriting(
        path: path, model: model, options: options, migration: migration, before: before,
        copied: &damagedWALCopied)
    }

    let connection: SQLiteConnection
    do {
      connection = try SQLiteConnection(
        path: path, mode: options.isReadOnly ? .readOnly : .readWriteCreate, busyTimeout: options.busyTimeout,
        companions: companions)
    } catch let error as SQLiteError {
      throw storeError(error, path: path, options: options)
    }
    connection.setCheckpointsOnClose(false)
    do {
      if !options.isReadOnly && connection.isReadOnly {
        throw StoreError.notWritable(
          path: path, reason: "SQLite can only open it for reading; open it with StoreOptions.isReadOnly to read it")
      }
      try connection.configure(enableWAL: false)
      let identifier: UUID
      if options.isReadOnly {
        identifier = try readStore(
          connection: connection, path: path, model: model, migration: migration, deadline: deadline)
        try checkWALWithoutLock(path: path, options: options, before: before, copied: &damagedWALCopied)
      } else {
        // Refuse another application's database before switching it to WAL.
        _ = try connection.readTransaction {
          try existingStore(connection: connection, path: path, model: model, change: .check(options, migration))
        }
        try connection.enableWAL(deadline: deadline)
        identifier = try connection.writeTransaction(deadline: deadline) {
          try checkWAL(path: path, options: options, before: before, copied: &damagedWALCopied)
          // Read again under the lock: another process may have created or migrated it meanwhile.
          if let identifier = try existingStore(
            connection: connection, path: path, model: model, change: .migrate(options, migration))
          {
            return identifier
          }
          return try createStore(
            connection: connection, model: model, versionIdentifier: migration?.versions.last?.identifier,
            tables: tables)
        }
      }
      if options.isReadOnly { return (connection, identifier, companions) }
      // The store's own files from now on: the last connection to close checkpoints the WAL
      // and deletes both, as SQLite does.
      companions?.keep()
      connection.setCheckpointsOnClose(true)
      return (connection, identifier, nil)
    } catch {
      // A refused file keeps its files as they were: this connection closes without a
      // checkpoint, and the companion files it made SQLite create go once it has closed.
      // When it made both, the WAL it made is empty, and SQLite's own close deletes them (only
      // as the last connection, under an exclusive lock) even where the file cannot be read.
      if !options.isReadOnly, let companions, companions.removesWAL {
        companions.keep()
        connection.setCheckpointsOnClose(true)
      }
      if let error = error as? SQLiteError { throw storeError(error, path: path, options: options) }
      throw error
    }
  }

  /// For an open for writing of a store whose `-shm` exists (another connection uses it, or a
  /// process that was killed left it): the checks that can refuse the file, made through a
  /// read-only connection, which writes no byte of any of its files. The writer connection's
  /// first read would write into the `-shm` (a read mark, or the index it rebuilds), and a
  /// refused open leaves all three files as they were. What passes here is checked again
  /// under the write lock.
  private static func refuseWithoutWriting(
    path: String, model: ManagedObjectModel, options: StoreOptions, migration: StagedMigration?,
    before: (log: WALInspection.LogBefore, published: WALInspection.Published?), copied: inout Bool
  ) throws {
    guard let probe = try? SQLiteConnection(path: path, mode: .readOnly, busyTimeout: options.busyTimeout) else {
      return  // the writer connection reports why it cannot open the file
    }
    probe.setCheckpointsOnClose(false)
    do {
      _ = try probe.readTransaction {
        try existingStore(connection: probe, path: path, model: model, change: .check(options, migration))
      }
    } catch let error as SQLiteError {
      // A file that is no database, or a damaged one, is refused here; any other failure of
      // the read-only connection is left to the writer connection, which reports it.
      let refusal = storeError(error, path: path, options: options)
      switch refusal {
      case .notADatabase, .corrupt: throw refusal
      default: return
      }
    }
    try checkWALWithoutLock(path: path, options: options, before: before, copied: &copied)
  }

  // MARK: - The path

  static func checkPath(_ path: String, options: StoreOptions) throws {
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    let exists = manager.fileExists(atPath: path, isDirectory: &isDirectory)
    if exists && isDirectory.boolValue { throw StoreError.isADirectory(path: path) }
    let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
    if !exists, let blocked = unsearchableFolder(onTheWayTo: path) {
      // A file the process cannot see is not a missing one: say which folder hides it.
      throw StoreError.permissionDenied(path: path, component: blocked)
    }
    if exists && access(path, R_OK) != 0 && errno == EACCES {
      throw StoreError.permissionDenied(path: path, component: path)
    }
    if !exists && (options.isReadOnly || !manager.fileExists(atPath: folder)) {
      throw StoreError.notFound(path: path)
    }
    guard !options.isReadOnly else { return }
    if exists && access(path, W_OK) != 0 {
      throw StoreError.notWritable(
        path: path, reason: "the file is not writable; open it with StoreOptions.isReadOnly to read it")
    }
    // SQLite creates (and on the last close deletes) the -wal and -shm files in the folder.
    let companionsWritable = ["-wal", "-shm"].allSatisfy { access(path + $0, W_OK) == 0 }
    if access(folder, W_OK) != 0 && !companionsWritable {
      throw StoreError.notWritable(
        path: path,
        reason: "its folder \(folder) is not writable, and SQLite keeps the -wal and -shm files there; "
          + "open it with StoreOptions.isReadOnly to read it")
    }
  }

  /// The first folder on the way to `path` that this process may not search (no `x`
  /// permission for it: a `700` folder of another user), or nil when it may search them all
  /// (the file is then there or not, as `stat` says).
  static func unsearchableFolder(onTheWayTo path: String) -> String? {
    var folder = ""
    for component in URL(fileURLWithPath: path).deletingLastPathComponent().pathComponents {
      folder = folder.isEmpty || component == "/" ? component : (folder == "/" ? "/" : folder + "/") + component
      if access(folder, X_OK) != 0 { return errno == EACCES ? folder : nil }
    }
    return nil
  }

  // MARK: - What the file holds

  /// The UUID of the TypedStore store in the file after checking its format, model and
  /// entity codes; nil when the file has no tables at all (new, or being created). A store
  /// with another model is handled as `change` says: refused, checked, or migrated
  /// (`PersistentStore+Migration.swift`).
  ///
  /// - Throws: `StoreError.notATypedStore` for a database with tables of its own, or the
  ///   error of a check that fails.
  private static func existingStore(
    connection: SQLiteConnection, path: String, model: ManagedObjectModel, change: ModelChange
  ) throws -> UUID? {
    guard let metadata = try readMetadata(connection) else {
      let tables = try connection.scalarInt(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      guard tables == 0 else { throw StoreError.notATypedStore(path: path) }
      return nil
    }
    var sameModel = try check(metadata, model: model)
    if case .migrate = change, metadata["format_version"] == "2" { try upgradeFromVersion2(connection) }
    if sameModel, let migration = change.migration, migration.hasStagesToRun(metadata) {
      sameModel = false  // the same storage, with data-only stages still to run
    }
    guard let identifier = metadata["store_uuid"].flatMap(UUID.init(uuidString:)) else {
      throw StoreError.corrupt(path: path, message: "the store has no valid UUID")
    }
    if !sameModel {
      try handleModelChange(change, connection: connection, metadata: metadata, model: model, path: path)
      // Checked, not migrated: the codes are the old model's until the migration runs.
      if case .check = change { return identifier }
    }
    try checkEntityCodes(connection: connection, path: path, model: model)
    return identifier
  }

  /// The store in the file, for a read-only open: a file with no tables yet may be being
  /// created by another process, which is waited for until `deadline`.
  private static func readStore(
    connection: SQLiteConnection, path: String, model: ManagedObjectModel, migration: StagedMigration?,
    deadline: ContinuousClock.Instant
  ) throws -> UUID {
    while true {
      if let identifier = try connection.readTransaction({
        try existingStore(connection: connection, path: path, model: model, change: .refuse(migration))
      }) {
        return identifier
      }
      guard ContinuousClock.now < deadline else { throw StoreError.notATypedStore(path: path) }
      Thread.sleep(forTimeInterval: 0.005)
    }
  }

  /// Creates the store's tables and metadata; runs inside the write transaction.
  private static func createStore(
    connection: SQLiteConnection, model: ManagedObjectModel, versionIdentifier: String?, tables: [TableLayout]
  ) throws -> UUID {
    let identifier = UUID()
    try connection.execute(
      """
      CREATE TABLE _metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE _primary_key (entity TEXT PRIMARY KEY, key_floor INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE _entities (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
      """)
    let entities = try connection.statement("INSERT INTO _entities (code, name) VALUES (?, ?)")
    for entity in model.entities {
      entities.rewind()
      entities.bind(entity.code, at: 1)
      entities.bind(entity.name, at: 2)
      try entities.run()
    }
    let values: [(String, String)] =
      [
        ("store_uuid", identifier.uuidString),
        ("format_version", String(formatVersion)),
        ("model_hash", model.versionHash),
        ("model_json", String(decoding: model.jsonRepresentation, as: UTF8.self)),
      ] + (versionIdentifier.map { [("model_version", $0)] } ?? [])
    let metadata = try connection.statement("INSERT INTO _metadata (key, value) VALUES (?, ?)")
    for (key, value) in values {
      metadata.rewind()
      metadata.bind(key, at: 1)
      metadata.bind(value, at: 2)
      try metadata.run()
    }
    for sql in HistorySchema.createSQL { try connection.execute(sql) }
    try recordFirstVersion(model, identifier: versionIdentifier, connection: connection)
    let sequence = try connection.statement("INSERT INTO _primary_key (entity, key_floor) VALUES (?, 0)")
    for table in tables {
      for sql in table.createSQL { try connection.execute(sql) }
      sequence.rewind()
      sequence.bind(table.root.name, at: 1)
      try sequence.run()
    }
    return identifier
  }

  /// The `_metadata` table as a dictionary, or nil when the file has none.
  package static func readMetadata<Connection: DatabaseConnection>(_ connection: Connection) throws
    -> [String: String]?
  {
    guard try connection.tableExists("_metadata") else { return nil }
    let statement = try connection.statement("SELECT key, value FROM _metadata")
    defer { statement.reset() }
    var metadata: [String: String] = [:]
    while try statement.step() {
      metadata[statement.string(0)] = statement.string(1)
    }
    return metadata
  }

  /// Checks that the store's `_entities` table gives every entity the code the model does:
  /// rows carry codes, so a mismatch would read rows as the wrong entity.
  package static func checkEntityCodes<Connection: DatabaseConnection>(
    connection: Connection, path: String, model: ManagedObjectModel
  ) throws {
    let statement = try connection.statement("SELECT code, name FROM _entities ORDER BY code")
    defer { statement.reset() }
    var stored: [String] = []
    while try statement.step() { stored.append("\(statement.int64(0)) \(statement.string(1))") }
    let expected = model.entities.map { "\($0.code) \($0.name)" }
    guard stored == expected else {
      throw StoreError.corrupt(
        path: path, message: "the entity codes (\(stored.joined(separator: ", "))) differ from the model's")
    }
  }

  /// Upgrades a store of format version 2 to 3, under the write lock: `_primary_key`'s
  /// counters are valid key floors as they are, and `_history_transaction` loses
  /// `AUTOINCREMENT` (`HistorySchema.upgradeFromVersion2SQL`). Processes of the old version
  /// still open see the schema change and the new version on their next open.
  private static func upgradeFromVersion2(_ connection: SQLiteConnection) throws {
    try connection.execute(HistorySchema.upgradeFromVersion2SQL)
    let statement = try connection.statement("UPDATE _metadata SET value = ? WHERE key = 'format_version'")
    defer { statement.reset() }
    statement.bind(String(formatVersion), at: 1)
    try statement.run()
  }

  /// Checks the format version; returns whether the store keeps `model`.
  private static func check(_ metadata: [String: String], model: ManagedObjectModel) throws -> Bool {
    let version = metadata["format_version"].flatMap { Int($0) } ?? 0
    guard (oldestFormatVersion...formatVersion).contains(version) else {
      throw StoreError.unsupportedFormatVersion(found: version, supported: formatVersion)
    }
    return metadata["model_hash"] == model.versionHash
  }

  // MARK: - A damaged write-ahead log

  /// Before any connection: a WAL that no live connection can be changing (no `-shm` before
  /// or after reading it, the WAL itself unchanged) is checked here, so that a damaged store
  /// is refused without SQLite creating or touching any file. With live connections the
  /// result could be a half-appended frame, so the check waits for the write lock.
  private static func checkWALBeforeOpening(path: String, options: StoreOptions, copied: inout Bool) throws {
    let manager = FileManager.default
    let before = fileSignature(path + "-wal")
    guard before != nil, !manager.fileExists(atPath: path + "-shm") else { return }
    guard let inspection = try WALInspection(path: path + "-wal"), inspection.isDamaged else { return }
    guard !manager.fileExists(atPath: path + "-shm"), fileSignature(path + "-wal") == before else { return }
    try handleDamage(inspection, path: path, options: options, copied: &copied)
  }

  /// Under the write lock no other connection can append to the WAL or restart it, so what
  /// is read is what SQLite would replay.
  private static func checkWAL(
    path: String, options: StoreOptions, before: (log: WALInspection.LogBefore, published: WALInspection.Published?),
    copied: inout Bool
  ) throws {
    guard let inspection = try WALInspection(path: path + "-wal"), inspection.isDamaged,
      !isUnpublishedLeftover(inspection, path: path, published: before.published, logBefore: before.log)
    else { return }
    try handleDamage(inspection, path: path, options: options, copied: &copied)
  }

  /// Whether the damage lies wholly past the frames the WAL index had published before this
  /// open (and the log is of the same generation): frames of a writer killed before it
  /// published its commit, partly overwritten by a later commit
  /// (`WALInspection.publishedFrames`). SQLite never replays them, and no one was told they
  /// were committed.
  ///
  /// Under the write lock (`logBefore` given), a log begun during the open is judged by the
  /// index read now (`WALInspection.publishedReading`): a writer may have restarted the log
  /// while this open waited for the lock, and another been killed mid-commit. Without the
  /// lock, only the reading taken before counts.
  private static func isUnpublishedLeftover(
    _ inspection: WALInspection, path: String, published: WALInspection.Published?,
    logBefore: WALInspection.LogBefore? = nil
  ) -> Bool {
    guard inspection.headerIsValid, let invalid = inspection.firstInvalidFrame else { return false }
    let walSalt = WALInspection.salt(walPath: path + "-wal")
    let reading: WALInspection.Published?
    if let logBefore {
      reading = WALInspection.publishedReading(
        before: published, logBefore: logBefore,
        now: { WALInspection.publishedFrames(walPath: path + "-wal", shmPath: path + "-shm") }, walSalt: walSalt)
    } else {
      reading = published.flatMap { $0.salt == walSalt ? $0 : nil }
    }
    guard let reading else { return false }
    return invalid > reading.frames
  }

  /// For a read-only open, which cannot take the write lock: damage must be seen in three
  /// reads 10 ms apart with the WAL unchanged in between (a writer appending meanwhile can
  /// make one read look damaged; real damage stays).
  private static func checkWALWithoutLock(
    path: String, options: StoreOptions, before: (log: WALInspection.LogBefore, published: WALInspection.Published?),
    copied: inout Bool
  ) throws {
    var last: WALInspection?
    for attempt in 0..<3 {
      let signature = fileSignature(path + "-wal")
      // A log begun during the open holds no damage of before it (a killed writer's frames
      // at most); for an open for writing, the check under the lock follows.
      guard let inspection = try WALInspection(path: path + "-wal"), inspection.isDamaged,
        !WALInspection.wasBegunDuring(before.log, walPath: path + "-wal"),
        !isUnpublishedLeftover(inspection, path: path, published: before.published),
        fileSignature(path + "-wal") == signature, attempt == 0 || inspection == last
      else { return }
      last = inspection
      if attempt < 2 { Thread.sleep(forTimeInterval: 0.01) }
    }
    if let last { try handleDamage(last, path: path, options: options, copied: &copied) }
  }

  private static func handleDamage(
    _ inspection: WALInspection, path: String, options: StoreOptions, copied: inout Bool
  ) throws {
    guard options.opensDamagedWAL else { throw StoreError.damagedWAL(path: path, inspection: inspection) }
    guard !copied else { return }
    let seconds = Int(Date().timeIntervalSince1970)
    try FileManager.default.copyItem(atPath: path + "-wal", toPath: path + "-wal.damaged-\(seconds)")
    copied = true
  }

  /// Size, modification time and inode of a file, to tell whether it changed; nil if absent.
  private static func fileSignature(_ path: String) -> [String]? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
    let keys: [FileAttributeKey] = [.size, .modificationDate, .systemFileNumber]
    return keys.map { "\(attributes[$0] ?? "")" }
  }

  // MARK: - Destroying

  /// Deletes a store file and its companions, unless a connection anywhere has it open.
  ///
  /// SQLite's exclusive lock on the file is the test: every connection to a WAL store holds
  /// a shared lock for as long as it is open. The lock is held while the files are deleted,
  /// so no process can open the store in between.
  static func destroyFiles(at given: String) throws {
    // The files SQLite keeps: a link's target and its companions (the link itself stays, and
    // the next store opened through it is made where it points).
    let path = resolvedStorePath(given)
    try StoreError.naming(given, for: path) { try destroyResolvedFiles(at: path) }
  }

  /// `destroyFiles(at:)` of the file SQLite keeps (`resolvedStorePath`).
  private static func destroyResolvedFiles(at path: String) throws {
    var isDirectory: ObjCBool = false
    let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
    if exists && isDirectory.boolValue { throw StoreError.isADirectory(path: path) }
    var lock: SQLiteConnection?
    if exists {
      do {
        guard let held = try SQLiteConnection.exclusiveLock(path: path) else {
          throw StoreError.storeInUse(path: path)
        }
        lock = held
      } catch let error as SQLiteError where !error.isBusy {
        // Not a database, or a damaged one: nobody uses it as a store, and it is to go.
      }
    }
    try withExtendedLifetime(lock) {
      for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
        try FileManager.default.removeItem(atPath: path + suffix)
      }
    }
  }

  // MARK: - Errors

  static func storeError(_ error: SQLiteError, path: String, options: StoreOptions = StoreOptions()) -> StoreError {
    switch error {
    case _ where error.isNotADatabase: return .notADatabase(path: path)
    case _ where error.isCorrupt: return .corrupt(path: path, message: error.message)
    case _ where error.isNotWritable:
      let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
      if options.isReadOnly {
        guard !FileManager.default.fileExists(atPath: path + "-shm") else { return .sqlite(error) }
        return .notWritable(
          path: path,
          reason: "reading a WAL store needs its -wal and -shm files; none exist and this process cannot "
            + "create them in \(folder) (SQLite: \(error.message)). It can be read while a process that can "
            + "write it has it open")
      }
      return .notWritable(path: path, reason: "\(error.message); open it with StoreOptions.isReadOnly to read it")
    default: return .sqlite(error)
    }
  }
}
