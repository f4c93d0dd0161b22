import Foundation
import Synchronization

/// One store file opened with one model: its tables, its metadata and its writer.
///
/// ```swift
/// let store = container.persistentStore
/// print(store.identifier, store.url.path)
/// ```
///
/// Opening never changes a file it refuses: the file is first inspected through a read-only
/// connection (magic header, metadata, format version, model hash), and only a file that is
/// new, empty or a matching TypedStore store is opened for writing. A new store is created in
/// one write transaction, so two processes creating the same file at once end up with one
/// store.
public final class PersistentStore: Sendable {
  /// The store's file format version, kept in its metadata.
  public static let formatVersion = 2

  /// The store file.
  public let url: URL
  /// The store's UUID, fixed when the file is created; part of every `ManagedID`'s URI.
  public let identifier: UUID
  /// The model the store was opened with.
  public let model: ManagedObjectModel
  /// The options the store was opened with.
  public let options: StoreOptions

  let writer: StoreWriter
  /// A reader for history requests made on the store itself (contexts have their own).
  let historyReader = Mutex<SQLiteConnection?>(nil)
  private let layouts: [String: TableLayout]

  // MARK: - Opening

  /// Opens the store at `url`, creating it if the file does not exist or is empty.
  ///
  /// - Throws: `StoreError` when the file is not a database, not a TypedStore store, damaged,
  ///   of an unknown format version, or made with another model; the file is unchanged.
  public convenience init(url: URL, model: ManagedObjectModel, options: StoreOptions = StoreOptions()) throws {
    try self.init(url: url, model: model, options: options, publish: { _ in })
  }

  /// Opens the store; `publish` receives what each committed write changed, in commit order,
  /// while the writer lock is held (it must not block).
  init(
    url: URL, model: ManagedObjectModel, options: StoreOptions,
    publish: @escaping @Sendable (CommittedTransaction) -> Void
  ) throws {
    self.url = url
    self.model = model
    self.options = options
    var layouts: [String: TableLayout] = [:]
    for root in model.entities where root.isRoot {
      let hierarchy = model.entities.filter { $0.rootName == root.name }
      layouts[root.name] = TableLayout(root: root, hierarchy: hierarchy, entityCount: model.entities.count)
    }
    self.layouts = layouts

    let path = url.path
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    if let size, size > 0 {
      try Self.inspect(path: path, model: model)
    }

    let connection: SQLiteConnection
    do {
      connection = try SQLiteConnection(path: path, mode: .readWriteCreate, busyTimeout: options.busyTimeout)
      try connection.configure(enableWAL: true)
    } catch let error as SQLiteError {
      throw Self.storeError(error, path: path)
    }
    let tables = layouts.values.sorted { $0.root.index < $1.root.index }
    let identifier = try Self.createOrRead(
      connection: connection, path: path, model: model, tables: tables, options: options)
    self.identifier = identifier
    self.writer = StoreWriter(connection: connection, storeIdentifier: identifier, options: options, publish: publish)
    ModelRegistry.register(identifier, model: model)
  }

  /// Reads the metadata of an existing file without writing to it.
  private static func inspect(path: String, model: ManagedObjectModel) throws {
    guard let handle = FileHandle(forReadingAtPath: path) else {
      throw StoreError.sqlite(SQLiteError(code: 14, message: "cannot open \(path)"))
    }
    let header = (try? handle.read(upToCount: 16)) ?? Data()
    try? handle.close()
    guard header == Data("SQLite format 3\0".utf8) else { throw StoreError.notADatabase(path: path) }
    // Reading a WAL-mode file creates its -wal and -shm files; a refused file must be left as
    // it was found, so companions that did not exist before are removed again.
    let companions = ["-wal", "-shm"].map { path + $0 }.filter { !FileManager.default.fileExists(atPath: $0) }
    do {
      try inspectMetadata(path: path, model: model)
    } catch {
      for companion in companions { try? FileManager.default.removeItem(atPath: companion) }
      throw error
    }
  }

  private static func inspectMetadata(path: String, model: ManagedObjectModel) throws {
    do {
      let inspector = try SQLiteConnection(path: path, mode: .readOnly)
      guard let metadata = try readMetadata(inspector) else { throw StoreError.notATypedStore(path: path) }
      try check(metadata, model: model)
    } catch let error as SQLiteError {
      throw storeError(error, path: path)
    }
  }

