import Foundation
import Spawning
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

final class Keepsake: ManagedObject {
  @Attribute(preservedOnDeletion: true) var bool: Bool = false
  @Attribute(preservedOnDeletion: true) var int: Int = 0
  @Attribute(preservedOnDeletion: true) var int16: Int16 = 0
  @Attribute(preservedOnDeletion: true) var double: Double = 0
  @Attribute(preservedOnDeletion: true) var float: Float = 0
  @Attribute(preservedOnDeletion: true) var string: String = ""
  @Attribute(preservedOnDeletion: true) var date: Date = Date(timeIntervalSinceReferenceDate: 0)
  @Attribute(preservedOnDeletion: true) var data: Data = Data()
  @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
  @Attribute(preservedOnDeletion: true) var url: URL? = nil
  @Attribute(preservedOnDeletion: true) var decimal: Decimal = 0
  @Attribute(preservedOnDeletion: true) var status: Status = .draft
  @Attribute(.codable, preservedOnDeletion: true) var options: Options? = nil
  @Attribute(preservedOnDeletion: true) var missing: String? = nil
  @Attribute var notKept: String = "gone"
}

@Suite struct HistoryRecordingTests {
  @Test func saveRecordsOneTransactionWithItsChanges() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let start = try container.currentHistoryToken
    let ids = try await container.performBackgroundTask { context in
      context.name = "editor"
      context.transactionAuthor = "alice"
      let notes = (0..<3).map { index in
        let note = Note(context: context)
        note.title = "n\(index)"
        return note
      }
      try context.save()
      notes[0].title = "changed"
      notes[0].status = .published
      context.delete(notes[1])
      try context.save()
      return notes.map(\.managedID)
    }
    let transactions = try container.fetchHistory(HistoryRequest(after: start))
    #expect(transactions.count == 2)
    let (first, second) = (transactions[0], transactions[1])
    #expect(first.transactionNumber + 1 == second.transactionNumber)
    #expect(first.author == "alice")
    #expect(first.contextName == "editor")
    #expect(first.processID == ProcessInfo.processInfo.processIdentifier)
    #expect(first.changes.map(\.changeType) == [.insert, .insert, .insert])
    #expect(first.changes.compactMap { $0.objectID(as: Note.self) } == ids)
    #expect(first.changes.allSatisfy { $0.objectID(as: Folder.self) == nil })
    let update = try #require(second.changes.first { $0.changeType == .update })
    #expect(update.objectID(as: Note.self) == ids[0])
    #expect(Set(update.updatedProperties) == ["title", "status"])
    let delete = try #require(second.changes.first { $0.changeType == .delete })
    #expect(delete.objectID(as: Note.self) == ids[1])
    #expect(delete.tombstone?[\Note.uuid] != nil)
    #expect(try container.currentHistoryToken == second.token)
    // Read alone, the second transaction still has both its change rows: its recorded range
    // starts at the first of them (a read of several transactions spans them all, so only a
    // read that starts at it shows where its range starts).
    let alone = try container.fetchHistory(HistoryRequest(after: first.token))
    #expect(alone.map(\.transactionNumber) == [second.transactionNumber])
    #expect(alone.first?.changes.map(\.changeType) == second.changes.map(\.changeType))
    #expect(Set(second.changes.map(\.changeType)) == [.update, .delete])
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  @Test func rollbackAndFailedSavesLeaveNoHistory() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["base"], in: container)
    let before = try container.currentHistoryToken
    let stale = container.newBackgroundContext()
    try await stale.perform { context in _ = try context.existingObject(with: ids[0]).title }
    try await container.performBackgroundTask { context in
      Note(context: context).title = "rolled back"
      context.rollback()
      try context.save()  // nothing to save: no transaction
    }
    #expect(try container.currentHistoryToken == before)
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).title = "winner"
      try context.save()
    }
    let afterWinner = try container.currentHistoryToken
    try await stale.perform { context in
      try context.existingObject(with: ids[0]).title = "loser"
      Note(context: context).title = "would be inserted"
      #expect(throws: StoreError.self) { try context.save() }
    }
    #expect(try container.currentHistoryToken == afterWinner)
    #expect(try container.fetchHistory(HistoryRequest(after: afterWinner)).isEmpty)
  }

  @Test func tombstonesKeepEveryAttributeType() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Keepsake.self))
    let uuid = UUID()
    let date = Date(timeIntervalSinceReferenceDate: 123.456)
    try await container.performBackgroundTask { context in
      let k = Keepsake(context: context)
      k.options = Options(pinned: true, tags: ["t"])
      k.bool = true
      k.int = .min
      k.int16 = -3
      k.double = 2.5
      k.float = -0.5
      k.string = "quote \" and ' and \\ and é"
      k.date = date
      k.data = Data([0, 0xFF, 0x10])
      k.uuid = uuid
      k.url = URL(string: "https://example.com/x")
      k.decimal = Decimal(string: "3.14159265358979323846")!
      k.status = .archived
      try context.save()
      context.delete(k)
      try context.save()
    }
    let delete = try #require(try container.fetchHistory(HistoryRequest()).last?.changes.first)
    #expect(delete.changeType == .delete)
    let t = try #require(delete.tombstone)
    #expect(t[\Keepsake.bool] == true)
    #expect(t[\Keepsake.int] == .min)
    #expect(t[\Keepsake.int16] == -3)
    #expect(t[\Keepsake.double] == 2.5)
    #expect(t[\Keepsake.float] == -0.5)
    #expect(t[\Keepsake.string] == "quote \" and ' and \\ and é")
    #expect(t[\Keepsake.date] == date)
    #expect(t[\Keepsake.data] == Data([0, 0xFF, 0x10]))
    #expect(t[\Keepsake.uuid] == uuid)
    #expect(t[\Keepsake.url] == URL(string: "https://example.com/x"))
    #expect(t[\Keepsake.decimal] == Decimal(string: "3.14159265358979323846")!)
    #expect(t[\Keepsake.status] == .archived)
    #expect(t[\Keepsake.options] == Options(pinned: true, tags: ["t"]))
    #expect(t[\Keepsake.missing] == .some(nil))
    #expect(t[\Keepsake.notKept] == nil)  // not preserved
    #expect(t.values["notKept"] == nil)
    let json = t.jsonObject
    #expect(json["uuid"] == .string(uuid.uuidString))
    #expect(json["bool"] == .bool(true))
    #expect(json["int"] == .integer(.min))
    #expect(json["data"] == .string(Data([0, 0xFF, 0x10]).base64EncodedString()))
    #expect(json["missing"] == .null)
    _ = try JSONEncoder().encode(json)
  }

  @Test func tombstonesKeepDoublesToTheLastBitAndInfinities() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Keepsake.self))
    let date = Date(timeIntervalSinceReferenceDate: 0.1 + 0.2)  // 0.30000000000000004
    try await container.performBackgroundTask { context in
      let k = Keepsake(context: context)
      k.double = 1.0 / 3.0  // SQLite's json_object keeps 15 digits: 0.333333333333333
      k.float = -.infinity  // and writes Inf, which is not JSON
      k.date = date
      try context.save()
      context.delete(k)
      try context.save()
    }
    let delete = try #require(try container.fetchHistory(HistoryRequest()).last?.changes.first)
    let t = try #require(delete.tombstone)
    #expect(t[\Keepsake.double] == 1.0 / 3.0)
    #expect(t[\Keepsake.float] == -.infinity)
    #expect(t[\Keepsake.date] == date)
    #expect(t[\Keepsake.bool] == false, "the other values are there too")

    // A tombstone written before this was fixed, with SQLite's bare infinities, still reads.
    let old = HistoryTombstone(
      entityName: "Keepsake", json: #"{"float":{"real":-Inf},"double":{"real":Inf},"int":{"integer":7}}"#,
      storeIdentifier: container.persistentStore.identifier)
    #expect(old.values == ["float": .real(-.infinity), "double": .real(.infinity), "int": .integer(7)])
    // SQLite 3.43 and later write 9.0e+999, which no Double holds.
    let newer = HistoryTombstone(
      entityName: "Keepsake", json: #"{"float":{"real":-9.0e+999},"date":{"real":9.0e+999}}"#,
      storeIdentifier: container.persistentStore.identifier)
    #expect(newer.values == ["float": .real(-.infinity), "date": .real(.infinity)])
    // An infinite date prints as the number it is, not as a calendar date.
    #expect(newer.jsonObject["date"] == .string("inf"))
  }

  @Test func historyCanBeTurnedOff() async throws {
    var options = StoreOptions()
    options.recordsHistory = false
    let container = try PersistentContainer.makeTest(model: notesModel, options: options)
    let received = Mutex<[StoreChanges]>([])
    let observation = container.addStoreChangesObserver { changes in received.withLock { $0.append(changes) } }
    defer { observation.cancel() }
    _ = try await saveNotes(["unrecorded"], in: container)
    #expect(try container.currentHistoryToken.transactionNumber == 0)
    #expect(try container.fetchHistory(HistoryRequest()).isEmpty)
    // Without history only the writer can publish the commit (there is nothing for the
    // remote-change monitor to read): it is published all the same, without a token. A bounded
    // wait, so that a commit never published fails the test instead of hanging it.
    for _ in 0..<400 where received.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
    let changes = received.withLock { $0 }
    #expect(changes.count == 1)
    #expect(changes.first?.inserted(Note.self).count == 1)
    #expect(changes.first?.token == nil)
  }
}

