import ArgumentParsing
import Foundation
import TypedStore

/// The values commands take on the command line, parsed with errors that say what is wanted.
enum Values {
  /// `text` as a shell word: as it is when it holds only characters no shell treats
  /// specially, otherwise in single quotes.
  static func shellQuoted(_ text: String) -> String {
    let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
    if !text.isEmpty && text.allSatisfy(plain.contains) { return text }
    return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
  }

  /// A token: `<store UUID>:<number>` as `history export` prints it, or a bare transaction
  /// number of the store at hand. A token of another store is refused.
  static func token(_ text: String, option: String, store: PersistentStore, command: ParsedCommand) throws(Failure)
    -> HistoryToken
  {
    if let number = Int64(text), number >= 0 {
      return HistoryToken(storeIdentifier: store.identifier, transactionNumber: number)
    }
    guard let token = HistoryToken(stringRepresentation: text) else {
      throw .usage(
        command.error(
          "The value '\(text)' is invalid for '\(option)': "
            + "expected a token '<store UUID>:<number>' or a transaction number"
        ))
    }
    guard token.storeIdentifier == store.identifier else {
      throw .failed("the token \(text) belongs to store \(token.storeIdentifier), not to \(store.identifier)")
    }
    return token
  }

  /// A date: ISO 8601 (`2026-12-02T10:00:00Z`, with fractional seconds or an offset), or a day
  /// (`2026-12-02`, midnight UTC).
  static func date(_ text: String) -> Date? {
    if let date = try? Date(text, strategy: .iso8601) { return date }
    if let date = try? Date(
      text, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
    ) {
      return date
    }
    if let date = try? Date(text, strategy: .iso8601.year().month().day()) { return date }
    return nil
  }

  static func date(_ text: String, option: String, command: ParsedCommand) throws(Failure) -> Date {
    guard let date = date(text) else {
      throw .usage(
        command.error(
          "The value '\(text)' is invalid for '\(option)': "
            + "expected an ISO 8601 date such as 2026-12-02 or 2026-12-02T10:00:00Z"
        ))
    }
    return date
  }

  /// A duration: a number and a unit, `ms`, `s`, `m`, `h`, `d` or `w` (`90s`, `12h`, `7d`).
  static func duration(_ text: String, option: String, command: ParsedCommand) throws(Failure) -> Duration {
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
    for (unit, seconds) in units where text.hasSuffix(unit) {
      if let value = Double(text.dropLast(unit.count)), value.isFinite, value >= 0 {
        return .milliseconds(Int64((value * seconds * 1000).rounded()))
      }
    }
    throw .usage(
      command.error(
        "The value '\(text)' is invalid for '\(option)': expected a duration such as 90s, 30m, 12h or 7d"))
  }

  /// Bytes as people read them.
  static func bytes(_ count: Int) -> String {
    if count < 1024 { return "\(count) B" }
    if count < 1024 * 1024 { return String(format: "%.1f KiB", Double(count) / 1024) }
    if count < 1024 * 1024 * 1024 { return String(format: "%.1f MiB", Double(count) / 1_048_576) }
    return String(format: "%.2f GiB", Double(count) / 1_073_741_824)
  }

  /// How long ago, as people read it.
  static func age(since date: Date, now: Date = Date()) -> String {
    let seconds = max(0, now.timeIntervalSince(date))
    if seconds < 1 { return String(format: "%.0f ms", seconds * 1000) }
    if seconds < 120 { return String(format: "%.0f s", seconds) }
    if seconds < 7200 { return String(format: "%.0f min", seconds / 60) }
    if seconds < 172_800 { return String(format: "%.1f h", seconds / 3600) }
    return String(format: "%.1f d", seconds / 86_400)
  }

  static func timestamp(_ date: Date) -> String {
    date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
  }

  /// Compact JSON of a dictionary of plain values, keys sorted, for `--json` output.
  static func json(_ object: Any) throws(Failure) -> String {
    do {
      let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
      return String(decoding: data, as: UTF8.self)
    } catch {
      throw .failed("cannot write JSON: \(error)")
    }
  }
}
