import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// Contexts on a PostgreSQL store (`PostgreSQLStoreEngine.openStore`): the same context code
/// reads rows into objects on the engine's connections and saves in its write transactions. One
/// scenario runs on an SQLite store file and on a PostgreSQL schema, through `ModelContext`s,
/// and both must tell the same story: values of every attribute type, relationship faults of
/// each storage, prefetching, objects by ID, counts, a save's conflict, a batch update, a
/// cascade.
@Suite struct PostgreSQLContextTests {
  @Test func contextsReadAndWriteAPostgreSQLStoreAsTheyDoAStoreFile() throws {
    let onSQLite = try Self.scenario(PersistentContainer.makeTest(model: heirloomModel).persistentStore)

    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let admin = try PostgreSQLConnection(url: server.url)
    defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    let store = try PostgreSQLStoreEngine.openStore(url: server.url, schema: schema, model: heirloomModel)
    let onPostgreSQL = try Self.scenario(store)

    #expect(onPostgreSQL == onSQLite)
    // The scenario did what it meant to, so that the comparison covers every part.
    let text = onSQLite.joined(separator: "\n")
    #expect(text.contains("a: flag=true small=-32768 medium=2147483647 large=-9223372036854775807"), "\(text)")
    #expect(text.contains("ratio=0.3333333333333333 weight=0.1"), "\(text)")
    #expect(text.contains("bin blue holds 3, pennants [first, second]"), "\(text)")
    #expect(text.contains("the second save: mergeConflict 1"), "\(text)")
    #expect(text.contains("batch updated 3"), "\(text)")
    #expect(text.contains("after the cascade: bins 0 heirlooms 0 pennants 2"), "\(text)")
  }

  /// Inserts, reads back in fresh contexts, conflicts, batch-updates and deletes; returns
  /// what each step saw.
  private static func scenario(_ store: PersistentStore) throws -> [String] {
    var log: [String] = []
    let writing = ModelContext(store: store, name: "writing")
    let bin = Bin(context: writing)
    bin.pennant = "blue"
    for (index, code) in ["a", "b", "c"].enumerated() {
      let heirloom = Heirloom(context: writing)
      fill(heirloom, code: code, index: index)
      heirloom.bin = bin
    }
    for name in ["first", "second"] {
      let pennant = Pennant(context: writing)
      pennant.name = name
      pennant.bins = [bin]
    }
    try writing.save()
    let binID = bin.managedID

    // Fresh contexts: objects from rows, faults of every relationship storage.
    let reading = ModelContext(store: store, name: "reading")
    let heirlooms = try reading.fetch(FetchRequest<Heirloom>()).sorted { $0.code < $1.code }
    log += heirlooms.map(describe)
    let read = try reading.existingObject(with: binID)
    let pennants = read.pennants.map(\.name).sorted().joined(separator: ", ")
    log.append("bin \(read.pennant) holds \(read.heirlooms.count), pennants [\(pennants)]")
    log.append("heirloom a's bin: \(heirlooms.first?.bin?.pennant ?? "none")")
    var prefetching = FetchRequest<Bin>()
    prefetching.relationshipKeyPathsForPrefetching = [\.heirlooms, \.pennants]
    let prefetched = try ModelContext(store: store).fetch(prefetching)
    log.append("prefetched \(prefetched.map { "\($0.heirlooms.count)/\($0.pennants.count)" })")
    log.append("counts: \(try reading.count(for: FetchRequest<Heirloom>())) heirlooms")
    let small = FetchRequest<Heirloom>(predicate: #Predicate { $0.medium > 5 }, sortBy: [SortDescriptor(\.medium)])
    log.append("medium > 5: \(try reading.fetch(small).map(\.code))")

    // Two contexts edit the same object: the second save meets the first's change.
    let first = ModelContext(store: store)
    let second = ModelContext(store: store)
    let early = try first.fetch(FetchRequest<Heirloom>()).sorted { $0.code < $1.code }
    let late = try second.fetch(FetchRequest<Heirloom>()).sorted { $0.code < $1.code }
    early[0].note = "first"
    late[0].note = "second"
    try first.save()
    do {
      try second.save()
      log.append("the second save: saved")
    } catch StoreError.mergeConflict(let conflicts) {
      log.append("the second save: mergeConflict \(conflicts.count)")
    }

    let ids = heirlooms.map(\.managedID)
    let updated = try reading.execute(
      BatchUpdateRequest<Heirloom>(objectIDs: ids, propertiesToUpdate: [.set(\.note, "batch")]))
    log.append("batch updated \(updated.count)")
    let fresh = try ModelContext(store: store).fetch(FetchRequest<Heirloom>()).map(\.note)
    log.append("notes now \(fresh.sorted())")

    let deleting = ModelContext(store: store)
    deleting.delete(try deleting.existingObject(with: binID))
    try deleting.save()
    let after = ModelContext(store: store)
    log.append(
      "after the cascade: bins \(try after.count(for: FetchRequest<Bin>())) heirlooms "
        + "\(try after.count(for: FetchRequest<Heirloom>())) pennants \(try after.count(for: FetchRequest<Pennant>()))")
    return log
  }

  private static func fill(_ heirloom: Heirloom, code: String, index: Int) {
    heirloom.code = code
    heirloom.flag = index == 0
    heirloom.small = index == 0 ? Int16.min : Int16(index)
    heirloom.medium = index == 0 ? Int32.max : Int32(index * 3)
    heirloom.large = Int64.min + 1 + Int64(index)
    heirloom.ratio = 1.0 / Double(3 + index)
    heirloom.weight = Float(0.1) * Float(index + 1)
    heirloom.note = "e\u{301} \"quoted\" \\ \u{1F389}\n\ttab \(index)"
    heirloom.when = Date(timeIntervalSinceReferenceDate: -1234.5678 * Double(index + 1))
    heirloom.bytes = Data([0, 1, 0x7F, 0x80, 0xFF, UInt8(index)])
    heirloom.tag = UUID(uuid: (UInt8(index), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
    heirloom.link = URL(string: "https://example.com/\(code)?b=c#d") ?? heirloom.link
    heirloom.amount = Decimal(string: "-12.50\(index)") ?? 0
    heirloom.maybeNote = index == 1 ? nil : "kept \(index)"
    heirloom.maybeBytes = index == 2 ? Data() : nil
  }

  private static func describe(_ heirloom: Heirloom) -> String {
    "\(heirloom.code): flag=\(heirloom.flag) small=\(heirloom.small) medium=\(heirloom.medium) "
      + "large=\(heirloom.large) ratio=\(heirloom.ratio) weight=\(heirloom.weight) note=\(heirloom.note.debugDescription) "
      + "when=\(heirloom.when.timeIntervalSinceReferenceDate) bytes=\(heirloom.bytes.hexDigits) tag=\(heirloom.tag) "
      + "link=\(heirloom.link) amount=\(heirloom.amount) maybeNote=\(String(describing: heirloom.maybeNote)) "
      + "maybeBytes=\(heirloom.maybeBytes.map(\.hexDigits) ?? "nil")"
  }
}