@Suite struct HistoryReadingTests {
  /// Three transactions by three authors, one touching a Folder.
  private func seeded(function: String = #function) async throws -> (PersistentContainer, [HistoryToken]) {
    let container = try PersistentContainer.makeTest(model: notesModel, function: function)
    var tokens: [HistoryToken] = [try container.currentHistoryToken]
    for author in ["alice", "bob", "carol"] {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = author
        Note(context: context).title = author
        if author == "bob" { Folder(context: context).name = "bob's" }
        try context.save()
      }
      tokens.append(try container.currentHistoryToken)
    }
    return (container, tokens)
  }

  @Test func tokensAreOrderedAndCodable() async throws {
    let (container, tokens) = try await seeded()
    #expect(tokens == tokens.sorted())
    #expect(Set(tokens).count == 4)
    let decoded = try JSONDecoder().decode([HistoryToken].self, from: JSONEncoder().encode(tokens))
    #expect(decoded == tokens)
    #expect(tokens.allSatisfy { $0.storeIdentifier == container.persistentStore.identifier })
  }

  @Test func filtersByAuthorEntityRangeAndLimit() async throws {
    let (container, tokens) = try await seeded()
    var request = HistoryRequest(after: tokens[0])
    #expect(try container.fetchHistory(request).map(\.author) == ["alice", "bob", "carol"])
    request.authors = ["bob", "carol"]
    #expect(try container.fetchHistory(request).map(\.author) == ["bob", "carol"])
    request.authors = nil
    request.excludedAuthors = ["alice"]
    #expect(try container.fetchHistory(request).map(\.author) == ["bob", "carol"])
    request.excludedAuthors = []
    request.entities = [Folder.self]
    let folders = try container.fetchHistory(request)
    #expect(folders.map(\.author) == ["bob"])
    #expect(folders[0].changes.map(\.objectID.entityName) == ["Folder"])
    request.entities = nil
    request.transactionLimit = 2
    let page = try container.fetchHistory(request)
    #expect(page.map(\.author) == ["alice", "bob"])
    let next = try container.fetchHistory(HistoryRequest(after: page[1].token))
    #expect(next.map(\.author) == ["carol"])
    let range = try container.fetchHistory(HistoryRequest(after: tokens[1], through: tokens[2]))
    #expect(range.map(\.author) == ["bob"])
    #expect(throws: HistoryError.invalidRequest("the end token comes before the start token")) {
      try container.fetchHistory(HistoryRequest(after: tokens[2], through: tokens[1]))
    }
  }

  @Test func fetchesAfterADate() async throws {
    // Transactions with distinct timestamps, so that a date falls between two of them.
    let container = try PersistentContainer.makeTest(model: notesModel)
    for title in ["early", "middle", "late"] {
      _ = try await saveNotes([title], in: container)
      try await Task.sleep(for: .milliseconds(20))
    }
    let all = try container.fetchHistory(HistoryRequest())
    #expect(all.count == 3)
    #expect(all[0].timestamp < all[1].timestamp && all[1].timestamp < all[2].timestamp)
    let afterFirst = try container.fetchHistory(HistoryRequest(after: all[0].timestamp))
    #expect(afterFirst.map(\.transactionNumber) == [all[1].transactionNumber, all[2].transactionNumber])
    let afterLast = try container.fetchHistory(HistoryRequest(after: all[2].timestamp))
    #expect(afterLast.isEmpty)
  }

  @Test func tokenOfAnotherStoreThrowsForeignStore() async throws {
    let (container, _) = try await seeded()
    let other = try PersistentContainer.makeTest(model: notesModel, variant: "other")
    let foreign = try other.currentHistoryToken
    #expect(
      throws: HistoryError.foreignStore(expected: container.persistentStore.identifier, found: foreign.storeIdentifier)
    ) {
      try container.fetchHistory(HistoryRequest(after: foreign))
    }
  }

  @Test func deletingHistoryMovesTheHorizonAndExpiresOlderTokens() async throws {
    let (container, tokens) = try await seeded()
    let deleted = try container.deleteHistory(before: tokens[2])  // keeps transaction 2 (bob) and later
    #expect(deleted == 1)
    #expect(try container.persistentStore.historyHorizon() == tokens[1])
    #expect(try container.fetchHistory(HistoryRequest(after: tokens[1])).map(\.author) == ["bob", "carol"])
    #expect(throws: HistoryError.tokenExpired(horizon: tokens[1])) {
      try container.fetchHistory(HistoryRequest(after: tokens[0]))
    }
    #expect(throws: HistoryError.tokenExpired(horizon: tokens[1])) {
      try container.fetchHistory(HistoryRequest())
    }
    // Numbers are never reused after a prune.
    _ = try await saveNotes(["after prune"], in: container)
    #expect(try container.currentHistoryToken.transactionNumber == tokens[3].transactionNumber + 1)
    // The horizon survives reopening.
    let reopened = try PersistentContainer(name: "Test", model: notesModel, storeURL: container.persistentStore.url)
    #expect(try reopened.persistentStore.historyHorizon() == tokens[1])
  }

  @Test func deletingHistoryBeforeADateExpiresDatesBeforeIt() async throws {
    let (container, _) = try await seeded()
    let all = try container.fetchHistory(HistoryRequest())
    #expect(try container.deleteHistory(before: all[1].timestamp) >= 1)
    #expect(throws: HistoryError.self) {
      try container.fetchHistory(HistoryRequest(after: all[0].timestamp.addingTimeInterval(-1)))
    }
    let kept = try container.fetchHistory(HistoryRequest(after: all[1].timestamp))
    #expect(kept.last?.transactionNumber == all.last?.transactionNumber)
  }
}

