import Synchronization

/// The failures tests inject, by store path: each table says how many of the next operations
/// of that kind on that store fail, as a transient SQLite error would. Production code only
/// reads them (``take(_:path:)``); nothing sets them but the tests.
enum FaultInjection {
  /// How many of the next history reads of a store's remote-change monitor fail.
  static let monitorReads = Mutex<[String: Int]>([:])
  /// How many of a monitor's next attempts to open its read connection fail.
  static let monitorOpens = Mutex<[String: Int]>([:])
  /// How many of the next reads of the position, when a publisher starts listening, fail.
  static let publisherStarts = Mutex<[String: Int]>([:])

  /// Whether the next operation on `path` fails, counting it off.
  static func take(_ failures: borrowing Mutex<[String: Int]>, path: String) -> Bool {
    failures.withLock { failing in
      guard let count = failing[path], count > 0 else { return false }
      failing[path] = count - 1
      return true
    }
  }
}
