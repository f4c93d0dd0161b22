import Foundation

/// A durable consumer of a store's history, as its checkpoint row in the store says: how far
/// it has read, when it last moved on, and how long it may stay silent before it counts as
/// stale.
///
/// ```swift
/// for consumer in try container.persistentStore.historyConsumers() where consumer.isStale() {
///   print("\(consumer.name) has not been seen since \(consumer.seenAt)")
/// }
/// ```
public struct HistoryConsumer: Sendable, Equatable {
  /// The consumer's name, unique in the store.
  public let name: String
  /// The last transaction the consumer processed: history after it is what it has not read.
  public let checkpoint: HistoryToken
  /// When the checkpoint last moved.
  public let advancedAt: Date
  /// When the consumer last wrote its row (it does at least every quarter of its lease while
  /// it runs, even with nothing new to read).
  public let seenAt: Date
  /// How long the consumer may go unseen before it is stale.
  public let lease: Duration
  /// The error that stopped the consumer, as its merger recorded it; nil once it processed
  /// a transaction after it (or never failed).
  public var failure: Failure? = nil

  /// Where a consumer declared ahead of its first run starts
  /// (`PersistentStore.registerHistoryConsumer(name:startingAt:lease:)`).
  public enum Start: Sendable, Equatable {
    /// After the newest transaction committed now.
    case now
    /// Before the first transaction: every transaction is the consumer's to read. When
    /// history was deleted already, there is no such start (`HistoryError.tokenExpired`):
    /// declare it `.after(store.historyHorizon())` to take what is kept.
    case beginning
    /// After this transaction.
    case after(HistoryToken)
  }

  /// What stopped a consumer: the error's description and the transaction it stopped at.
  public struct Failure: Sendable, Equatable, Codable {
    /// The error, as `String(describing:)` gives it.
    public let message: String
    /// The transaction the consumer stopped at (not processed).
    public let transactionNumber: Int64
    /// When the merger recorded it.
    public let date: Date
  }

  /// Where a consumer stands, as any process can tell from the store.
  public enum State: Sendable, Equatable {
    /// It has processed the newest transaction.
    case upToDate
    /// It has this many transactions left to process.
    case behind(transactions: Int64)
    /// It has not been seen within its lease: it may be gone (the pruner reports it).
    case stale
    /// History it had not read was deleted: it cannot go on from its checkpoint
    /// (`HistoryError.tokenExpired` when it starts, unless it refreshes).
    case expired
    /// Its merger stopped with an error, and has not processed a transaction since.
    case failing(Failure)
  }

  /// Whether the consumer has not been seen within its lease: it may be gone. The pruner
  /// reports stale consumers and deletes history they have not read only when told to.
  public func isStale(at now: Date = Date()) -> Bool {
    now.timeIntervalSince(seenAt) > lease.inSeconds
  }

  /// Where the consumer stands: expired, failing, stale, behind or up to date (the first that
  /// holds, in that order), given the store's newest transaction and its horizon.
  ///
  /// ```swift
  /// let (newest, horizon) = (try store.currentHistoryToken(), try store.historyHorizon())
  /// for consumer in try store.historyConsumers() {
  ///   if case .failing(let failure) = consumer.state(newest: newest, horizon: horizon) {
  ///     print("\(consumer.name) stopped at \(failure.transactionNumber): \(failure.message)")
  ///   }
  /// }
  /// ```
  public func state(newest: HistoryToken, horizon: HistoryToken, at now: Date = Date()) -> State {
    if checkpoint.transactionNumber < horizon.transactionNumber { return .expired }
    if let failure { return .failing(failure) }
    if isStale(at: now) { return .stale }
    let behind = newest.transactionNumber - checkpoint.transactionNumber
    return behind > 0 ? .behind(transactions: behind) : .upToDate
  }
}

/// A consumer's checkpoint to write inside a transaction of other writes: the effects a
/// consumer saved for a transaction and its checkpoint past it commit together, or neither.
struct ConsumerCheckpoint: Sendable, Equatable {
  let name: String
  /// The first transaction the effects are for (the batch's first, or the one transaction).
  let first: Int64
  /// Where the checkpoint moves: the last transaction the effects are for.
  let number: Int64
  let lease: Duration
}

/// The consumers' table (part of the documented file format): one row per consumer, written
/// without history of its own.
enum HistoryConsumers {
  static let createSQL = """
    CREATE TABLE IF NOT EXISTS _history_consumer (
      name TEXT PRIMARY KEY,
      store_uuid TEXT NOT NULL,
      transaction_number INTEGER NOT NULL,
      advanced_at REAL NOT NULL,
      seen_at REAL NOT NULL,
      lease_seconds REAL NOT NULL
    )
    """

  /// Every consumer, by name; none when the table does not exist (a store no consumer used).
  static func all<Connection: DatabaseConnection>(storeIdentifier: UUID, connection: Connection) throws
    -> [HistoryConsumer]
  {
    guard try connection.tableExists("_history_consumer") else { return [] }
    let statement = try connection.statement(
      "SELECT name, store_uuid, transaction_number, advanced_at, seen_at, lease_seconds "
        + "FROM _history_consumer ORDER BY name"
    )
    defer { statement.reset() }
    var consumers: [HistoryConsumer] = []
    while try statement.step() {
      let stored = UUID(uuidString: statement.string(1)) ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
      consumers.append(
        HistoryConsumer(
          name: statement.string(0),
          checkpoint: HistoryToken(storeIdentifier: stored, transactionNumber: statement.int64(2)),
          advancedAt: Date(timeIntervalSinceReferenceDate: statement.double(3)),
          seenAt: Date(timeIntervalSinceReferenceDate: statement.double(4)),
          lease: .milliseconds(Int64(statement.double(5) * 1000))))
    }
    let failures = try self.failures(connection)
    return consumers.map { consumer in
      var consumer = consumer
      consumer.failure = failures[consumer.name]
      return consumer
    }
  }

