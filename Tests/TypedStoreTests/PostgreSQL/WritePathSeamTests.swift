import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

// A model whose deletes keep a tombstone of every attribute type, with a cascade over rows no
// context loaded, a join table and a uniqueness constraint: every part of the write path.

final class Bin: ManagedObject {
  @Attribute var pennant: String = ""
  @Relationship(deleteRule: .cascade) var heirlooms: Set<Heirloom>
  @Relationship() var pennants: Set<Pennant>
}

final class Heirloom: ManagedObject {
  override class var uniquenessConstraints: [UniquenessConstraint] { [UniquenessConstraint(\Heirloom.code)] }
  @Attribute var code: String = ""
  @Attribute(preservedOnDeletion: true) var flag: Bool = false
  @Attribute(preservedOnDeletion: true) var small: Int16 = 0
  @Attribute(preservedOnDeletion: true) var medium: Int32 = 0
  @Attribute(preservedOnDeletion: true) var large: Int64 = 0
  @Attribute(preservedOnDeletion: true) var ratio: Double = 0
  @Attribute(preservedOnDeletion: true) var weight: Float = 0
  @Attribute(preservedOnDeletion: true) var note: String = ""
  @Attribute(preservedOnDeletion: true) var when: Date = Date(timeIntervalSinceReferenceDate: 0)
  @Attribute(preservedOnDeletion: true) var bytes: Data = Data()
  @Attribute(preservedOnDeletion: true) var tag: UUID = UUID()
  @Attribute(preservedOnDeletion: true) var link: URL = URL(string: "https://example.com")!
  @Attribute(preservedOnDeletion: true) var amount: Decimal = 0
  @Attribute(preservedOnDeletion: true) var maybeNote: String? = nil
  @Attribute(preservedOnDeletion: true) var maybeBytes: Data? = nil
  @Relationship(inverse: \Bin.heirlooms, deleteRule: .nullify) var bin: Bin?
}

final class Pennant: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \Bin.pennants) var bins: Set<Bin>
}

let heirloomModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Bin.self, Heirloom.self, Pennant.self) } catch {
    fatalError("fixture model: \(error)")
  }
}()

/// The store's write path (`PersistentStore.write`: rows, version checks, conflicts, uniqueness,
/// links, references, delete rules, and the `HistoryRecorder`) run through the engine seam on
/// an SQLite store file, by the store's own writer, and on a PostgreSQL store's schema, in a
/// write transaction that holds the store's write lock from its start: the same change sets
/// leave the same rows, the same errors and the same history, tombstones included.
@Suite struct WritePathSeamTests {
  /// One engine as the scenario drives it: writes a change set in one write transaction, and
  /// reads every table and the whole history back.
  private struct Engine {
    var write: (RowWrites, TransactionInfo) throws -> AppliedChanges
    var batchUpdate:
      (EntityDescription, RowSelection, [(slot: Int32, value: PrimitiveValue)], TransactionInfo) throws ->
        AffectedRows
    var batchDelete: (EntityDescription, RowSelection, TransactionInfo) throws -> AffectedRows
    var tables: () throws -> [String]
    var history: () throws -> [String]
  }

  private static func entity(_ name: String) -> EntityDescription {
    guard let entity = heirloomModel.entity(named: name) else { fatalError("no entity \(name)") }
    return entity
  }

  /// An heirloom's stored values: edge values of every type, `code` unique, `bin` its key.
  private static func heirloomValues(_ code: String, bin: Int64?, empty: Bool = false) -> [PrimitiveValue] {
    let ratio: Double = empty ? -Double.infinity : 1.0 / 3.0
    let values: [String: PrimitiveValue] = [
      "code": .text(code), "flag": .integer(1), "small": .integer(Int64(Int16.min)),
      "medium": .integer(Int64(Int32.max)), "large": .integer(Int64.min + 1), "ratio": .real(ratio),
      "weight": .real(Double(Float(0.1))), "note": .text("e\u{301} \"quoted\" \\ \u{1F389}\n\ttab"),
      "when": .real(-1234.5678), "bytes": .blob(Data([0, 1, 0x7F, 0x80, 0xFF])),
      "tag": .blob(Data((0..<16).map { UInt8($0 * 17) })), "link": .text("https://example.com/a?b=c#d"),
      "amount": .text("-12.5000"), "maybeNote": empty ? .null : .text("kept"),
      "maybeBytes": empty ? .null : .blob(Data()), "bin": bin.map { .integer($0) } ?? .null,
    ]
    return entity("Heirloom").storedAttributes.map { values[$0.name] ?? .null }
  }

