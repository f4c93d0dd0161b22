import Foundation
import Glibc
import Synchronization

/// Notices commits of other processes to a store and reads their history.
///
/// One thread per monitored store waits on three things at once:
/// - inotify on the store's folder, for writes to the store file or its `-wal`: the wake-up
///   hint (a folder watch survives the `-wal` being deleted and made again);
/// - a pipe, for a request to look now (`wake()`, when a local commit finds earlier remote
///   ones not yet published);
/// - a timeout, the slow poll that is the backstop where inotify is missing or misses.
///
/// After each wake-up, `PRAGMA data_version` on the monitor's own read connection is the
/// truth: it changes only when another connection committed. The last frame of a commit is
/// written before SQLite makes the commit visible in the WAL index (memory, which inotify does
/// not see), so after a wake-up the monitor looks again after 10 µs, 20, 40, ... up to 1 ms
/// apart, for 5 ms after the last event (`look`). When something changed, the history after the publisher's position is read, 1,000
/// transactions at a time, and delivered in order. A read that finds the store migrated to
/// another model (`StoreError.modelChanged`) ends the thread: there is nothing more this
/// process can read.
final class RemoteChangeMonitor: ChangeFollower {
  /// What the monitor found.
  typealias Event = RemoteChangeEvent

  private let store: PersistentStore
  private let pollInterval: Duration
  /// The publisher's position: the last transaction published; nil when it could not be read
  /// as listening started.
  private let position: @Sendable () -> Int64?
  /// Gives the publisher the store's newest transaction as its position, when it has none yet;
  /// returns the position.
  private let takePosition: @Sendable (Int64) -> Int64
  private let deliver: @Sendable (Event) -> Void
  private let isRunning = Atomic<Bool>(true)
  private let wakeRead: Int32
  private let wakeWrite: Int32

  /// Starts monitoring `store`: `position` says after which transaction to read (the last
  /// one published), `deliver` receives what was read, on the monitor's thread.
  init(
    store: PersistentStore, pollInterval: Duration, position: @escaping @Sendable () -> Int64?,
    takePosition: @escaping @Sendable (Int64) -> Int64,
    deliver: @escaping @Sendable (Event) -> Void
  ) {
    self.store = store
    self.pollInterval = pollInterval
    self.position = position
    self.takePosition = takePosition
    self.deliver = deliver
    var fds: [Int32] = [-1, -1]
    if pipe(&fds) == 0 {
      for fd in fds {
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      }
    } else {
      fds = [-1, -1]
    }
    wakeRead = fds[0]
    wakeWrite = fds[1]
    let monitor = self
    let thread = Thread { monitor.run() }
    thread.name = "TypedStore.remoteChanges"
    thread.start()
  }

  /// Whether the thread still follows the store: false once stopped, or once it found the
  /// store migrated to another model.
  var isFollowing: Bool { isRunning.load(ordering: .acquiring) }

  /// Asks the monitor to read history now.
  func wake() {
    var byte: UInt8 = 1
    _ = write(wakeWrite, &byte, 1)
  }

  /// Stops the thread (it ends at its next wake-up, which this causes).
  func stop() {
    isRunning.store(false, ordering: .releasing)
    wake()
  }

  // MARK: - The thread

  /// The pipe is closed here, not when the thread ends: a thread that ended by itself (the
  /// store was migrated) may still be woken or stopped by its publisher, and a byte written to
  /// a closed descriptor could land in a file that reused its number.
  deinit {
    close(wakeRead)
    close(wakeWrite)
  }

  private func run() {
    ShortTimer.makeThisThreadsTimersPrecise()  // see `look`
    // A connection that cannot be opened now (a transient error) is tried again at each
    // poll: a monitor that gave up would leave its listeners without remote commits for good.
    guard let connection = openConnection() else { return }
    var watch = Watch(store: store, wakeRead: wakeRead)
    defer { watch.close() }
    var version = (try? connection.dataVersion()) ?? 0
    // What was committed before the thread started; a failed read is retried at the poll.
    let now = RemoteChangeTimings.now()
    if !readHistory(connection, woke: now, noticed: now) { version = -1 }
    let clock = ContinuousClock()
    var nextPoll = clock.now.advanced(by: pollInterval)
    while isRunning.load(ordering: .acquiring) {
      let timeout = Int32(clamping: max(1, clock.now.duration(to: nextPoll).inMilliseconds))
      let wakeup = watch.wait(milliseconds: timeout, orTimer: false)
      guard isRunning.load(ordering: .acquiring) else { break }
      // The slow poll looks once per interval, however often other files in the folder wake
      // the thread: events about them must not put off the look that retries a failed read.
      let pollDue = wakeup.timedOut || clock.now >= nextPoll
      if pollDue { nextPoll = clock.now.advanced(by: pollInterval) }
      guard wakeup.asked || wakeup.hinted || pollDue else { continue }
      version = look(connection, &watch, version: version, asked: wakeup.asked, hinted: wakeup.hinted)
    }
  }