@Suite struct MultiProcessHistoryTests {
  private var writerURL: URL { builtProduct("typedstore-test-writer") }

  @Test func twoProcessesWritingProduceOneGapFreeOrderedHistory() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let count = 40
    let processes = try ["writer-a", "writer-b"].map { author in
      let process = POSIXProcess()
      process.executableURL = writerURL
      process.arguments = [container.persistentStore.location, author, String(count)]
      try process.run()
      return process
    }
    // This process writes too, at the same time.
    let context = container.newBackgroundContext()
    for sequence in 0..<count {
      try await context.perform { context in
        context.transactionAuthor = "tests"
        let event = Event(context: context)
        event.source = "tests"
        event.sequence = sequence
        try context.save()
      }
    }
    for process in processes {
      process.waitUntilExit()
      #expect(process.terminationStatus == 0)
    }
    let history = try container.fetchHistory(HistoryRequest())
    #expect(history.count == 3 * count)
    let numbers = history.map(\.transactionNumber)
    #expect(numbers == Array(numbers[0]...(numbers[0] + Int64(3 * count - 1))))
    let pids = Set(history.map(\.processID))
    #expect(pids == Set(processes.map(\.processIdentifier) + [ProcessInfo.processInfo.processIdentifier]))
    for author in ["writer-a", "writer-b", "tests"] {
      let mine = history.filter { $0.author == author }
      #expect(mine.count == count)
      #expect(mine.allSatisfy { $0.changes.count == 1 && $0.changes[0].changeType == .insert })
    }
    let rows = try await container.viewContext.perform { context in try context.count(for: FetchRequest<Event>()) }
    #expect(rows == 3 * count)
  }
}