  /// The `_metadata` key of a consumer's recorded failure (a JSON `HistoryConsumer.Failure`):
  /// kept there, not in a column, so that stores of format version 3 hold it as they are.
  static func failureKey(_ name: String) -> String { "consumer_failure." + name }

  private static func failures<Connection: DatabaseConnection>(_ connection: Connection) throws
    -> [String: HistoryConsumer.Failure]
  {
    // A prefix compared as such, not as a range: PostgreSQL orders text by the database's
    // collation, where '.' and '/' may not be neighbours.
    let statement = try connection.statement(
      "SELECT substr(key, 18), value FROM _metadata WHERE substr(key, 1, 17) = 'consumer_failure.'")
    defer { statement.reset() }
    var failures: [String: HistoryConsumer.Failure] = [:]
    while try statement.step() {
      let failure = try? JSONDecoder().decode(HistoryConsumer.Failure.self, from: Data(statement.string(1).utf8))
      failures[statement.string(0)] = failure
    }
    return failures
  }

  /// Records what stopped a consumer, in a write transaction.
  static func recordFailure<Connection: DatabaseConnection>(
    _ failure: HistoryConsumer.Failure, name: String, connection: Connection
  ) throws {
    let statement = try connection.statement(
      "INSERT INTO _metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    defer { statement.reset() }
    try statement.bind(failureKey(name), at: 1)
    try statement.bind(String(decoding: try JSONEncoder().encode(failure), as: UTF8.self), at: 2)
    try statement.run()
  }

  /// Forgets a consumer's recorded failure, in a write transaction.
  static func clearFailure<Connection: DatabaseConnection>(name: String, connection: Connection) throws {
    let statement = try connection.statement("DELETE FROM _metadata WHERE key = ?")
    defer { statement.reset() }
    try statement.bind(failureKey(name), at: 1)
    try statement.run()
  }

  /// Writes a consumer's row; inside a write transaction. `advanced` says whether the
  /// checkpoint moved (otherwise only `seen_at` changes for an existing row).
  static func write<Connection: DatabaseConnection>(
    name: String, storeIdentifier: UUID, number: Int64, lease: Duration, advanced: Bool, connection: Connection
  ) throws {
    // A store file made before its first consumer has no table yet; a PostgreSQL store's is
    // made with the store.
    if connection.dialect == .sqlite { try connection.execute(script: createSQL) }
    let now = Date().timeIntervalSinceReferenceDate
    let statement = try connection.statement(
      """
      INSERT INTO _history_consumer (name, store_uuid, transaction_number, advanced_at, seen_at, lease_seconds)
      VALUES (?1, ?2, ?3, ?4, ?4, ?5)
      ON CONFLICT (name) DO UPDATE SET store_uuid = ?2, transaction_number = ?3, seen_at = ?4, lease_seconds = ?5,
        advanced_at = CASE WHEN ?6 THEN ?4 ELSE _history_consumer.advanced_at END
      """)
    defer { statement.reset() }
    try statement.bind(name, at: 1)
    try statement.bind(storeIdentifier.uuidString, at: 2)
    try statement.bind(number, at: 3)
    try statement.bind(now, at: 4)
    try statement.bind(lease.inSeconds, at: 5)
    try statement.bind(Int64(advanced ? 1 : 0), at: 6)
    try statement.run()
    if advanced { try clearFailure(name: name, connection: connection) }  // it went on past it
  }

  /// Moves an existing consumer's checkpoint to `number`, inside the write transaction of the
  /// effects it saved for the transactions `first...number`: only from before `first`, so that
  /// two mergers of one name (in two processes, say, reading batches that end in different
  /// places) cannot both save effects for one transaction.
  ///
  /// - Throws: `HistoryError.consumerMovedOn` when the checkpoint is already at or past
  ///   `first`, or the consumer is gone; the caller's transaction is rolled back.
  static func advance<Connection: DatabaseConnection>(
    name: String, from first: Int64, to number: Int64, lease: Duration, connection: Connection
  ) throws {
    let statement = try connection.statement(
      "UPDATE _history_consumer SET transaction_number = ?1, advanced_at = ?2, seen_at = ?2, lease_seconds = ?3 "
        + "WHERE name = ?4 AND transaction_number < ?5")
    defer { statement.reset() }
    try statement.bind(number, at: 1)
    try statement.bind(Date().timeIntervalSinceReferenceDate, at: 2)
    try statement.bind(lease.inSeconds, at: 3)
    try statement.bind(name, at: 4)
    try statement.bind(first, at: 5)
    try statement.run()
    guard connection.changes == 1 else { throw HistoryError.consumerMovedOn(consumer: name, transactionNumber: first) }
    try clearFailure(name: name, connection: connection)
  }

  /// Deletes a consumer's row; returns whether there was one.
  static func remove<Connection: DatabaseConnection>(name: String, connection: Connection) throws -> Bool {
    guard try connection.tableExists("_history_consumer") else { return false }
    let statement = try connection.statement("DELETE FROM _history_consumer WHERE name = ?")
    defer { statement.reset() }
    try statement.bind(name, at: 1)
    try statement.run()
    let removed = connection.changes > 0
    try clearFailure(name: name, connection: connection)
    return removed
  }
}
