import Foundation
import Synchronization
import Testing
import TypedStore
import TypedStoreTesting

@Suite struct HistoryExportTests {
  @Test func tokenTextRoundTripsAndRefusesOtherText() throws {
    let token = HistoryToken(storeIdentifier: UUID(), transactionNumber: 42)
    #expect(HistoryToken(stringRepresentation: token.stringRepresentation) == token)
    #expect(token.stringRepresentation == "\(token.storeIdentifier.uuidString):42")
    for text in ["", "42", "x:1", "\(UUID().uuidString):-1", "\(UUID().uuidString):1:2", "\(UUID().uuidString):"] {
      #expect(HistoryToken(stringRepresentation: text) == nil, "\(text)")
    }
  }

  @Test func exportStreamsALargeTransactionInBoundedChunks() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Note>(count: 20_000) { index, note in note.title = "n\(index)" })
      _ = try context.execute(BatchDeleteRequest<Note>())  // 20,000 tombstones
    }
    var chunks = 0
    var largest = 0
    var text = Data()
    let summary = try container.persistentStore.exportHistory(HistoryRequest()) { chunk in
      chunks += 1
      largest = max(largest, chunk.count)
      text.append(contentsOf: chunk)
    }
    #expect(summary.transactions == 2)
    #expect(summary.changes == 40_000)
    #expect(summary.lastToken == (try container.currentHistoryToken))
    #expect(chunks > 10)
    #expect(largest < 70_000)  // one chunk of about 64 KiB at most, never the whole export
    let lines = text.split(separator: UInt8(ascii: "\n"))
    #expect(lines.count == 2)
    let delete = try #require(try JSONSerialization.jsonObject(with: Data(lines[1])) as? [String: Any])
    let changes = try #require(delete["changes"] as? [[String: Any]])
    #expect(changes.count == 20_000)
    #expect(changes.allSatisfy { ($0["tombstone"] as? [String: Any])?["uuid"] is String })
  }

  @Test func exportOfNothingIsAnEmptyArrayInJSONAndNoLinesInNDJSON() throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    var json = Data()
    let summary = try container.persistentStore.exportHistory(HistoryRequest(), format: .json) {
      json.append(contentsOf: $0)
    }
    #expect(String(decoding: json, as: UTF8.self) == "[]\n")
    #expect(summary == HistoryExportSummary())
    var ndjson = Data()
    try container.persistentStore.exportHistory(HistoryRequest()) { ndjson.append(contentsOf: $0) }
    #expect(ndjson.isEmpty)
  }

  @Test func aWriteErrorStopsTheExport() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      _ = try context.execute(BatchInsertRequest<Note>(count: 5000) { index, note in note.title = "n\(index)" })
    }
    struct Full: Error {}
    var calls = 0
    #expect(throws: Full.self) {
      try container.persistentStore.exportHistory(HistoryRequest()) { _ in
        calls += 1
        throw Full()
      }
    }
    #expect(calls == 1)
  }

  @Test func aMergerStoppedByAHookDuringCatchUpKeepsWhatItProcessed() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    for index in 0..<3 {
      try await container.performBackgroundTask { context in
        Note(context: context).title = "n\(index)"
        try context.save()
      }
    }
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    let merger = try HistoryMerger(container: container, consumer: "partial", contexts: [], options: options)
    merger.addHook { event in
      if event.transaction.transactionNumber == 3 { throw CancellationError() }
    }
    await #expect(throws: CancellationError.self) { try await merger.start() }
    #expect(try container.persistentStore.historyConsumers().first?.checkpoint.transactionNumber == 2)
  }

  @Test func readsAcrossPagesOfTransactionsInOrderWithLimitsAndStarts() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      for index in 0..<2_500 {
        if index % 3 == 0 {
          Folder(context: context).name = "f\(index)"
        } else {
          Note(context: context).title = "n\(index)"
        }
        try context.save()
      }
    }
    let store = container.persistentStore
    let token = { (number: Int64) in HistoryToken(storeIdentifier: store.identifier, transactionNumber: number) }
    #expect(try store.fetchHistory(HistoryRequest()).map(\.transactionNumber) == Array(1...2_500))
    #expect(try store.fetchHistory(HistoryRequest(after: token(100))).map(\.transactionNumber) == Array(101...2_500))
    var limited = HistoryRequest(after: token(700))
    limited.transactionLimit = 1_500
    #expect(try store.fetchHistory(limited).map(\.transactionNumber) == Array(701...2_200))
    var folders = HistoryRequest(after: token(900))
    folders.entityNames = ["Folder"]
    let expected = (901...2_500).filter { ($0 - 1) % 3 == 0 }.map(Int64.init)
    #expect(try store.fetchHistory(folders).map(\.transactionNumber) == expected)
    #expect(try store.fetchHistory(folders).allSatisfy { $0.changes.count == 1 })
    let ranged = HistoryRequest(after: token(999), through: token(2_001))
    #expect(try store.fetchHistory(ranged).map(\.transactionNumber) == Array(1_000...2_001))
  }
}