extension MultiProcessHistoryTests {
  @Test func aWriterKilledMidStreamLeavesNoRowWithoutHistoryNorHistoryWithoutRow() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Event.self))
    let process = POSIXProcess()
    process.executableURL = builtProduct("typedstore-test-writer")
    // More commits than it can make before the kill: a release build under the whole suite's
    // load made 100,000 while a wait on the shared pool was not resumed, and exited.
    process.arguments = [container.persistentStore.location, "doomed", "100000000"]
    try process.run()
    // Let it commit for a while, then kill it without warning, mid-transaction or not. The
    // wait runs on a thread of its own, not on the pool the other tests' tasks share.
    let store = container.persistentStore
    try await offThePool {
      for _ in 0..<400 {
        Thread.sleep(forTimeInterval: 0.005)
        if try store.currentHistoryToken().transactionNumber >= 20 { break }
      }
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    #expect(process.terminationReason == .uncaughtSignal)

    let history = try container.fetchHistory(HistoryRequest())
    let recorded = Set(history.flatMap(\.changes).filter { $0.changeType == .insert }.compactMap(\.objectID.primaryKey))
    let rows = try await container.newBackgroundContext().perform { context in
      Set(try context.fetchObjectIDs(for: FetchRequest<Event>()).compactMap(\.primaryKey))
    }
    #expect(!rows.isEmpty)
    #expect(rows == recorded)
    #expect(history.allSatisfy { $0.changes.count == 1 })
  }
}

final class Event: ManagedObject {
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
}