  private static func insert(_ name: String, _ values: [PrimitiveValue]) -> RowWrites.Insert {
    RowWrites.Insert(entityIndex: entity(name).index, primaryKey: nil, values: values)
  }

  /// Reads each table of the model and the join table, rows in key order, through the seam.
  private static func tables(_ store: PersistentStore, on connection: some DatabaseConnection) throws -> [String] {
    var lines: [String] = []
    for name in ["Bin", "Heirloom", "Pennant"] {
      let layout = store.layout(of: entity(name))
      let width =
        2 + (layout.selectsEntity ? 1 : 0) + layout.columns.count
        - layout.columns.filter {
          if case .order = $0.role { return true } else { return false }
        }.count
      let statement = try connection.statement(layout.selectSQL + " ORDER BY pk")
      defer { statement.reset() }
      while try statement.step() {
        lines.append(name + " " + (try (0..<Int32(width)).map { "\(try statement.value($0))" }.joined(separator: " ")))
      }
    }
    let links = try connection.statement("SELECT * FROM \"\(joinTable())\" ORDER BY 1, 2")
    defer { links.reset() }
    while try links.step() { lines.append("link \(links.int64(0)) \(links.int64(1))") }
    return lines
  }

  private static func joinTable() -> String {
    guard case .joinTable(let table, _, _, _, _) = entity("Bin").relationship(named: "pennants")?.storage else {
      fatalError("Bin.pennants has no join table")
    }
    return table
  }

  /// The whole history, with change rows' IDs and every tombstone's values.
  private static func history(store: UUID, on connection: some DatabaseConnection) throws -> [String] {
    let transactions = try HistoryReader.fetch(
      HistoryRequest(), storeIdentifier: store, model: heirloomModel, connection: connection)
    var lines = transactions.map { transaction in
      "\(transaction.transactionNumber) \(transaction.author ?? "-"): "
        + transaction.changes.map { change in
          "\(change.changeType) \(change.objectID.entityName) \(change.objectID.primaryKey ?? 0) "
            + "\(change.updatedProperties)"
            + (change.tombstone.map { tombstone in
              " " + tombstone.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            } ?? "")
        }.joined(separator: "; ")
    }
    let ranges = try connection.statement(
      "SELECT number, first_change, last_change FROM _history_transaction ORDER BY number")
    defer { ranges.reset() }
    while try ranges.step() { lines.append("range \(ranges.int64(0)): \(ranges.int64(1))...\(ranges.int64(2))") }
    return lines
  }

