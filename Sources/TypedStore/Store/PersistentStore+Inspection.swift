import Foundation

// MARK: - History statistics

/// How many changes of each kind history holds for one entity.
public struct ChangeCounts: Sendable, Equatable, Codable {
  public var inserts = 0
  public var updates = 0
  public var deletes = 0
  /// All three together.
  public var total: Int { inserts + updates + deletes }

  public init(inserts: Int = 0, updates: Int = 0, deletes: Int = 0) {
    self.inserts = inserts
    self.updates = updates
    self.deletes = deletes
  }
}

/// What a store's history holds, counted in SQL without reading it.
///
/// ```swift
/// let stats = try store.historyStatistics()
/// print(stats.transactions, stats.changesByEntity["Note"]?.deletes ?? 0, stats.horizon)
/// ```
public struct HistoryStatistics: Sendable, Equatable {
  /// Transactions kept.
  public var transactions: Int
  /// Changed rows kept (a change row standing for many rows counts each).
  public var changes: Int
  /// Changes by concrete entity name.
  public var changesByEntity: [String: ChangeCounts]
  /// Transactions by author; those without one are under `unattributedTransactions`.
  public var transactionsByAuthor: [String: Int]
  /// Transactions whose author was nil.
  public var unattributedTransactions: Int
  /// The horizon: history after it is complete.
  public var horizon: HistoryToken
  /// The token after the newest transaction.
  public var currentToken: HistoryToken
  /// When the oldest and the newest kept transactions committed (nil when none is kept).
  public var oldestTimestamp: Date?
  public var newestTimestamp: Date?
  /// Bytes of the store file's pages that hold history (its tables and their indexes), or nil
  /// when this SQLite cannot tell (it was built without the `dbstat` table).
  public var bytesOnDisk: Int?
}

// MARK: - Inspection

/// Sizes of a store's files, in bytes (nil for a file that does not exist).
public struct StoreFileSizes: Sendable, Equatable {
  public var database: Int
  public var writeAheadLog: Int?
  public var sharedMemory: Int?
}

/// What a store file holds, as `typedstore inspect` prints it.
///
/// ```swift
/// let inspection = try store.inspect()
/// for (entity, count) in inspection.rowCounts.sorted(by: { $0.key < $1.key }) { print(entity, count) }
/// ```
public struct StoreInspection: Sendable, Equatable {
  /// The store's UUID, format version and model.
  public var metadata: StoreMetadata
  /// Rows by concrete entity name (every entity of the model, 0 included).
  public var rowCounts: [String: Int]
  /// Stored links by relationship, keyed `"Entity.relationship"` (the declaring entity): rows
  /// whose key column is set, for a to-one that holds the key; join rows, for the side that
  /// owns a many-to-many's join table. The other side of each pair stores nothing, and has no
  /// entry.
  public var linkCounts: [String: Int] = [:]
  public var fileSizes: StoreFileSizes
  public var pageSize: Int
  public var pageCount: Int
  /// Pages of the file that hold nothing (space a `VACUUM` would give back).
  public var freePages: Int
  /// SQLite's journal mode (`wal` for every store TypedStore made).
  public var journalMode: String
  public var horizon: HistoryToken
  public var currentToken: HistoryToken
  public var consumers: [HistoryConsumer]
}

// MARK: - Checks

/// One thing `checkConsistency()` found wrong.
public struct StoreProblem: Sendable, Equatable, CustomStringConvertible {
  /// Which family of check found it.
  public enum Kind: String, Sendable, Codable {
    /// SQLite's own `PRAGMA integrity_check`.
    case integrity
    /// The store's metadata: UUID, format, model, entity codes, horizon, key counters.
    case metadata
    /// Data rows against their history, and history against itself.
    case history
    /// Consumers' checkpoints.
    case consumer
    /// Relationships: key columns and join rows that name rows which do not exist.
    case relationships
  }

  public var kind: Kind
  public var message: String

  public var description: String { "\(kind.rawValue): \(message)" }
}

/// What `checkConsistency()` checked and found.
public struct StoreCheckReport: Sendable, Equatable {
  /// Everything found wrong; empty when the store passed.
  public var problems: [StoreProblem]
  /// Data rows compared with their history.
  public var rowsChecked: Int
  /// Transactions of history read.
  public var transactionsChecked: Int
  /// Whether nothing was found wrong.
  public var passed: Bool { problems.isEmpty }
}

