import Foundation

extension Decimal {
  /// Reads a decimal attribute's stored text: `NaN`, or a whole number in plain or
  /// exponent notation (`-12.5`, `+.5`, `1e-3`), read as `Decimal(string:)` reads it; nil for
  /// anything else. `Decimal(string:)` alone reads the longest prefix it can, so that "1abc"
  /// would read as 1, "-" as 0 and " 1" as 1: text another tool wrote must be a number as a
  /// whole or it is not read at all.
  ///
  /// The one reading of that text: attribute decoding and the SQL functions and collation of
  /// `SwiftDecimalFunctions` (which SQLite calls on the same text) use it.
  init?(storedText text: some StringProtocol) {
    if text == "NaN" {
      self = .nan
      return
    }
    guard Self.isNumberSyntax(text), let value = Decimal(string: String(text)) else { return nil }
    self = value
  }

  /// Whether `text` is `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`.
  private static func isNumberSyntax(_ text: some StringProtocol) -> Bool {
    let bytes = Array(text.utf8)
    var index = 0
    func accept(_ allowed: String) -> Bool {
      guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
      index += 1
      return true
    }
    func digits() -> Int {
      let start = index
      while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
      return index - start
    }
    _ = accept("+-")
    var count = digits()
    if accept(".") { count += digits() }
    guard count > 0 else { return false }
    if accept("eE") {
      _ = accept("+-")
      guard digits() > 0 else { return false }
    }
    return index == bytes.count
  }
}
