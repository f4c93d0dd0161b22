import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// A store whose WAL holds `commits` committed transactions that were never checkpointed:
/// the writer process was killed with the store open. With `keepingIndex: false` its -shm is
/// removed, as a copy of the store and its log without the index would be.
private func storeWithUncheckpointedCommits(
  _ commits: Int, keepingIndex: Bool = false, variant: String = "", function: String = #function
) throws -> URL {
  let url = PersistentContainer.testStoreURL(variant: variant, function: function)
  try PersistentContainer.destroyPersistentStore(at: url)
  let holder = try SpawnedProcess(builtProduct("typedstore-test-writer"), ["hold", url.path, String(commits)])
  #expect(holder.waitForLine("ready"))
  holder.kill()
  if !keepingIndex { try FileManager.default.removeItem(atPath: url.path + "-shm") }
  return url
}

private let frameSize = 4096 + 24

/// Flips one byte of the WAL at `offset`.
private func damageWAL(_ url: URL, at offset: Int) throws {
  var bytes = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
  bytes[offset] ^= 0xFF
  try bytes.write(to: URL(fileURLWithPath: url.path + "-wal"))
}

/// The offset of a byte in the page of frame `number` (1-based).
private func pageByte(ofFrame number: Int) -> Int { 32 + (number - 1) * frameSize + 24 + 200 }

private func eventCount(_ url: URL, options: StoreOptions = StoreOptions()) throws -> Int {
  let container = try PersistentContainer(
    name: "Events", model: ManagedObjectModel(Event.self), storeURL: url, options: options)
  return try container.viewContext.performAndWait { context in try context.count(for: FetchRequest<Event>()) }
}

@Suite struct DamagedWALTests {
  @Test func anIntactWALIsReadAsSQLiteReplaysIt() throws {
    let url = try storeWithUncheckpointedCommits(6)
    let inspection = try #require(try WALInspection(path: url.path + "-wal"))
    #expect(inspection.headerIsValid)
    #expect(!inspection.isDamaged)
    #expect(inspection.firstInvalidFrame == nil)
    #expect(inspection.replayedCommits == 7)  // the store's creation and 6 saves
    #expect(inspection.replayedFrames == inspection.frameCount)
    #expect(try eventCount(url) == 6)
  }

  @Test func aDamagedFrameBeforeLaterCommitsIsRefusedAndEveryFileLeftAsItWas() throws {
    let url = try storeWithUncheckpointedCommits(6)
    try damageWAL(url, at: pageByte(ofFrame: 3))
    let inspection = try #require(try WALInspection(path: url.path + "-wal"))
    #expect(inspection.firstInvalidFrame == 3)
    #expect(inspection.lostCommits > 0)
    let before = storeBytes(url)
    #expect(throws: StoreError.damagedWAL(path: url.path, inspection: inspection)) { try eventCount(url) }
    #expect(storeBytes(url) == before)
    #expect(!FileManager.default.fileExists(atPath: url.path + "-shm"), "SQLite was not let near the files")
    // Refused again, for a read-only open too: nothing was lost by refusing.
    var readOnly = StoreOptions()
    readOnly.isReadOnly = true
    #expect(throws: StoreError.self) { try eventCount(url, options: readOnly) }
    #expect(storeBytes(url) == before)
  }

  @Test func aDamagedHeaderIsRefused() throws {
    let url = try storeWithUncheckpointedCommits(3)
    try damageWAL(url, at: 17)  // inside the salt, so the header checksum no longer matches
    let inspection = try #require(try WALInspection(path: url.path + "-wal"))
    #expect(!inspection.headerIsValid)
    #expect(inspection.lostCommits == 4)
    let before = storeBytes(url)
    #expect(throws: StoreError.damagedWAL(path: url.path, inspection: inspection)) { try eventCount(url) }
    #expect(storeBytes(url) == before)
  }

  @Test func damageSeenWhileAnIndexIsPresentIsRefusedUnderTheWriteLock() throws {
    // With a -shm present another process may be writing, so the check waits for the write
    // lock; SQLite would trust the index and read the damaged page as if it were intact.
    let url = try storeWithUncheckpointedCommits(6, keepingIndex: true)
    try damageWAL(url, at: pageByte(ofFrame: 2))
    let before = storeBytes(url)
    let error = #expect(throws: StoreError.self) { try eventCount(url) }
    guard case .damagedWAL(_, let inspection) = error else {
      Issue.record("expected damagedWAL, got \(String(describing: error))")
      return
    }
    #expect(inspection.firstInvalidFrame == 2)
    #expect(storeBytes(url) == before)
  }

  @Test func aTornLastFrameIsNotDamage() throws {
    let url = try storeWithUncheckpointedCommits(4)
    let frames = try #require(try WALInspection(path: url.path + "-wal")).frameCount
    try damageWAL(url, at: pageByte(ofFrame: frames))
    let inspection = try #require(try WALInspection(path: url.path + "-wal"))
    #expect(inspection.firstInvalidFrame == frames)
    #expect(!inspection.isDamaged)
    #expect(try eventCount(url) == 3, "the transaction whose last frame was torn never committed")
  }

  @Test func theOptionCreatesTheStoreAnewWhenTheDamageReachesItsCreation() throws {
    let url = try storeWithUncheckpointedCommits(3)
    try damageWAL(url, at: 17)  // the header: nothing replays, not even the creation
    var options = StoreOptions()
    options.opensDamagedWAL = true
    let container = try PersistentContainer(
      name: "Events", model: ManagedObjectModel(Event.self), storeURL: url, options: options)
    let count = try container.viewContext.performAndWait { try $0.count(for: FetchRequest<Event>()) }
    #expect(count == 0)
    // A whole store again: it takes saves, with history.
    try container.viewContext.performAndWait { context in
      Event(context: context).sequence = 1
      try context.save()
    }
    #expect(try container.fetchHistory(HistoryRequest()).count == 1)
  }

  @Test func theOptionOpensADamagedStoreKeepingACopyOfItsLog() throws {
    let url = try storeWithUncheckpointedCommits(6)
    try damageWAL(url, at: pageByte(ofFrame: 22))  // in a later save: some stay
    let damaged = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
    let folder = url.deletingLastPathComponent()
    let copiesBefore = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
      $0.hasPrefix(url.lastPathComponent + "-wal.damaged-")
    }
    for copy in copiesBefore { try FileManager.default.removeItem(at: folder.appendingPathComponent(copy)) }
    let inspection = try #require(try WALInspection(path: url.path + "-wal"))
    var options = StoreOptions()
    options.opensDamagedWAL = true
    // What SQLite kept is what the inspection said it would replay (the first commit made
    // the store).
    #expect(try eventCount(url, options: options) == inspection.replayedCommits - 1)
    #expect((1..<6).contains(inspection.replayedCommits - 1))
    let copies = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
      $0.hasPrefix(url.lastPathComponent + "-wal.damaged-")
    }
    #expect(copies.count == 1)
    if let copy = copies.first {
      #expect(try Data(contentsOf: folder.appendingPathComponent(copy)) == damaged)
      try FileManager.default.removeItem(at: folder.appendingPathComponent(copy))
    }
  }
}
