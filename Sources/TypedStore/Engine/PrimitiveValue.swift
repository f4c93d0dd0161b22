import Foundation

/// A value as SQLite stores it: one of its five storage classes.
///
/// Every attribute converts to and from one of these; the mapping of each Swift type is part
/// of the documented file format (`docs/file-format.md`).
public enum PrimitiveValue: Sendable, Hashable {
  /// SQL `NULL`.
  case null
  /// A 64-bit signed integer.
  case integer(Int64)
  /// An 8-byte IEEE floating point number.
  case real(Double)
  /// UTF-8 text.
  case text(String)
  /// Bytes, stored as given.
  case blob(Data)
}
