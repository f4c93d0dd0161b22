import CSQLite
import Glibc

/// A one-shot timer with microsecond resolution that `poll` can wait on beside other
/// descriptors (a Linux `timerfd`): `poll`'s own timeout counts whole milliseconds.
///
/// The remote-change monitor waits on it and on inotify at once after a wake-up, to look for
/// a commit again after 10 µs, then 20, 40, ... without sleeping through an event. (In this
/// layer because the C declarations come through `CSQLite`'s shim: Swift's `Glibc` module
/// leaves `timerfd_create` and the variadic `prctl` out.)
final class ShortTimer {
  /// The descriptor to poll for `POLLIN`; -1 when the timer could not be made.
  let descriptor: Int32

  init() {
    descriptor = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
  }

  /// Fires once after `nanoseconds`, replacing any earlier setting; consumes a firing that
  /// was not read.
  func arm(nanoseconds: UInt64) {
    var expirations: UInt64 = 0
    _ = read(descriptor, &expirations, MemoryLayout<UInt64>.size)
    var setting = itimerspec(
      it_interval: timespec(tv_sec: 0, tv_nsec: 0),
      it_value: timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000)))
    _ = timerfd_settime(descriptor, 0, &setting, nil)
  }

  /// Makes the calling thread's timers end on time: Linux lets them end up to 50 µs late (the
  /// thread's timer slack), which would turn a 10 µs wait into 60.
  static func makeThisThreadsTimersPrecise() {
    _ = typedstore_set_timer_slack(1)
  }
}