extension PersistentStore {
  /// Counts what history holds: transactions, changes by entity and kind, authors, its span
  /// and its size on disk. One read transaction; nothing is decoded per change.
  public func historyStatistics() throws -> HistoryStatistics {
    try withHistoryReader { connection in
      try connection.readTransaction {
        let firstKept = try HistoryReader.firstKept(connection)
        let current = try HistoryReader.currentNumber(connection)
        var statistics = HistoryStatistics(
          transactions: 0, changes: 0, changesByEntity: [:], transactionsByAuthor: [:], unattributedTransactions: 0,
          horizon: HistoryToken(storeIdentifier: identifier, transactionNumber: firstKept - 1),
          currentToken: HistoryToken(storeIdentifier: identifier, transactionNumber: current))
        let authors = try connection.statement(
          "SELECT author, count(*), min(timestamp), max(timestamp) FROM _history_transaction GROUP BY author")
        defer { authors.reset() }
        var oldest = Double.infinity
        var newest = -Double.infinity
        while try authors.step() {
          let count = Int(authors.int64(1))
          statistics.transactions += count
          if authors.isNull(0) {
            statistics.unattributedTransactions += count
          } else {
            statistics.transactionsByAuthor[authors.string(0)] = count
          }
          oldest = min(oldest, authors.double(2))
          newest = max(newest, authors.double(3))
        }
        if statistics.transactions > 0 {
          statistics.oldestTimestamp = Date(timeIntervalSinceReferenceDate: oldest)
          statistics.newestTimestamp = Date(timeIntervalSinceReferenceDate: newest)
        }
        let changes = try connection.statement(
          """
          SELECT entity, kind, sum(CASE WHEN keys IS NOT NULL THEN json_array_length(keys)
            WHEN last_pk IS NOT NULL AND last_pk >= pk THEN last_pk - pk + 1 ELSE 1 END)
          FROM _history_change GROUP BY entity, kind
          """)
        defer { changes.reset() }
        while try changes.step() {
          let count = Int(changes.int64(2))
          var counts = statistics.changesByEntity[changes.string(0), default: ChangeCounts()]
          switch ChangeKind(rawValue: Int(changes.int64(1))) {
          case .insert: counts.inserts += count
          case .update: counts.updates += count
          case .delete: counts.deletes += count
          case nil: continue
          }
          statistics.changesByEntity[changes.string(0)] = counts
          statistics.changes += count
        }
        statistics.bytesOnDisk = try? connection.scalarInt(
          """
          SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN
            (SELECT name FROM sqlite_master WHERE tbl_name IN ('_history_transaction', '_history_change'))
          """
        ).map { Int($0) }
        return statistics
      }
    }
  }

  /// Describes the store: its metadata and model, rows by entity, file sizes and pages, the
  /// history's span and the consumers. One read transaction.
  public func inspect() throws -> StoreInspection {
    let path = url.path
    return try withHistoryReader { connection in
      try connection.readTransaction {
        guard let stored = try Self.readMetadata(connection) else { throw StoreError.notATypedStore(path: path) }
        let metadata = try Self.decode(stored, path: path)
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
        // From the model's schema, which a store opened without the model's classes (the
        // tool) has too.
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
        func size(_ suffix: String) -> Int? {
          (try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? NSNumber)?.map(\.intValue)
        }
        return StoreInspection(
          metadata: metadata, rowCounts: rowCounts, linkCounts: linkCounts,
          fileSizes: StoreFileSizes(database: size("") ?? 0, writeAheadLog: size("-wal"), sharedMemory: size("-shm")),
          pageSize: Int(try connection.scalarInt("PRAGMA page_size") ?? 0),
          pageCount: Int(try connection.scalarInt("PRAGMA page_count") ?? 0),
          freePages: Int(try connection.scalarInt("PRAGMA freelist_count") ?? 0),
          journalMode: try connection.scalarText("PRAGMA journal_mode") ?? "",
          horizon: HistoryToken(
            storeIdentifier: identifier, transactionNumber: try HistoryReader.firstKept(connection) - 1),
          currentToken: HistoryToken(
            storeIdentifier: identifier, transactionNumber: try HistoryReader.currentNumber(connection)),
          consumers: try HistoryConsumers.all(storeIdentifier: identifier, connection: connection))
      }
    }
  }

