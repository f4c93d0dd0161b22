import Foundation
import Synchronization
import TypedStore

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
    /// The history could not be read (it was pruned past the position, say): the listener
    /// stopped.
    case failed(String)
  }

  private struct State {
    var running = false
    var position: Int64
    /// Whether a thread follows (until `stop()` has seen it end).
    var following = false
  }

  private let url: String
  private let history: PostgreSQLHistory
  private let storeIdentifier: UUID
  private let model: ManagedObjectModel
  private let pollInterval: Duration
  private let retryInterval: Duration
  private let deliver: @Sendable (Event) -> Void
  private let state: Mutex<State>

  /// A listener of the store in `schema` on the server at `url`, delivering what commits
  /// after transaction `after`.
  package init(
    url: String, schema: String, storeIdentifier: UUID, model: ManagedObjectModel, after: Int64,
    pollInterval: Duration = .seconds(1), retryInterval: Duration = .milliseconds(200),
    deliver: @escaping @Sendable (Event) -> Void
  ) throws(PostgreSQLError) {
    self.url = url
    self.history = try PostgreSQLHistory(schema: schema)
    self.storeIdentifier = storeIdentifier
    self.model = model
    self.pollInterval = pollInterval
    self.retryInterval = retryInterval
    self.deliver = deliver
    self.state = Mutex(State(position: after))
  }

  /// The number of the last transaction delivered.
  package var position: Int64 { state.withLock { $0.position } }

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
    while isRunning {
      do {
        let connection = try PostgreSQLConnection(url: url)
        try connection.use(schema: history.schema)
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
      } catch {
        state.withLock { $0.running = false }
        deliver(.failed("\(error)"))
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
      if !notified.isEmpty || ContinuousClock.now - lastRead >= pollInterval {
        try catchUp(on: connection)
        lastRead = .now
      }
    }
  }

  /// Delivers every transaction after the position, a page at a time.
  private func catchUp(on connection: PostgreSQLConnection) throws {
    while isRunning {
      let after = position
      var request = HistoryRequest(after: HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: after))
      request.transactionLimit = 1000
      let page = try HistoryReader.fetch(
        request, storeIdentifier: storeIdentifier, model: model, connection: connection)
      guard let last = page.last else { return }
      state.withLock { $0.position = last.transactionNumber }
      deliver(.transactions(page))
      if page.count < 1000 { return }
    }
  }
}
