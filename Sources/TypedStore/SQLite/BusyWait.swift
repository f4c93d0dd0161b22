import CSQLite
import Foundation

/// How a connection waits for a lock another connection holds: SQLite's busy handler,
/// replaced.
///
/// SQLite's own (`sqlite3_busy_timeout`) sleeps 1, 2, 5, 10, 15, 20, 25 ms and so on between
/// tries. A save holds the write lock for tens of microseconds, so with many writer processes
/// the waiters slept through most of the time the lock was free: 16 writers committed a third
/// as much as one. This one tries again after 20 µs, doubling up to 1 ms, each sleep jittered
/// between half and all of it so that waiters spread out, until the timeout.
final class BusyWait {
  /// How long one wait may last in all.
  var timeout: Duration
  /// When the current wait began (SQLite's first call for it).
  private var started = ContinuousClock.now
  private var generator = SystemRandomNumberGenerator()

  init(timeout: Duration) {
    self.timeout = timeout
  }

  /// Installs `self` as `handle`'s busy handler; the connection keeps `self` alive.
  func install(on handle: OpaquePointer) {
    sqlite3_busy_handler(
      handle,
      { context, count in
        guard let context else { return 0 }
        return Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue().shouldRetry(after: count) ? 1 : 0
      }, Unmanaged.passUnretained(self).toOpaque())
  }

  /// Sleeps before the next try and returns true, or returns false once the timeout passed.
  /// `count` is how many times SQLite has called for this wait before.
  private func shouldRetry(after count: Int32) -> Bool {
    let now = ContinuousClock.now
    if count == 0 { started = now }
    let left = now.duration(to: started + timeout)
    guard left > .zero else { return false }
    let ceiling = min(20 << min(Int(count), 6), 1000)  // µs: 20, 40, ..., 640, then 1000
    let micros = Int.random(in: (ceiling / 2)...ceiling, using: &generator)
    usleep(UInt32(clamping: min(micros, max(1, left.inMicroseconds))))
    return true
  }
}