  /// The scenario: what each step returned or threw, then the tables and the history.
  private static func scenario(on engine: Engine) throws -> [String] {
    var seen: [String] = []
    func step(_ name: String, author: String, _ changes: RowWrites) {
      do {
        let applied = try engine.write(changes, TransactionInfo(author: author))
        seen.append(
          "\(name): keys \(applied.insertedKeys) cascaded \(applied.propagation.deleted.map { "\($0.entityName) \($0.primaryKeys)" })"
            + " nullified \(applied.propagation.updated.map { "\($0.entityName) \($0.primaryKeys)" })")
      } catch {
        seen.append("\(name): \(error)")
      }
    }
    let bin = entity("Bin")
    let heirloom = entity("Heirloom")
    let pennant = entity("Pennant")
    guard let pennants = bin.relationships.firstIndex(where: { $0.name == "pennants" }) else { return ["no pennants"] }
    var changes = RowWrites()
    changes.inserts = [
      insert("Bin", [.text("attic")]), insert("Pennant", [.text("fragile")]), insert("Pennant", [.text("heavy")]),
    ]
    step("a bin and pennants", author: "packer", changes)
    changes = RowWrites()
    changes.inserts = [
      insert("Heirloom", heirloomValues("a", bin: 1)), insert("Heirloom", heirloomValues("b", bin: 1, empty: true)),
      insert("Heirloom", heirloomValues("c", bin: 1)),
    ]
    changes.links = [
      RowWrites.LinkWrite(entityIndex: bin.index, relationshipIndex: Int32(pennants), owner: 1, targets: [1, 2])
    ]
    step("heirlooms", author: "packer", changes)
    seen += try engine.tables().filter { $0.hasPrefix("link ") }
    changes = RowWrites()
    let codeSlot = Int32(heirloom.storedAttributes.firstIndex { $0.name == "code" } ?? 0)
    let noteSlot = Int32(heirloom.storedAttributes.firstIndex { $0.name == "note" } ?? 0)
    changes.updates = [
      RowWrites.Update(
        entityIndex: heirloom.index, primaryKey: 2, version: 1, slots: [noteSlot], values: [.text("edited")])
    ]
    step("an edit", author: "editor", changes)
    step("the same edit at the old version", author: "editor", changes)  // a conflict: the error policy
    changes.updates[0].values = [.text("forced")]
    changes.policy = .objectTrump
    step("the edit forced", author: "editor", changes)
    changes = RowWrites()
    changes.updates = [
      RowWrites.Update(entityIndex: heirloom.index, primaryKey: 3, version: 1, slots: [codeSlot], values: [.text("a")])
    ]
    step("a code taken", author: "editor", changes)
    changes = RowWrites()
    changes.inserts = [insert("Heirloom", heirloomValues("a", bin: nil))]
    step("a second a", author: "editor", changes)
    changes = RowWrites()
    changes.inserts = [insert("Heirloom", heirloomValues("d", bin: 9))]
    step("a missing bin", author: "editor", changes)
    changes = RowWrites()
    changes.deletes = [RowWrites.Delete(entityIndex: bin.index, primaryKey: 1, version: 1)]
    step("the bin, cascading", author: "cleaner", changes)
    changes = RowWrites()
    changes.deletes = [RowWrites.Delete(entityIndex: pennant.index, primaryKey: 2, version: 1)]
    changes.inserts = [insert("Bin", [.text("cellar")])]
    step("a pennant, and a new bin", author: "cleaner", changes)
    let batches = batchSteps(on: engine, step: step)
    seen += batches
    return seen + (try engine.tables()) + (try engine.history())
  }

  /// The scenario's batch requests, after heirlooms for them are saved with `step`.
  private static func batchSteps(
    on engine: Engine, step: (String, String, RowWrites) -> Void
  ) -> [String] {
    var seen: [String] = []
    let bin = entity("Bin")
    let heirloom = entity("Heirloom")
    let noteSlot = Int32(heirloom.storedAttributes.firstIndex { $0.name == "note" } ?? 0)
    var changes = RowWrites()
    changes.inserts = (1...3).map { insert("Heirloom", heirloomValues("batch \($0)", bin: 2)) }
    step("heirlooms for batches", "packer", changes)
    func batch(_ name: String, _ body: () throws -> AffectedRows) {
      do {
        seen.append("\(name): \(try body().groups.map { "\($0.entityName) \($0.primaryKeys)" })")
      } catch {
        seen.append("\(name): \(error)")
      }
    }
    let info = TransactionInfo(author: "batcher")
    batch("a batch update of every heirloom") {
      try engine.batchUpdate(heirloom, .all, [(noteSlot, .text("batched"))], info)
    }
    batch("a batch delete naming a missing bin") {
      try engine.batchDelete(bin, .rows([NamedRow(primaryKey: 1, entity: bin)]), info)
    }
    batch("a batch delete of the bin, cascading") {
      try engine.batchDelete(bin, .rows([NamedRow(primaryKey: 2, entity: bin)]), info)
    }
    return seen
  }

