import Foundation

extension PersistentStore {
  /// Reads a store's metadata without opening it as a store: nothing is written, and no
  /// model is needed. A file with no tables yet (another process is creating it) is waited
  /// for, up to `options.busyTimeout`.
  ///
  /// - Throws: `StoreError.notFound`, `.permissionDenied`, `.isADirectory`, `.notATypedStore`
  ///   (another kind of file or database), `.corrupt` (metadata that cannot be read), `.sqlite`.
  public static func metadataForPersistentStore(at url: URL, options: StoreOptions = StoreOptions()) throws
    -> StoreMetadata
  {
    if let opener = try opener(for: url) {
      return try opener.read(at: url) { connection, location in
        guard let metadata = try readMetadata(connection) else { throw StoreError.notFound(path: location) }
        return try decode(metadata, path: location)
      }
    }
    let path = resolvedStorePath(url.path)
    return try StoreError.naming(url.path, for: path) { try metadata(ofFileAt: path, options: options) }
  }

  /// `metadataForPersistentStore(at:options:)` of the file SQLite opens (`resolvedStorePath`).
  private static func metadata(ofFileAt path: String, options: StoreOptions) throws -> StoreMetadata {
    var readOnly = options
    readOnly.isReadOnly = true
    try checkPath(path, options: readOnly)
    let deadline = ContinuousClock.now + options.busyTimeout
    let connection: SQLiteConnection
    do {
      connection = try SQLiteConnection(
        path: path, mode: .readOnly, busyTimeout: options.busyTimeout,
        companions: CompanionFileCleanup(forOpening: path))
    } catch let error as SQLiteError {
      throw storeError(error, path: path, options: readOnly)
    }
    while true {
      let metadata: [String: String]?
      do {
        metadata = try connection.readTransaction { try readMetadata(connection) }
      } catch let error as SQLiteError {
        throw storeError(error, path: path, options: readOnly)
      }
      if let metadata { return try decode(metadata, path: path) }
      let tables = try? connection.scalarInt(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      guard tables == 0, ContinuousClock.now < deadline else { throw StoreError.notATypedStore(path: path) }
      Thread.sleep(forTimeInterval: 0.005)
    }
  }

  static func decode(_ metadata: [String: String], path: String) throws -> StoreMetadata {
    guard let identifier = metadata["store_uuid"].flatMap(UUID.init(uuidString:)) else {
      throw StoreError.corrupt(path: path, message: "the store has no valid UUID")
    }
    guard let version = metadata["format_version"].flatMap({ Int($0) }) else {
      throw StoreError.corrupt(path: path, message: "the store has no format version")
    }
    guard let json = metadata["model_json"].map({ Data($0.utf8) }), let hash = metadata["model_hash"] else {
      throw StoreError.corrupt(path: path, message: "the store keeps no model")
    }
    guard let schema = try? JSONDecoder().decode(ModelSchema.self, from: json) else {
      throw StoreError.corrupt(path: path, message: "the model the store keeps cannot be read")
    }
    return StoreMetadata(
      storeIdentifier: identifier, formatVersion: version, modelHash: hash, modelJSON: json, schema: schema)
  }

  /// The model a store keeps, as a model without classes (see
  /// `ManagedObjectModel.init(schema:json:)`).
  ///
  /// - Throws: as `metadataForPersistentStore(at:options:)`, and `StoreError.corrupt` for a
  ///   kept model that is not valid.
  public static func storedModel(at url: URL, options: StoreOptions = StoreOptions()) throws -> ManagedObjectModel {
    if let opener = try opener(for: url) {
      return try opener.read(at: url) { connection, location in
        guard let metadata = try readMetadata(connection) else { throw StoreError.notFound(path: location) }
        return try storedModel(metadata, path: location)
      }
    }
    let metadata = try metadataForPersistentStore(at: url, options: options)
    guard (oldestFormatVersion...formatVersion).contains(metadata.formatVersion) else {
      throw StoreError.unsupportedFormatVersion(found: metadata.formatVersion, supported: formatVersion)
    }
    do {
      return try ManagedObjectModel(schema: metadata.schema, json: metadata.modelJSON)
    } catch let error as ModelError {
      throw StoreError.corrupt(path: url.path, message: "the model the store keeps is not valid: \(error)")
    }
  }

  /// Opens an existing store with the model it keeps, without the application's classes: for
  /// tools that read history, manage consumers, prune and inspect (`typedstore` is one).
  /// History, consumers, `HistoryPruner`, inspection and checks work as with the
  /// application's model; contexts cannot make objects of its entities.
  ///
  /// ```swift
  /// let store = try PersistentStore(url: url)
  /// print(try store.currentHistoryToken(), try store.historyConsumers().map(\.name))
  /// ```
  ///
  /// - Throws: as `storedModel(at:options:)`, then as `init(url:model:options:)`.
  public convenience init(url: URL, options: StoreOptions = StoreOptions()) throws {
    try self.init(url: url, model: Self.storedModel(at: url, options: options), options: options)
  }
}
