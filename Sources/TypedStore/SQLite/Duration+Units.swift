extension Duration {
  /// The duration in seconds, as SQLite's REAL columns and `Date` arithmetic want it.
  var inSeconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }

  /// The duration in whole milliseconds, as `sqlite3_busy_timeout` and `poll` want it.
  var inMilliseconds: Int64 {
    components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
  }

  /// The duration in whole microseconds, as `usleep` wants it.
  var inMicroseconds: Int {
    Int(clamping: components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000)
  }
}
