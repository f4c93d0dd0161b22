import CSQLite

/// The SQLite library the benchmark runs against.
func sqliteVersion() -> String { String(cString: sqlite3_libversion()) }