  /// How long after the last hint `look` goes on looking; its first and longest wait between
  /// looks; and the quiet before a hint that starts the waits again at the first, in
  /// nanoseconds.
  private static let (lookWindow, firstWait, longestWait, quietGap): (UInt64, UInt64, UInt64, UInt64) = (
    5_000_000, 10_000, 1_000_000, 500_000
  )

  /// Looks for commits after a wake-up, reads and delivers their history, and returns the
  /// `data_version` it read last (-1 when a read failed: a transient SQLite error, retried at
  /// the next wake-up or poll, which must not take the store as unchanged).
  ///
  /// A commit's frames are written, and wake inotify, before the commit becomes visible in
  /// the WAL index (memory, which inotify does not see). So after a hint `data_version` is
  /// read again after 10 µs, 20, 40, ... up to 1 ms apart, until 5 ms have passed since the
  /// last hint, also after a commit was read: a hint drained meanwhile may belong to the next
  /// commit, which no later event announces. A hint after a quiet half millisecond starts the
  /// waits again at 10 µs; while hints keep coming (a large transaction, a checkpoint) they do
  /// not, and inotify is left unwatched until the wait ends, so a stream of events costs at
  /// most one look a millisecond. No fixed sleep stands between a commit and its merge.
  private func look(
    _ connection: SQLiteConnection, _ watch: inout Watch, version: Int64, asked: Bool, hinted: Bool
  ) -> Int64 {
    var (version, asked, wait) = (version, asked, Self.firstWait)
    var lastHint = RemoteChangeTimings.now()
    while true {
      let current = (try? connection.dataVersion()) ?? version
      if current != version || asked {
        let noticed = RemoteChangeTimings.now()
        guard readHistory(connection, woke: lastHint, noticed: noticed) else { return -1 }
        (version, asked) = (current, false)
      }
      // The poll or a request, not a hint: no commit to wait for.
      guard hinted, RemoteChangeTimings.now() - lastHint < Self.lookWindow else { return version }
      watch.timer.arm(nanoseconds: wait)
      let quiet = RemoteChangeTimings.now() - lastHint >= Self.quietGap
      // A bounded poll as well: were the timer not to fire, the look would still end.
      var wakeup = watch.wait(milliseconds: 2, orTimer: true, orInotify: quiet)
      if !quiet { wakeup.hinted = watch.drainInotify() }
      guard isRunning.load(ordering: .acquiring) else { return version }
      asked = asked || wakeup.asked
      wait = wakeup.hinted && quiet ? Self.firstWait : min(wait * 2, Self.longestWait)
      if wakeup.hinted { lastHint = RemoteChangeTimings.now() }
    }
  }

  /// What the monitor's thread waits on: the wake-up pipe, inotify on the store's folder, and
  /// its short timer.
  private struct Watch {
    /// What one wait brought.
    struct Wakeup {
      /// A request to read now (`wake()`).
      var asked = false
      /// An inotify event that names the store's file or its `-wal`.
      var hinted = false
      /// Nothing came within the timeout.
      var timedOut = false
    }

    let wakeRead: Int32
    let inotify: Int32
    let names: Set<String>
    let timer = ShortTimer()
    var buffer = [UInt8](repeating: 0, count: 4096)

