import CSQLite
import Foundation

/// Swift's string semantics inside SQLite, so that a translated `#Predicate` answers exactly as
/// `predicate.evaluate` does. SQLite compares text by its UTF-8 bytes; Swift compares strings
/// by canonical equivalence ("é" precomposed equals "e" + U+0301) and `contains` and
/// `starts(with:)` work on `Character`s (a "\r\n" is one character). Registered on every
/// connection:
///
/// - the collation `SWIFT`: Swift's `==` and `<` on `String`;
/// - the collation `SWIFT_LEXICAL`: `String.StandardComparator.lexical`, for sort descriptors
///   built with it;
/// - `swift_contains(a, b)`: `a.contains(b)` as a collection of characters;
/// - `swift_starts_with(a, b)`: `a.starts(with: b)`.
///
/// Each takes a fast path when both strings are ASCII without a carriage return, where bytes
/// and characters agree; otherwise it makes Swift strings and asks Swift.
enum SwiftStringFunctions {
  static func register(on handle: OpaquePointer) {
    let collations:
      [(
        String,
        @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32
      )] =
        [
          (
            "SWIFT",
            { _, leftCount, left, rightCount, right in
              SwiftStringFunctions.compare(
                UnsafeRawBufferPointer(start: left, count: Int(leftCount)),
                UnsafeRawBufferPointer(start: right, count: Int(rightCount)))
            }
          ),
          (
            "SWIFT_LEXICAL",
            { _, leftCount, left, rightCount, right in
              SwiftStringFunctions.compareLexically(
                UnsafeRawBufferPointer(start: left, count: Int(leftCount)),
                UnsafeRawBufferPointer(start: right, count: Int(rightCount)))
            }
          ),
        ]
    for (name, compare) in collations {
      sqlite3_create_collation_v2(handle, name, SQLITE_UTF8, nil, compare, nil)
    }
    for (name, function) in [
      ("swift_contains", containsFunction), ("swift_starts_with", startsWithFunction),
    ] {
      sqlite3_create_function_v2(
        handle, name, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil, function, nil, nil, nil)
    }
  }

  /// Whether bytes and characters agree: ASCII without "\r" (which joins a following "\n").
  private static func isSimple(_ bytes: UnsafeRawBufferPointer) -> Bool {
    !bytes.contains { $0 >= 0x80 || $0 == 0x0D }
  }

  private static func string(_ bytes: UnsafeRawBufferPointer) -> String {
    String(decoding: bytes, as: UTF8.self)
  }

  static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
    if isSimple(a) && isSimple(b) {
      let common = min(a.count, b.count)
      if common > 0, let left = a.baseAddress, let right = b.baseAddress {
        let result = memcmp(left, right, common)
        if result != 0 { return result < 0 ? -1 : 1 }
      }
      return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
    let (left, right) = (string(a), string(b))
    return left == right ? 0 : (left < right ? -1 : 1)
  }

  /// `String.StandardComparator.lexical`'s order, as a `SortDescriptor` built with it sorts.
  static func compareLexically(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
    switch String.StandardComparator.lexical.compare(string(a), string(b)) {
    case .orderedAscending: -1
    case .orderedSame: 0
    case .orderedDescending: 1
    }
  }

  /// The generic algorithms Foundation's predicate expressions call, so that the answer is the
  /// same function's.
  static func collectionContains<C: Collection>(_ base: C, _ other: C) -> Bool where C.Element: Equatable {
    base.contains(other)
  }

  static func sequenceStartsWith<S: Sequence>(_ base: S, _ prefix: S) -> Bool where S.Element: Equatable {
    base.starts(with: prefix)
  }

  private static let containsFunction:
    @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, _, values in
      SwiftStringFunctions.apply(context, values) { a, b in
        if isSimple(a) && isSimple(b) {
          guard b.count > 0 else { return true }
          guard a.count >= b.count else { return false }
          return (0...(a.count - b.count)).contains { offset in
            memcmp(a.baseAddress! + offset, b.baseAddress!, b.count) == 0
          }
        }
        return collectionContains(string(a), string(b))
      }
    }

  private static let startsWithFunction:
    @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, _, values in
      SwiftStringFunctions.apply(context, values) { a, b in
        if isSimple(a) && isSimple(b) {
          guard a.count >= b.count else { return false }
          return b.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, b.count) == 0
        }
        return sequenceStartsWith(string(a), string(b))
      }
    }

  /// Calls `body` with the two arguments' UTF-8 bytes; NULL when either is NULL.
  private static func apply(
    _ context: OpaquePointer?, _ values: UnsafeMutablePointer<OpaquePointer?>?,
    _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool
  ) {
    guard let values, let first = values[0], let second = values[1],
      sqlite3_value_type(first) != SQLITE_NULL, sqlite3_value_type(second) != SQLITE_NULL
    else {
      sqlite3_result_null(context)
      return
    }
    let a = UnsafeRawBufferPointer(start: sqlite3_value_text(first), count: Int(sqlite3_value_bytes(first)))
    let b = UnsafeRawBufferPointer(start: sqlite3_value_text(second), count: Int(sqlite3_value_bytes(second)))
    sqlite3_result_int(context, body(a, b) ? 1 : 0)
  }
}
