import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct SQLiteConnectionTests {
  private func freshPath(_ name: String) throws -> String {
    let url = PersistentContainer.testStoreURL(variant: name)
    try PersistentContainer.destroyPersistentStore(at: url)
    return url.path
  }

  /// A fresh WAL store with a table `t`, and a connection that holds its write lock
  /// (`BEGIN IMMEDIATE`) until the caller rolls it back.
  private func lockedStore(_ name: String) throws -> (path: String, holder: SQLiteConnection) {
    let path = try freshPath(name)
    let holder = try SQLiteConnection(path: path, mode: .readWriteCreate)
    try holder.configure(enableWAL: true)
    try holder.execute("CREATE TABLE t (x)")
    try holder.execute("BEGIN IMMEDIATE")
    return (path, holder)
  }

  @Test func writeWaitsForTheLockUntilItsDeadlineAndNotLonger() throws {
    let (path, holder) = try lockedStore("busy")
    let waiter = try SQLiteConnection(path: path, mode: .readWrite)
    let clock = ContinuousClock()
    let start = clock.now
    let error = #expect(throws: SQLiteError.self) {
      try waiter.writeTransaction(deadline: .now + .milliseconds(300)) {
        try waiter.execute("INSERT INTO t VALUES (1)")
      }
    }
    let waited = clock.now - start
    #expect(error?.isBusy == true)
    #expect(waited >= .milliseconds(290))
    #expect(waited < .seconds(3))
    try holder.execute("ROLLBACK")
  }

  /// The busy handler (`BusyWait`) retries until the connection's busy timeout, and not at
  /// all with a timeout of zero.
  @Test func theBusyHandlerWaitsForTheTimeoutOfItsConnection() throws {
    let (path, holder) = try lockedStore("busy-handler")
    let waiter = try SQLiteConnection(path: path, mode: .readWrite)
    let clock = ContinuousClock()
    for (timeout, least) in [(Duration.zero, Duration.zero), (.milliseconds(200), .milliseconds(195))] {
      waiter.setBusyTimeout(timeout)
      let start = clock.now
      let error = #expect(throws: SQLiteError.self) { try waiter.execute("BEGIN IMMEDIATE") }
      #expect(error?.isBusy == true)
      #expect(clock.now - start >= least)
      #expect(clock.now - start < least + .seconds(2))
    }
    try holder.execute("ROLLBACK")
    try waiter.execute("BEGIN IMMEDIATE")  // free again: at once
    try waiter.execute("ROLLBACK")
  }

  @Test func writeSucceedsWhenTheLockIsReleasedBeforeTheDeadline() async throws {
    let path = try freshPath("released")
    do {
      let setup = try SQLiteConnection(path: path, mode: .readWriteCreate)
      try setup.configure(enableWAL: true)
      try setup.execute("CREATE TABLE t (x)")
    }
    // The lock is held and released by a thread of its own: this test blocks its own thread
    // while it waits, and a task could wait for a free thread of the pool other tests keep busy.
    let locked = DispatchSemaphore(value: 0)
    let released = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      let holder = try? SQLiteConnection(path: path, mode: .readWrite)
      try? holder?.execute("BEGIN IMMEDIATE")
      locked.signal()
      Thread.sleep(forTimeInterval: 0.15)
      try? holder?.execute("COMMIT")
      released.signal()
    }
    locked.wait()
    let waiter = try SQLiteConnection(path: path, mode: .readWrite)
    try waiter.writeTransaction(deadline: .now + .seconds(5)) { try waiter.execute("INSERT INTO t VALUES (1)") }
    released.wait()
    #expect(try waiter.scalarInt("SELECT count(*) FROM t") == 1)
  }

  @Test func failedTransactionRollsBack() throws {
    let path = try freshPath("rollback")
    let connection = try SQLiteConnection(path: path, mode: .readWriteCreate)
    try connection.execute("CREATE TABLE t (x UNIQUE)")
    #expect(throws: SQLiteError.self) {
      try connection.writeTransaction(deadline: .now + .seconds(1)) {
        try connection.execute("INSERT INTO t VALUES (1)")
        try connection.execute("INSERT INTO t VALUES (1)")
      }
    }
    #expect(!connection.isInTransaction)
    #expect(try connection.scalarInt("SELECT count(*) FROM t") == 0)
  }

  @Test func errorsCarryCodesMessageAndSQL() throws {
    let connection = try SQLiteConnection(path: try freshPath("errors"), mode: .readWriteCreate)
    let error = #expect(throws: SQLiteError.self) { try connection.statement("SELECT * FROM missing") }
    #expect(error?.code == 1)
    #expect(error?.message.contains("no such table") == true)
    #expect(error?.sql == "SELECT * FROM missing")
  }

  @Test func checkpointRunsInAWriterLockingModeAndEmptiesTheWAL() throws {
    let path = try freshPath("checkpoint")
    let connection = try SQLiteConnection(path: path, mode: .readWriteCreate)
    try connection.configure(enableWAL: true)
    try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(10000));")
    #expect(connection.walPages > 0)
    let result = try connection.checkpoint(.truncate)
    #expect(result.log == 0)
    let attributes = try FileManager.default.attributesOfItem(atPath: path + "-wal")
    #expect(attributes[.size] as? Int == 0)
  }
}