  /// Checks the store in one read snapshot: SQLite's `PRAGMA integrity_check`, then
  /// TypedStore's own invariants, and reports every problem found (it stops at none):
  ///
  /// - metadata: the kept model decodes and hashes to the kept hash, entity codes match it,
  ///   the horizon lies within the transactions ever recorded, no row's key exceeds its
  ///   table's key counter;
  /// - history: every change belongs to its transaction's range; every data row's last change
  ///   in history is an insert or update of that row's entity (a row history does not mention
  ///   is allowed only below a horizon, where its history may have been pruned), and no row
  ///   whose last change is a delete still exists;
  /// - consumers: every checkpoint belongs to this store, lies within its transactions, and was
  ///   not pruned past (its unread history is still kept).
  ///
  /// ```swift
  /// let report = try store.checkConsistency()
  /// for problem in report.problems { print(problem) }
  /// ```
  public func checkConsistency() throws -> StoreCheckReport {
    let path = url.path
    // A connection of its own: a check reads every row and all history, and holds no lock
    // other history readers of this store wait for.
    let connection = try makeReadConnection()
    return try connection.readTransaction {
      var problems: [StoreProblem] = []
      func problem(_ kind: StoreProblem.Kind, _ message: String) {
        problems.append(StoreProblem(kind: kind, message: message))
      }

      let integrity = try connection.statement("PRAGMA integrity_check")
      defer { integrity.reset() }
      while try integrity.step() {
        let line = integrity.string(0)
        if line != "ok" { problem(.integrity, line) }
      }

      // Metadata.
      let firstKept = try HistoryReader.firstKept(connection)
      let current = try HistoryReader.currentNumber(connection)
      if let stored = try Self.readMetadata(connection) {
        do {
          let metadata = try Self.decode(stored, path: path)
          if metadata.storeIdentifier != identifier {
            problem(.metadata, "the store's UUID changed while it was open")
          }
          if SHA256.hex(of: metadata.modelJSON) != metadata.modelHash {
            problem(.metadata, "the kept model does not hash to the kept model hash")
          }
        } catch {
          problem(.metadata, "\(error)")
        }
      } else {
        problem(.metadata, "the metadata table is missing")
      }
      do {
        try Self.checkEntityCodes(connection: connection, path: path, model: model)
      } catch {
        problem(.metadata, "\(error)")
      }
      if firstKept < 1 || firstKept > current + 1 {
        problem(.metadata, "the history horizon \(firstKept - 1) lies outside the transactions recorded (0…\(current))")
      }
      if let lowest = try connection.scalarInt("SELECT min(number) FROM _history_transaction"), lowest < firstKept {
        problem(.metadata, "transaction \(lowest) is kept below the history horizon \(firstKept - 1)")
      }

      // History against itself.
      let misplaced =
        try connection.scalarInt(
          """
          SELECT count(*) FROM _history_change c LEFT JOIN _history_transaction t ON t.number = c.transaction_number
          WHERE t.number IS NULL OR c.id NOT BETWEEN t.first_change AND t.last_change
          """) ?? 0
      if misplaced > 0 {
        problem(.history, "\(misplaced) change row(s) lie outside their transaction's range, or have no transaction")
      }

      // Data rows against history: the last change of each key, by table.
      var visitor = LastChangeVisitor(model: model)
      try HistoryReader.visit(
        HistoryRequest(
          after: HistoryToken(storeIdentifier: identifier, transactionNumber: max(0, min(firstKept, current + 1) - 1))),
        storeIdentifier: identifier, model: model, connection: connection, visitor: &visitor)
      var rowsChecked = 0
      let pruned = firstKept > 1
      for root in model.entities where root.isRoot {
        let table = layout(of: root)
        var lastChanges = visitor.lastChanges[root.name] ?? [:]
        let maximum = try connection.statement("SELECT max_pk FROM _primary_key WHERE entity = ?")
        maximum.bind(root.name, at: 1)
        let counter = try maximum.step() ? maximum.int64(0) : 0
        maximum.reset()
        let rows = try connection.statement("SELECT pk, _entity FROM \"\(root.name)\" ORDER BY pk")
        defer { rows.reset() }
        var reported = 0
        func report(_ message: String) {
          reported += 1
          if reported <= 20 { problem(.history, message) }
        }
        while try rows.step() {
          rowsChecked += 1
          let key = rows.int64(0)
          let entity = table.entity(code: rows.int64(1))?.name ?? "?"
          if key > counter { report("\(entity) \(key) is above its table's key counter \(counter)") }
          guard let last = lastChanges.removeValue(forKey: key) else {
            if !pruned {
              report(
                "\(entity) \(key) has no change in history, which was never pruned (written with recordsHistory off, or its history was lost)"
              )
            }
            continue
          }
          if last.kind == .delete {
            report(
              "\(entity) \(key) exists, but history's last change of it is a delete (transaction \(last.number))")
          } else if last.entity != entity {
            report("\(entity) \(key) is recorded in history as a \(last.entity) (transaction \(last.number))")
          }
        }
        for (key, last) in lastChanges.sorted(by: { $0.key < $1.key }) where last.kind != .delete {
          report(
            "\(last.entity) \(key) is missing, but history's last change of it is an \(last.kind) (transaction \(last.number))"
          )
        }
        if reported > 20 { problem(.history, "\(reported - 20) more problem(s) of \(root.name) rows not listed") }
      }

      // Relationships, from the schema the store keeps (so a tool without the classes checks
      // them too): every key column and join row must name an existing row.
      let tables = Dictionary(uniqueKeysWithValues: model.schema.entities.map { ($0.name, $0.table) })
      for entity in model.schema.entities {
        for relationship in entity.relationships ?? [] {
          guard let destination = tables[relationship.destination] else { continue }
          if let column = relationship.column {
            let dangling =
              try connection.scalarInt(
                "SELECT count(*) FROM \"\(entity.table)\" WHERE \"\(column)\" IS NOT NULL "
                  + "AND \"\(column)\" NOT IN (SELECT pk FROM \"\(destination)\")") ?? 0
            if dangling > 0 {
              problem(
                .relationships,
                "\(dangling) \(entity.name) row(s) name a missing \(relationship.destination) in \(relationship.name)")
            }
          }
          if let join = relationship.ownedJoinTable {
            let orphans =
              try connection.scalarInt(
                "SELECT count(*) FROM \"\(join)\" WHERE source NOT IN (SELECT pk FROM \"\(entity.table)\") "
                  + "OR target NOT IN (SELECT pk FROM \"\(destination)\")") ?? 0
            if orphans > 0 {
              problem(.relationships, "\(orphans) link(s) of \(entity.name).\(relationship.name) name a missing row")
            }
          }
        }
      }

      // Consumers.
      for consumer in try HistoryConsumers.all(storeIdentifier: identifier, connection: connection) {
        let number = consumer.checkpoint.transactionNumber
        if consumer.checkpoint.storeIdentifier != identifier {
          problem(.consumer, "\(consumer.name)'s checkpoint belongs to store \(consumer.checkpoint.storeIdentifier)")
        } else if number < 0 || number > current {
          problem(
            .consumer, "\(consumer.name)'s checkpoint \(number) lies outside the transactions recorded (0…\(current))"
          )
        } else if number < firstKept - 1 {
          problem(
            .consumer,
            "\(consumer.name) has not read transactions \(number + 1)…\(firstKept - 1), which were pruned")
        }
      }
      return StoreCheckReport(problems: problems, rowsChecked: rowsChecked, transactionsChecked: visitor.transactions)
    }
  }
}

/// The last change of every key that history mentions, by root table: what the consistency
/// check compares each table with.
private struct LastChangeVisitor: HistoryVisitor {
  struct LastChange {
    var kind: ChangeKind
    var entity: String
    var number: Int64
  }

  let model: ManagedObjectModel
  var lastChanges: [String: [Int64: LastChange]] = [:]
  var transactions = 0
  private var number: Int64 = 0
  private var roots: [String: String] = [:]

  init(model: ManagedObjectModel) {
    self.model = model
    for entity in model.entities { roots[entity.name] = entity.rootName }
  }

  mutating func beginTransaction(_ header: HistoryReader.Header) {
    number = header.number
    transactions += 1
  }

  mutating func change(_ kind: ChangeKind, entity: String, key: Int64, changed: [String], tombstone: String?) {
    let root = roots[entity] ?? entity
    lastChanges[root, default: [:]][key] = LastChange(kind: kind, entity: entity, number: number)
  }

  mutating func endTransaction() {}
}