    init(store: PersistentStore, wakeRead: Int32) {
      self.wakeRead = wakeRead
      // The files SQLite writes: beside the link's target when the store was opened by a link.
      let file = URL(fileURLWithPath: store.filePath)
      let folder = file.deletingLastPathComponent().path
      names = [file.lastPathComponent, file.lastPathComponent + "-wal"]
      inotify = store.options.remoteChangeUsesInotify ? inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) : -1
      if inotify >= 0 { _ = inotify_add_watch(inotify, folder, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO)) }
    }

    /// Closes inotify; the pipe is the monitor's, the timer closes itself.
    func close() {
      if inotify >= 0 { _ = Glibc.close(inotify) }
    }

    /// Waits up to `milliseconds` (-1: no limit) for the pipe, inotify and, with `orTimer`,
    /// the timer, and drains what came.
    mutating func wait(milliseconds: Int32, orTimer: Bool, orInotify: Bool = true) -> Wakeup {
      var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
      let watchesInotify = orInotify && inotify >= 0
      if watchesInotify { fds.append(pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)) }
      if orTimer && timer.descriptor >= 0 {
        fds.append(pollfd(fd: timer.descriptor, events: Int16(POLLIN), revents: 0))
      }
      var wakeup = Wakeup()
      wakeup.timedOut = poll(&fds, nfds_t(fds.count), milliseconds) == 0
      if fds[0].revents != 0 {
        while read(wakeRead, &buffer, buffer.count) > 0 { wakeup.asked = true }
      }
      if watchesInotify, fds[1].revents != 0 { wakeup.hinted = drainInotify() }
      return wakeup
    }

    /// Reads every pending inotify event; returns whether one names the store's files.
    mutating func drainInotify() -> Bool {
      guard inotify >= 0 else { return false }
      var hinted = false
      while true {
        let count = read(inotify, &buffer, buffer.count)
        guard count > 0 else { break }
        if !hinted { hinted = RemoteChangeMonitor.namesAny(of: names, in: buffer, count: count) }
      }
      return hinted
    }
  }

  /// The monitor's read connection, retried once per poll interval until it opens; nil when
  /// the monitor is stopped first.
  private func openConnection() -> SQLiteConnection? {
    let path = store.url.path
    while isRunning.load(ordering: .acquiring) {
      let injected = FaultInjection.take(FaultInjection.monitorOpens, path: path)
      if !injected, let connection = try? store.makeReadConnection() { return connection }
      var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
      if poll(&fds, 1, Int32(clamping: max(1, pollInterval.inMilliseconds))) > 0 {
        // A wake-up (to stop, or to read now): drained, or the next poll would not wait. The
        // first read after the open reads everything anyway.
        var byte: UInt8 = 0
        while read(wakeRead, &byte, 1) > 0 {}
      }
    }
    return nil
  }

  /// Reads the history after the publisher's position and delivers it, page by page; false
  /// when a read failed before the end.
  private func readHistory(_ connection: SQLiteConnection, woke: UInt64, noticed: UInt64) -> Bool {
    while true {
      do {
        let after = try position() ?? takePosition(HistoryReader.currentNumber(connection))
        var request = HistoryRequest(
          after: HistoryToken(storeIdentifier: store.identifier, transactionNumber: after))
        request.transactionLimit = 1000
        let path = store.url.path
        let injected = FaultInjection.take(FaultInjection.monitorReads, path: path)
        if injected { throw SQLiteError.busy("database is locked (injected by a test)") }
        let transactions = try HistoryReader.fetch(
          request, storeIdentifier: store.identifier, model: store.model, connection: connection)
        guard !transactions.isEmpty else { return true }
        deliver(.transactions(transactions, .init(woke: woke, noticed: noticed, read: RemoteChangeTimings.now())))
        if transactions.count < 1000 { return true }
      } catch HistoryError.tokenExpired(let horizon) {
        deliver(.expired(horizon: horizon))
      } catch let error as StoreError {
        // Another process migrated the store: nothing of it can be read with this model any
        // more, so the monitor stops (the store's `ModelStamp` tells the publisher).
        if case .modelChanged = error { isRunning.store(false, ordering: .releasing) }
        return false
      } catch {
        return false
      }
    }
  }

  /// Whether any inotify event in the buffer names one of `names`.
  private static func namesAny(of names: Set<String>, in buffer: [UInt8], count: Int) -> Bool {
    let headerSize = MemoryLayout<inotify_event>.size
    var offset = 0
    while offset + headerSize <= count {
      let length = buffer.withUnsafeBytes {
        Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))  // inotify_event.len
      }
      let start = offset + headerSize
      let end = min(count, start + length)
      let name = String(decoding: buffer[start..<end].prefix { $0 != 0 }, as: UTF8.self)
      if names.contains(name) { return true }
      offset = start + length
    }
    return false
  }
}
