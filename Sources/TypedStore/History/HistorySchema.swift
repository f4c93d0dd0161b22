/// The history tables (part of the documented file format, `docs/history.md`).
///
/// A transaction's number is one above the largest kept, or the horizon (`history_horizon`,
/// the first number after the deleted ones) when none is kept: deletion removes a prefix and
/// moves the horizon in the same transaction, so numbers are never reused, also after all of
/// history is deleted. (Up to format version 2 they came from `AUTOINCREMENT`, which wrote
/// `sqlite_sequence`'s page into the WAL with every save.) Change rows are appended in commit order, so each transaction's changes
/// are one contiguous range of rowids, which its row records (`first_change`, `last_change`):
/// reading a transaction's changes and deleting history before a transaction are rowid range
/// operations, and the change table needs no secondary index to keep up to date.
///
/// A change row stands for one row (`pk`), for a run of consecutive primary keys (`pk` through
/// `last_pk`), or for any other group of rows of one entity that had the same change (`keys`,
/// a JSON array of primary keys, in order): a save or batch request that inserts or updates
/// 100,000 rows writes a few change rows, not 100,000, and rows with consecutive keys (a large
/// insert, or a delete of a whole table) take one short row. Deletes that keep a tombstone
/// have one change row per deleted row.
package enum HistorySchema {
  /// The columns of `_history_transaction`, for making it and for the upgrade that remakes it.
  private static let transactionColumns = """
    (
      number INTEGER PRIMARY KEY,
      timestamp REAL NOT NULL,
      author TEXT,
      context_name TEXT,
      process_id INTEGER NOT NULL,
      first_change INTEGER NOT NULL DEFAULT 0,
      last_change INTEGER NOT NULL DEFAULT 0,
      recorded_by INTEGER NOT NULL
    )
    """

  static let createSQL = [
    "CREATE TABLE _history_transaction " + transactionColumns,
    """
    CREATE TABLE _history_change (
      id INTEGER PRIMARY KEY,
      transaction_number INTEGER NOT NULL,
      kind INTEGER NOT NULL,
      entity TEXT NOT NULL,
      pk INTEGER,
      last_pk INTEGER,
      keys TEXT,
      changed TEXT,
      tombstone TEXT
    )
    """,
    "INSERT INTO _metadata (key, value) VALUES ('history_horizon', '1')",
    HistoryConsumers.createSQL,
  ]

  /// The file format version that writes these tables: each transaction row records it in
  /// `recorded_by` (`PersistentStore.formatVersion`).
  package static let recordingFormatVersion = 3

  /// SQL for the next transaction's number: one above the largest kept, or the horizon when
  /// none is kept (see above).
  static let nextNumberSQL =
    "coalesce((SELECT max(number) FROM _history_transaction) + 1, "
    + "(SELECT CAST(value AS INTEGER) FROM _metadata WHERE key = 'history_horizon'), 1)"

  /// Format version 2 to 3: `_history_transaction` without `AUTOINCREMENT`, its rows kept,
  /// and `_primary_key.max_pk` renamed `key_floor`. The horizon stays right: deletion
  /// removes a prefix, so the largest number kept is the last one given, or, with none kept,
  /// the horizon is one above it.
  ///
  /// A process of version 2 still open on the store must not write it any more: it would
  /// take keys and numbers the old way and could give one twice. So its writes fail at once:
  /// its key reservation names `max_pk`, which is gone, and its history rows lack
  /// `recorded_by` (the format version that recorded the row), which may not be NULL.
  static let upgradeFromVersion2SQL =
    "CREATE TABLE _history_transaction_3 " + transactionColumns + ";\n"
      + """
      INSERT INTO _history_transaction_3 SELECT number, timestamp, author, context_name, process_id, first_change,
        last_change, 2 FROM _history_transaction;
      DROP TABLE _history_transaction;
      ALTER TABLE _history_transaction_3 RENAME TO _history_transaction;
      ALTER TABLE _primary_key RENAME COLUMN max_pk TO key_floor;
      """

  /// A JSON array of integers, for `json_each(?)`: how a list of keys is bound as one value.
  package static func jsonArray(_ keys: [Int64]) -> String {
    // Written digit by digit straight into the string's storage: this runs for every key of
    // every save and batch request. At most 20 digits, a sign and a comma per key.
    String(unsafeUninitializedCapacity: keys.count * 22 + 2) { buffer in
      var count = 0
      buffer[count] = UInt8(ascii: "[")
      count += 1
      for (index, key) in keys.enumerated() {
        if index > 0 {
          buffer[count] = UInt8(ascii: ",")
          count += 1
        }
        if key < 0 {
          buffer[count] = UInt8(ascii: "-")
          count += 1
        }
        var magnitude = key.magnitude
        let start = count
        repeat {
          buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
          magnitude /= 10
          count += 1
        } while magnitude > 0
        buffer[start..<count].reverse()
      }
      buffer[count] = UInt8(ascii: "]")
      return count + 1
    }
  }

  /// The integers of a JSON array written by `jsonArray(_:)` (digits, minus signs, commas).
  static func integers(fromJSONArray text: String) -> [Int64] {
    var keys: [Int64] = []
    var value: Int64 = 0
    var negative = false
    var inNumber = false
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        value = value &* 10 &+ Int64(byte - UInt8(ascii: "0"))
        inNumber = true
      case UInt8(ascii: "-"):
        negative = true
      default:
        if inNumber { keys.append(negative ? 0 &- value : value) }
        value = 0
        negative = false
        inNumber = false
      }
    }
    return keys
  }

  /// A JSON array of strings.
  package static func jsonArray(_ names: [String]) -> String {
    let escaped = names.map { name in
      "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
    return "[" + escaped.joined(separator: ",") + "]"
  }
}