  @Test func theSameChangeSetsLeaveTheSameRowsErrorsAndHistoryOnBothEngines() async throws {
    let container = try PersistentContainer.makeTest(model: heirloomModel)
    let store = container.persistentStore
    let reader = try store.makeReadConnection()
    let onSQLite = try Self.scenario(
      on: Engine(
        write: { changes, info in try store.commit(changes, info: info) },
        batchUpdate: { entity, selection, assignments, info in
          try store.batchUpdate(
            entity, selection: selection, includesSubentities: true, assignments: assignments, info: info)
        },
        batchDelete: { entity, selection, info in
          try store.batchDelete(entity, selection: selection, includesSubentities: true, info: info)
        },
        tables: { try Self.tables(store, on: reader) },
        history: { try Self.history(store: store.identifier, on: reader) }))

    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    _ = try PostgreSQLStoreTables(schema: schema, model: heirloomModel).open(on: connection)
    try connection.use(schema: schema)
    let writer = try PostgreSQLStoreWriter(url: PostgreSQLTestServer.server().url, schema: schema, store: store)
    let onPostgreSQL = try Self.scenario(
      on: Engine(
        write: { changes, info in try writer.write(changes, info: info).0 },
        batchUpdate: { entity, selection, assignments, info in
          try writer.batchUpdate(entity, selection: selection, assignments: assignments, info: info)
        },
        batchDelete: { entity, selection, info in try writer.batchDelete(entity, selection: selection, info: info) },
        tables: { try Self.tables(store, on: connection) },
        history: { try Self.history(store: store.identifier, on: connection) }))

    #expect(onPostgreSQL == onSQLite)
    let text = onSQLite.joined(separator: "\n")
    // The scenario did what it meant to, so that the comparison covers every part.
    #expect(text.contains("the same edit at the old version: the save met 1 conflict(s)"), "\(text)")
    #expect(text.contains("the edit forced: keys []"), "\(text)")
    #expect(text.contains("a code taken: UniquenessClashes"), "\(text)")
    #expect(text.contains("whose row is gone; nothing was written"), "\(text)")
    #expect(text.contains("cascaded [\"Heirloom [1, 2, 3]\"] nullified [\"Pennant [1, 2]\"]"), "\(text)")
    // Tombstones keep every value exactly: a double's 17 digits, an infinity, a float widened.
    #expect(text.contains("ratio=real(0.3333333333333333)"), "\(text)")
    #expect(text.contains("ratio=real(-inf)"), "\(text)")
    #expect(text.contains("weight=real(0.10000000149011612)"), "\(text)")
    #expect(text.contains("a batch update of every heirloom: [\"Heirloom [4, 5, 6]\"]"), "\(text)")
    #expect(text.contains("a batch delete naming a missing bin: the store has no row for"), "\(text)")
    #expect(text.contains("a batch delete of the bin, cascading: [\"Bin [2]\"]"), "\(text)")
    #expect(onSQLite.filter { $0.hasPrefix("link ") } == ["link 1 1", "link 1 2"], "the links, before the bin went")
  }

  /// A unique index's refusal is told from a primary key's by the index's name, whatever the
  /// constrained columns are called (`ssh_pkey` ends as a primary key's name would).
  @Test func uniqueViolationsAreToldFromPrimaryKeysByTheIndexName() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    func violation(_ constraint: String) -> PostgreSQLError {
      PostgreSQLError(kind: .statement, sqlState: "23505", message: "duplicate key", constraint: constraint)
    }
    #expect(connection.isUniqueViolation(violation("_unique_User_ssh_pkey")))
    #expect(connection.isUniqueViolation(violation("_unique_Member_givenName_familyName")))
    #expect(!connection.isUniqueViolation(violation("User_pkey")))
    #expect(!connection.isUniqueViolation(PostgreSQLError(kind: .statement, sqlState: "23503", message: "")))
  }
}
