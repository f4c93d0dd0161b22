import Foundation

extension PersistentStore {
  /// What a store file holds, as `typedstore inspect` prints it.
  ///
  /// ```swift
  /// let inspection = try store.inspect()
  /// for (entity, count) in inspection.rowCounts.sorted(by: { $0.key < $1.key }) { print(entity, count) }
  /// ```
  public struct Inspection: Sendable, Equatable {
    /// Sizes of a store's files, in bytes (nil for a file that does not exist).
    public struct FileSizes: Sendable, Equatable {
      /// The database file.
      public var database: Int
      /// The `-wal` file.
      public var writeAheadLog: Int?
      /// The `-shm` file.
      public var sharedMemory: Int?
    }

    /// The store's UUID, format version and model.
    public var metadata: StoreMetadata
    /// Rows by concrete entity name (every entity of the model, 0 included).
    public var rowCounts: [String: Int]
    /// Stored links by relationship, keyed `"Entity.relationship"` (the declaring entity): rows
    /// whose key column is set, for a to-one that holds the key; join rows, for the side that
    /// owns a many-to-many's join table. The other side of each pair stores nothing, and has no
    /// entry.
    public var linkCounts: [String: Int] = [:]
    /// The sizes of the store's files.
    public var fileSizes: FileSizes
    /// SQLite's page size, in bytes.
    public var pageSize: Int
    /// Pages in the database file.
    public var pageCount: Int
    /// Pages of the file that hold nothing (space a `VACUUM` would give back).
    public var freePages: Int
    /// SQLite's journal mode (`wal` for every store TypedStore made).
    public var journalMode: String
    /// The history horizon: history after it is complete.
    public var horizon: HistoryToken
    /// The token after the newest transaction.
    public var currentToken: HistoryToken
    /// The store's durable consumers.
    public var consumers: [HistoryConsumer]
    /// Every model version the store has had, oldest first: the one it was created with, then
    /// one for each migration (`docs/migration.md`).
    public var modelVersions: [ModelVersion] = []
  }

  /// Describes the store: its metadata and model, rows by entity, file sizes and pages, the
  /// history's span and the consumers. One read transaction.
  ///
  /// ```swift
  /// let inspection = try store.inspect()
  /// print(inspection.metadata.storeIdentifier, inspection.fileSizes.database, inspection.freePages)
  /// ```
  public func inspect() throws -> Inspection {
    let path = url.path
    let file = filePath
    let isFile = engine == nil
    return try withHistoryReader { connection in
      try connection.readTransaction {
        guard let stored = try Self.readMetadata(connection) else { throw StoreError.notATypedStore(path: path) }
        let metadata = try Self.decode(stored, path: path)
        let pageSize = Int(try connection.scalarInt(connection.dialect.inspectionSQL.pageSize) ?? 0)
        let pageCount = Int(try connection.scalarInt(connection.dialect.inspectionSQL.pageCount) ?? 0)
        func size(_ suffix: String) -> Int? {
          // Another engine's store has no files: its tables' pages.
          guard isFile else { return suffix.isEmpty ? pageSize * pageCount : nil }
          return (try? FileManager.default.attributesOfItem(atPath: file + suffix)[.size] as? NSNumber)?.map(\.intValue)
        }
        return Inspection(
          metadata: metadata, rowCounts: try rowCounts(connection), linkCounts: try linkCounts(connection),
          fileSizes: Inspection.FileSizes(
            database: size("") ?? 0, writeAheadLog: size("-wal"), sharedMemory: size("-shm")),
          pageSize: pageSize, pageCount: pageCount,
          freePages: Int(try connection.scalarInt(connection.dialect.inspectionSQL.freePages) ?? 0),
          journalMode: try connection.scalarText(connection.dialect.inspectionSQL.journalMode) ?? "",
          horizon: HistoryToken(
            storeIdentifier: identifier, transactionNumber: try HistoryReader.firstKept(connection) - 1),
          currentToken: HistoryToken(
            storeIdentifier: identifier, transactionNumber: try HistoryReader.currentNumber(connection)),
          consumers: try HistoryConsumers.all(storeIdentifier: identifier, connection: connection),
          modelVersions: try Self.modelVersions(connection, storeIdentifier: identifier))
      }
    }
  }

  /// Rows by concrete entity name, every entity of the model included.
  private func rowCounts(_ connection: some DatabaseConnection) throws -> [String: Int] {
    var rowCounts: [String: Int] = [:]
    for entity in model.entities { rowCounts[entity.name] = 0 }
    for root in model.entities where root.isRoot {
      let table = layout(of: root)
      let statement = try connection.statement("SELECT _entity, count(*) FROM \"\(root.name)\" GROUP BY _entity")
      defer { statement.reset() }
      while try statement.step() {
        let name =
          table.entity(code: statement.int64(0))?.name ?? "\(root.name) (unknown code \(statement.int64(0)))"
        rowCounts[name, default: 0] += Int(statement.int64(1))
      }
    }
    return rowCounts
  }

  /// Stored links by relationship, from the model's schema, which a store opened without the
  /// model's classes (the tool) has too.
  private func linkCounts(_ connection: some DatabaseConnection) throws -> [String: Int] {
    var linkCounts: [String: Int] = [:]
    for entity in model.schema.entities {
      for relationship in entity.relationships ?? [] {
        let sql: String
        if let column = relationship.column {
          sql = "SELECT count(*) FROM \"\(entity.table)\" WHERE \"\(column)\" IS NOT NULL"
        } else if let join = relationship.ownedJoinTable {
          sql = "SELECT count(*) FROM \"\(join)\""
        } else {
          continue
        }
        linkCounts["\(entity.name).\(relationship.name)"] = Int(try connection.scalarInt(sql) ?? 0)
      }
    }
    return linkCounts
  }
}