  private static func createOrRead(
    connection: SQLiteConnection, path: String, model: ManagedObjectModel, tables: [TableLayout],
    options: StoreOptions
  ) throws -> UUID {
    do {
      return try connection.writeTransaction(deadline: .now + options.busyTimeout) {
        if let metadata = try readMetadata(connection) {
          try check(metadata, model: model)
          guard let identifier = metadata["store_uuid"].flatMap(UUID.init(uuidString:)) else {
            throw StoreError.corrupt(path: path, message: "the store has no valid UUID")
          }
          try checkEntityCodes(connection: connection, path: path, model: model)
          return identifier
        }
        let userTables = try connection.scalarInt(
          "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        guard userTables == 0 else { throw StoreError.notATypedStore(path: path) }
        let identifier = UUID()
        try connection.execute(
          """
          CREATE TABLE _metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
          CREATE TABLE _primary_key (entity TEXT PRIMARY KEY, max_pk INTEGER NOT NULL DEFAULT 0);
          CREATE TABLE _entities (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
          """)
        for entity in model.entities {
          let insert = try connection.statement("INSERT INTO _entities (code, name) VALUES (?, ?)")
          insert.bind(entity.code, at: 1)
          insert.bind(entity.name, at: 2)
          try insert.run()
        }
        let values: [(String, String)] = [
          ("store_uuid", identifier.uuidString),
          ("format_version", String(formatVersion)),
          ("model_hash", model.versionHash),
          ("model_json", String(decoding: model.jsonRepresentation, as: UTF8.self)),
        ]
        for (key, value) in values {
          let insert = try connection.statement("INSERT INTO _metadata (key, value) VALUES (?, ?)")
          insert.bind(key, at: 1)
          insert.bind(value, at: 2)
          try insert.run()
        }
        for sql in HistorySchema.createSQL { try connection.execute(sql) }
        for table in tables {
          for sql in table.createSQL { try connection.execute(sql) }
          let sequence = try connection.statement("INSERT INTO _primary_key (entity, max_pk) VALUES (?, 0)")
          sequence.bind(table.root.name, at: 1)
          try sequence.run()
        }
        return identifier
      }
    } catch let error as SQLiteError {
      throw storeError(error, path: path)
    }
  }

  /// The `_metadata` table as a dictionary, or nil when the file has none.
  static func readMetadata(_ connection: SQLiteConnection) throws -> [String: String]? {
    let exists = try connection.scalarInt(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_metadata'")
    guard exists == 1 else { return nil }
    let statement = try connection.statement("SELECT key, value FROM _metadata")
    var metadata: [String: String] = [:]
    while try statement.step() {
      metadata[statement.string(0)] = statement.string(1)
    }
    return metadata
  }

  /// Checks that the store's `_entities` table gives every entity the code the model does:
  /// rows carry codes, so a mismatch would read rows as the wrong entity.
  private static func checkEntityCodes(connection: SQLiteConnection, path: String, model: ManagedObjectModel)
    throws
  {
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

  private static func check(_ metadata: [String: String], model: ManagedObjectModel) throws {
    let version = metadata["format_version"].flatMap { Int($0) } ?? 0
    guard version == formatVersion else {
      throw StoreError.unsupportedFormatVersion(found: version, supported: formatVersion)
    }
    let hash = metadata["model_hash"] ?? ""
    guard hash == model.versionHash else {
      throw StoreError.modelMismatch(storeHash: hash, modelHash: model.versionHash)
    }
  }

  static func storeError(_ error: SQLiteError, path: String) -> StoreError {
    switch error.code {
    case 26: .notADatabase(path: path)  // SQLITE_NOTADB
    case 11: .corrupt(path: path, message: error.message)  // SQLITE_CORRUPT
    default: .sqlite(error)
    }
  }

  // MARK: - Connections and layout

  /// A new connection for reading, used by one context on its executor.
  func makeReadConnection() throws -> SQLiteConnection {
    let connection = try SQLiteConnection(path: url.path, mode: .readWrite, busyTimeout: options.busyTimeout)
    try connection.configure(enableWAL: false)
    try connection.execute("PRAGMA query_only=1")
    return connection
  }

  func layout(of entity: EntityDescription) -> TableLayout {
    guard let layout = layouts[entity.rootName] else {
      preconditionFailure("entity \(entity.name) has no table in this store")
    }
    return layout
  }

  /// The metadata of the open store.
  public func metadata() throws -> [String: String] {
    try writer.withConnection { try Self.readMetadata($0) ?? [:] }
  }

  /// Copies every committed transaction from the write-ahead log into the store file now.
  ///
  /// The store does this by itself, on a background queue, after a commit that grows the log
  /// past `StoreOptions.checkpointThresholdPages`; the next write waits for that work. Call
  /// this before copying the store file, or right after a large import, to do the work now.
  /// It waits for a write in progress (in this process or another) up to the busy timeout.
  ///
  /// ```swift
  /// try container.persistentStore.checkpoint()
  /// ```
  ///
  /// - Returns: true when the whole log was copied; false when a reader still using older
  ///   transactions kept part of it in the log (it is copied by a later checkpoint).
  /// - Throws: `StoreError` when SQLite fails.
  @discardableResult
  public func checkpoint() throws -> Bool {
    do {
      return try writer.checkpointNow()
    } catch let error as SQLiteError {
      throw Self.storeError(error, path: url.path)
    }
  }
}
