import Foundation
import Synchronization
@_spi(Benchmarks) import TypedStore

/// Follows a PostgreSQL store's history from a connection of its own, as a process on another
/// host does: what the remote-change monitor does for a store file, with the server's
/// notifications as the wake-ups.
///
/// - One connection, in autocommit, listening on the store's channel (`PostgreSQLHistory`
///   notifies each transaction's number with its commit, in commit order).
/// - On every (re)connect: `LISTEN` first, then read the history after the position, so that
///   nothing committed between the two is missed; then read again after each notification,
///   and at least once per `pollInterval` (the backstop, should a notification be lost).
/// - History is the truth, read through the store's shared reader (`HistoryReader`) in pages:
///   each transaction is delivered once, in commit order, whatever the notifications said.
/// - A lost connection or a server restart is reported once (`Event.disconnected`), tried
///   again every `retryInterval`, and followed by `Event.reconnected` and the transactions
///   committed meanwhile.
package final class PostgreSQLChangeListener: Sendable {
  /// What the listener reports, in order, on its own thread.
  package enum Event: Sendable {
    /// Transactions committed after the last delivered, in commit order.
    case transactions([HistoryTransaction])
    /// The connection was lost or could not be made; the listener tries again.
    case disconnected(PostgreSQLError)
    /// Connected again, listening; the transactions missed follow.
    case reconnected
    /// History after the position was deleted before it was read: reading goes on after
    /// `horizon`.
    case expired(HistoryToken)
    /// The history could not be read (not for a lost connection): the listener tries again
    /// after a pause.
    case failed(String)
    /// Another process migrated the store to another model: the listener has stopped.
    case modelChanged(StoreError)
  }

  private struct State {
    var running = false
    /// nil until the first read takes the newest transaction (`takePosition`).
    var position: Int64?
    /// Whether a thread follows (until `stop()` has seen it end).
    var following = false
    /// Whether `wake()` asked for a read since the last one.
    var woken = false
  }

  private let url: String
  private let history: PostgreSQLHistory
  private let storeIdentifier: UUID
  private let model: ManagedObjectModel
  private let pollInterval: Duration
  private let retryInterval: Duration
  private let deliver: @Sendable (Event) -> Void
  private let takePosition: @Sendable (Int64) -> Int64
  private let state: Mutex<State>

  /// A listener of the store in `schema` on the server at `url`, delivering what commits
  /// after transaction `after`; when it is nil, after the newest when the listener first reads,
  /// which it hands to `takePosition` and goes on after what that returns.
  package init(
    url: String, schema: String, storeIdentifier: UUID, model: ManagedObjectModel, after: Int64?,
    pollInterval: Duration = .seconds(1), retryInterval: Duration = .milliseconds(200),
    takePosition: @escaping @Sendable (Int64) -> Int64 = { $0 },
    deliver: @escaping @Sendable (Event) -> Void
  ) throws(PostgreSQLError) {
    self.takePosition = takePosition
    self.url = url
    self.history = try PostgreSQLHistory(schema: schema)
    self.storeIdentifier = storeIdentifier
    self.model = model
    self.pollInterval = pollInterval
    self.retryInterval = retryInterval
    self.deliver = deliver
    self.state = Mutex(State(position: after))
  }

  /// The number of the last transaction delivered (nil before the first read took one).
  package var position: Int64? { state.withLock { $0.position } }

  /// Whether the thread follows the store (until it stopped, or failed).
  package var isFollowing: Bool { state.withLock { $0.running } }

  /// Asks the thread to read history now, rather than at its next notification or poll.
  package func wake() { state.withLock { $0.woken = true } }

  /// Asks the thread to stop, without waiting for it to end (`stop()` waits).
  package func requestStop() { state.withLock { $0.running = false } }

  /// Starts following on a thread of its own; after a `stop()` (or a failure) whose thread is
  /// still ending, once it has ended. Nothing happens while it follows already.
  package func start() {
    while true {
      let running = state.withLock { state -> Bool? in
        if state.following { return state.running ? true : nil }  // nil: still ending
        state.running = true
        state.following = true
        return false
      }
      if running == true { return }
      if running == false { break }
      Thread.sleep(forTimeInterval: 0.005)
    }
    Thread { [self] in
      follow()
      state.withLock { $0.following = false }
    }.start()
  }

  /// Stops following, and returns once the thread has ended: within a tenth of a second, or,
  /// while it connects to a server that does not answer, the connection's timeout (10 seconds
  /// unless the URL says otherwise). Not from `deliver`, which runs on that thread.
  package func stop() {
    state.withLock { $0.running = false }
    while state.withLock({ $0.following }) { Thread.sleep(forTimeInterval: 0.005) }
  }

  private var isRunning: Bool { state.withLock { $0.running } }

  private func follow() {
    var down = false
    var failures = 0
    while isRunning {
      do {
        let connection = try PostgreSQLConnection(url: url)
        try connection.use(schema: history.schema)
        connection.expectedModel = PostgreSQLConnection.ExpectedModel(hash: model.versionHash) { _ in }
        try connection.listen(history.channel)  // first: a commit after it notifies
        if down {
          down = false
          deliver(.reconnected)
        }
        try listen(on: connection)
      } catch let error as PostgreSQLError where error.kind == .connection {
        if !down {
          down = true
          deliver(.disconnected(error))
        }
        let retry = ContinuousClock.now + retryInterval
        while isRunning && ContinuousClock.now < retry { Thread.sleep(forTimeInterval: 0.005) }
      } catch let error as StoreError where error.isModelChanged {
        // The store now has another model: nothing more this process can read (as the store
        // file's monitor ends).
        state.withLock { $0.running = false }
        deliver(.modelChanged(error))
      } catch {
        // Another failure (a statement timeout, a read the server refused): reported, and tried
        // again after a pause that grows to 5 s, as the store file's monitor does, so that the
        // publisher, which holds local commits back for the remote ones before them, goes on.
        failures += 1
        deliver(.failed("\(error)"))
        let pause = min(retryInterval * (1 << min(failures, 5)), .seconds(5))
        let retry = ContinuousClock.now + pause
        while isRunning && ContinuousClock.now < retry { Thread.sleep(forTimeInterval: 0.005) }
      }
    }
  }

  /// Reads what was missed, then waits for notifications (at most a tenth of a second at a
  /// time, to see a stop) and reads after each, until stopped or the connection fails.
  private func listen(on connection: PostgreSQLConnection) throws {
    try catchUp(on: connection)
    var lastRead = ContinuousClock.now
    while isRunning {
      let notified = try connection.notifications(waitingUpTo: .milliseconds(100))
      let woken = state.withLock { state in
        defer { state.woken = false }
        return state.woken
      }
      if woken || !notified.isEmpty || ContinuousClock.now - lastRead >= pollInterval {
        try catchUp(on: connection)
        lastRead = .now
      }
    }
  }

  /// Delivers every transaction after the position, a page at a time; history deleted before
  /// it was read is reported, and reading goes on after it.
  private func catchUp(on connection: PostgreSQLConnection) throws {
    while isRunning {
      guard let after = position else {
        let newest = takePosition(try HistoryReader.currentNumber(connection))
        // `Int64.max`: nobody listens yet to take the position for; taken at the next read.
        guard newest != Int64.max else { return }
        state.withLock { $0.position = $0.position ?? newest }
        continue
      }
      var request = HistoryRequest(after: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: after))
      request.transactionLimit = 1000
      let page: [HistoryTransaction]
      do {
        page = try HistoryReader.fetch(request, storeIdentifier: storeIdentifier, model: model, connection: connection)
      } catch HistoryError.tokenExpired(let horizon) {
        state.withLock { $0.position = horizon.transactionNumber }
        deliver(.expired(horizon))
        continue
      }
      guard let last = page.last else { return }
      state.withLock { $0.position = last.transactionNumber }
      deliver(.transactions(page))
      if page.count < 1000 { return }
    }
  }
}

/// The PostgreSQL engine's `ChangeFollower`: a listener whose transactions and expiries go
/// to the store's change publisher (connection losses are the contexts' to report, as their
/// reads and saves fail).
final class PostgreSQLChangeFollower: ChangeFollower {
  let listener: PostgreSQLChangeListener

  init(listener: PostgreSQLChangeListener) {
    self.listener = listener
  }

  static func deliver(_ event: PostgreSQLChangeListener.Event, to deliver: (RemoteChangeEvent) -> Void) {
    switch event {
    case .transactions(let transactions):
      let now = RemoteChangeTimings.now()
      deliver(.transactions(transactions, RemoteChangeTimings(woke: now, noticed: now, read: now)))
    case .expired(let horizon): deliver(.expired(horizon: horizon))
    case .modelChanged(let error): deliver(.modelChanged(error))
    case .disconnected, .reconnected, .failed: break
    }
  }

  func wake() { listener.wake() }
  func stop() { listener.requestStop() }
  var isFollowing: Bool { listener.isFollowing }
}

extension StoreError {
  /// Whether it is `.modelChanged`: another process migrated the store.
  fileprivate var isModelChanged: Bool {
    if case .modelChanged = self { return true }
    return false
  }
}
