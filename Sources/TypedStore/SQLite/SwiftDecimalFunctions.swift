import CSQLite
import Foundation

/// Swift's `Decimal` semantics inside SQLite, so that predicates, sorts and aggregates over
/// decimal attributes answer as Swift does. A decimal is stored as text (its `description`,
/// `docs/file-format.md`), which SQLite alone would compare by bytes ("10" < "9", "1.0" is not
/// "1") and add up as a `Double`. Registered on every connection:
///
/// - the collation `SWIFT_DECIMAL`: orders two texts as Swift's `Decimal` `<` and `==` order
///   the values they are read as, `Decimal.nan` included: NaN equals NaN and comes before every
///   number, as Swift's `Decimal` orders it. Text that does not read as a decimal (another
///   tool's; TypedStore never writes it) comes before NaN, in byte order among itself, so that
///   the order stays total;
/// - `swift_decimal_add(a, b)`, `swift_decimal_subtract(a, b)`, `swift_decimal_multiply(a, b)`
///   and `swift_decimal_negate(a)`: Swift's `+`, `-`, `*` and prefix `-`, as text (NaN when
///   Swift's answer is NaN); NULL when an argument is NULL; an error for a product Swift's `*`
///   stops the program on (`multiply(_:_:)`);
/// - the aggregates `swift_decimal_sum(x)` and `swift_decimal_avg(x)`, over the non-NULL
///   values, NULL when there is none. The sum is Swift's `+` over the values, which is the
///   same in every order while no partial sum needs more than a `Decimal`'s 38 digits: the
///   values are added exactly, and the total is given when their magnitudes add up to at most
///   38 digits (or 2^128 - 1) from the lowest digit any of them has, so that no partial sum,
///   in any order, can need more. Beyond that Swift's own sum depends on the order of the rows
///   (10^38 + 0.5 - 10^38 is 0 one way and 0.5 the other), and the statement fails with
///   `orderDependentSum`. NaN when a value is NaN. The average is that sum divided by
///   `Decimal(count)`, with Swift's `/`.
///
/// Values are read as the attribute decoding reads them (`Decimal(storedText:)`), so SQL
/// and Swift agree on what each stored text is. A function given a value that does not read
/// as a decimal fails the statement with an SQLite error naming the value, where Swift could
/// not have read the object at all.
enum SwiftDecimalFunctions {
  static func register(on handle: OpaquePointer) {
    sqlite3_create_collation_v2(
      handle, "SWIFT_DECIMAL", SQLITE_UTF8, nil,
      { _, leftCount, left, rightCount, right in
        SwiftDecimalFunctions.compare(
          UnsafeRawBufferPointer(start: left, count: Int(leftCount)),
          UnsafeRawBufferPointer(start: right, count: Int(rightCount)))
      }, nil)
    let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
    for (name, function) in [
      ("swift_decimal_add", addFunction), ("swift_decimal_subtract", subtractFunction),
      ("swift_decimal_multiply", multiplyFunction),
    ] {
      sqlite3_create_function_v2(handle, name, 2, flags, nil, function, nil, nil, nil)
    }
    sqlite3_create_function_v2(handle, "swift_decimal_negate", 1, flags, nil, negateFunction, nil, nil, nil)
    sqlite3_create_function_v2(handle, "swift_decimal_sum", 1, flags, nil, nil, sumStep, sumFinal, nil)
    sqlite3_create_function_v2(handle, "swift_decimal_avg", 1, flags, nil, nil, sumStep, averageFinal, nil)
  }

  // MARK: - Reading values

  /// The text's decimal, as an attribute decodes it; nil when it does not read as one.
  static func decimal(_ text: UnsafeRawBufferPointer) -> Decimal? {
    Decimal(storedText: String(decoding: text, as: UTF8.self))
  }

  /// An SQL value's decimal, as an attribute decodes it (text, or an integer or real made by
  /// an expression); nil when it does not read as one.
  private static func decimal(_ value: OpaquePointer) -> Decimal? {
    switch sqlite3_value_type(value) {
    case SQLITE_INTEGER: return Decimal(sqlite3_value_int64(value))
    case SQLITE_FLOAT: return Decimal(sqlite3_value_double(value))
    case SQLITE_TEXT:
      return decimal(UnsafeRawBufferPointer(start: sqlite3_value_text(value), count: Int(sqlite3_value_bytes(value))))
    default: return nil
    }
  }

  private static func fail(_ context: OpaquePointer?, _ value: OpaquePointer) {
    let text = sqlite3_value_text(value).map { String(cString: $0) } ?? "a blob"
    sqlite3_result_error(context, "TypedStore: \(text.prefix(80)) is not a decimal", -1)
  }

  private static func result(_ context: OpaquePointer?, _ value: Decimal) {
    sqlite3_result_text(context, value.description, -1, sqliteTransient)
  }

  // MARK: - Collation

  /// Orders two texts as `SWIFT_DECIMAL` does (see the type's comment).
  static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
    let common = min(a.count, b.count)
    var bytes: Int32 = 0
    if common > 0, let left = a.baseAddress, let right = b.baseAddress {
      let result = memcmp(left, right, common)
      bytes = result == 0 ? 0 : (result < 0 ? -1 : 1)
    }
    if bytes == 0 { bytes = a.count == b.count ? 0 : (a.count < b.count ? -1 : 1) }
    if bytes == 0 { return 0 }  // the same text is the same value
    switch (decimal(a), decimal(b)) {
    case (let left?, let right?): return left == right ? 0 : (left < right ? -1 : 1)
    case (nil, nil): return bytes
    case (nil, _?): return -1
    case (_?, nil): return 1
    }
  }

  // MARK: - Arithmetic

  private typealias Function = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void

  /// The binary operators Foundation's `PredicateExpressions.Arithmetic` applies, so that the
  /// answer is the same operator's; nil where that operator stops the program.
  static func add(_ a: Decimal, _ b: Decimal) -> Decimal? { a + b }
  static func subtract(_ a: Decimal, _ b: Decimal) -> Decimal? { a - b }

  /// Foundation's `Decimal` `*` traps when the operands' exponents add up below -128, the
  /// smallest a `Decimal` has (99.99 × 10^-127: -2 - 127), where it does not round the
  /// product: the process would stop inside SQLite. Such a product fails the statement
  /// instead, as Swift's own evaluation of the predicate would stop.
  static func multiply(_ a: Decimal, _ b: Decimal) -> Decimal? {
    guard a.exponent + b.exponent >= -128 else { return nil }
    return a * b
  }

  private static let addFunction: Function = { context, _, values in
    SwiftDecimalFunctions.apply(context, values, add)
  }
  private static let subtractFunction: Function = { context, _, values in
    SwiftDecimalFunctions.apply(context, values, subtract)
  }
  private static let multiplyFunction: Function = { context, _, values in
    SwiftDecimalFunctions.apply(context, values, multiply)
  }
  private static let negateFunction: Function = { context, _, values in
    guard let value = values?[0], sqlite3_value_type(value) != SQLITE_NULL else {
      sqlite3_result_null(context)
      return
    }
    guard let decimal = SwiftDecimalFunctions.decimal(value) else { return SwiftDecimalFunctions.fail(context, value) }
    SwiftDecimalFunctions.result(context, -decimal)
  }

  /// `operation` of the two arguments; NULL when either is NULL.
  private static func apply(
    _ context: OpaquePointer?, _ values: UnsafeMutablePointer<OpaquePointer?>?,
    _ operation: (Decimal, Decimal) -> Decimal?
  ) {
    guard let values, let first = values[0], let second = values[1],
      sqlite3_value_type(first) != SQLITE_NULL, sqlite3_value_type(second) != SQLITE_NULL
    else {
      sqlite3_result_null(context)
      return
    }
    guard let a = decimal(first) else { return fail(context, first) }
    guard let b = decimal(second) else { return fail(context, second) }
    guard let value = operation(a, b) else {
      return sqlite3_result_error(
        context, "TypedStore: Swift's Decimal arithmetic stops the program on \(a) and \(b)", -1)
    }
    result(context, value)
  }

  // MARK: - Aggregates

  private typealias Final = @convention(c) (OpaquePointer?) -> Void

  private static let sumStep: Function = { context, _, values in
    guard let value = values?[0], sqlite3_value_type(value) != SQLITE_NULL else { return }
    guard let decimal = SwiftDecimalFunctions.decimal(value) else { return SwiftDecimalFunctions.fail(context, value) }
    guard let memory = sqlite3_aggregate_context(context, Int32(ExactDecimalSum.byteCount)) else {
      return sqlite3_result_error_nomem(context)
    }
    ExactDecimalSum(memory).add(decimal)
  }

  private static let sumFinal: Final = { context in
    SwiftDecimalFunctions.finish(context) { total, _ in total }
  }

  private static let averageFinal: Final = { context in
    SwiftDecimalFunctions.finish(context) { total, count in total / Decimal(count) }
  }

  /// The result of a sum or average: NULL when no value was added, an error when Swift's
  /// answer would depend on the order of the rows, otherwise `result` of the total and count.
  private static func finish(_ context: OpaquePointer?, _ result: (Decimal, UInt64) -> Decimal) {
    // Zero bytes: the memory a step made, or nil when no step ran (no row, or only NULLs).
    guard let memory = sqlite3_aggregate_context(context, 0) else { return sqlite3_result_null(context) }
    let sum = ExactDecimalSum(memory)
    switch sum.total {
    case .none: sqlite3_result_null(context)
    case .orderDependent:
      sqlite3_result_error(context, "TypedStore: \(orderDependentSum)", -1)
    case .value(let total): self.result(context, result(total, sum.count))
    }
  }

  /// Why a sum of decimals is refused.
  static let orderDependentSum =
    "Swift's sum of these decimals depends on the order it adds them in (a partial sum needs more than 38 digits)"
}

/// Swift's sum of decimals as `swift_decimal_sum` gives it, over values in Swift (an aggregate
/// another engine's SQL cannot compute as Swift does, `SwiftAggregate`): nil when it depends
/// on the order of the values.
struct DecimalSummation {
  let total: Decimal?

  init(_ values: [Decimal]) {
    let memory = UnsafeMutableRawPointer.allocate(
      byteCount: ExactDecimalSum.byteCount, alignment: MemoryLayout<UInt64>.alignment)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 0, count: ExactDecimalSum.byteCount)
    let sum = ExactDecimalSum(memory)
    for value in values { sum.add(value) }
    switch sum.total {
    case .none: total = 0
    case .value(let value): total = value
    case .orderDependent: total = nil
    }
  }
}

/// An exact sum of decimals, kept in the memory SQLite gives an aggregate (zeroed when it is
/// made, freed when the statement is done with it), so it owns nothing that needs releasing.
///
/// A `Decimal` is a mantissa of at most 39 digits times 10 to an exponent from -128 to 127, so
/// each of its digits is one of 10^-128 … 10^166. The sum keeps the positive and the negative
/// values apart, each as a fixed-point number of 324 digits from 10^-128 up (20 more than a
/// value has, for the carries of 2^64 additions), in limbs of nine digits, least significant
/// first, and the lowest digit any value has.
///
/// Swift's `+` on `Decimal` is exact while its result's mantissa fits 128 bits (38 digits, or
/// 39 up to 2^128 - 1), and rounds otherwise, so that a sum of many values then depends on the
/// order they are added in (10^38 + 0.5 - 10^38 is 0 one way and 0.5 the other). When the
/// values' magnitudes, counted from the lowest digit any of them has, add up to such a
/// mantissa, no partial sum in any order is larger: the total is Swift's sum in every order,
/// and it is given. Otherwise there is no one Swift answer, and it is refused.
private struct ExactDecimalSum {
  static let limbCount = 36
  static let limbBase: UInt64 = 1_000_000_000
  /// The digit of 10^0: digits below it are the fraction.
  static let unitDigit = 128
  /// The largest mantissa of a `Decimal`, 2^128 - 1: a sum whose digits from the lowest one
  /// up make at most this is exact.
  static let largestMantissa = "340282366920938463463374607431768211455"
  /// Words: flags, count, the lowest digit seen plus one (0 for none), the positive limbs,
  /// then the negative limbs.
  static let byteCount = (3 + 2 * limbCount) * MemoryLayout<UInt64>.stride

  private static let powersOfTen: [UInt64] = (0..<9).map { (0..<$0).reduce(1) { product, _ in product * 10 } }
  private static let hasValue: UInt64 = 1
  private static let isNaN: UInt64 = 2

  let words: UnsafeMutablePointer<UInt64>

  init(_ memory: UnsafeMutableRawPointer) {
    words = memory.bindMemory(to: UInt64.self, capacity: Self.byteCount / MemoryLayout<UInt64>.stride)
  }

  /// How many values were added.
  var count: UInt64 { words[1] }

  private var positive: UnsafeMutablePointer<UInt64> { words + 3 }
  private var negative: UnsafeMutablePointer<UInt64> { words + 3 + Self.limbCount }

  func add(_ value: Decimal) {
    words[0] |= Self.hasValue
    words[1] &+= 1
    if value.isNaN { words[0] |= Self.isNaN }
    guard words[0] & Self.isNaN == 0 else { return }
    // The description has every digit in plain notation, with at most 128 after the point.
    let text = Array(value.description.utf8)
    let isNegative = text.first == UInt8(ascii: "-")
    let limbs = isNegative ? negative : positive
    let point = text.firstIndex(of: UInt8(ascii: ".")) ?? text.count
    var digit = Self.unitDigit + point - (isNegative ? 1 : 0)
    for byte in text where (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
      digit -= 1
      guard byte != UInt8(ascii: "0"), digit >= 0, digit / 9 < Self.limbCount else { continue }
      limbs[digit / 9] += UInt64(byte - UInt8(ascii: "0")) * Self.powersOfTen[digit % 9]
      if words[2] == 0 || UInt64(digit) < words[2] - 1 { words[2] = UInt64(digit) + 1 }
    }
    Self.carry(limbs)
  }

  private static func carry(_ limbs: UnsafeMutablePointer<UInt64>) {
    var carry: UInt64 = 0
    for index in 0..<limbCount {
      let sum = limbs[index] + carry
      limbs[index] = sum % limbBase
      carry = sum / limbBase
    }
  }

  /// Whether the digits of `limbs` from `lowest` up make a number no larger than
  /// `largestMantissa`.
  private static func fitsMantissa(_ limbs: [UInt64], from lowest: Int) -> Bool {
    guard let top = limbs.lastIndex(where: { $0 != 0 }) else { return true }
    let topDigit = top * 9 + String(limbs[top]).count - 1
    let count = topDigit - lowest + 1
    guard count >= largestMantissa.count else { return true }
    guard count == largestMantissa.count else { return false }
    let digits = (lowest...topDigit).reversed().map { digit in
      Character(String(limbs[digit / 9] / powersOfTen[digit % 9] % 10))
    }
    return String(digits) <= largestMantissa
  }

  enum Total {
    /// Nothing was added.
    case none
    /// Swift's sum of the values in every order (NaN when a value is NaN).
    case value(Decimal)
    /// Swift's sum depends on the order of the values.
    case orderDependent
  }

  var total: Total {
    guard words[0] & Self.hasValue != 0 else { return .none }
    guard words[0] & Self.isNaN == 0 else { return .value(.nan) }
    guard words[2] != 0 else { return .value(0) }
    // The magnitudes' total: how far above the lowest digit a partial sum can reach.
    var magnitude = [UInt64](repeating: 0, count: Self.limbCount)
    var carry: UInt64 = 0
    for index in 0..<Self.limbCount {
      let sum = positive[index] + negative[index] + carry
      magnitude[index] = sum % Self.limbBase
      carry = sum / Self.limbBase
    }
    guard carry == 0, Self.fitsMantissa(magnitude, from: Int(words[2] - 1)) else { return .orderDependent }
    let isNegative = (0..<Self.limbCount).reversed().first { positive[$0] != negative[$0] }.map {
      negative[$0] > positive[$0]
    }
    let (larger, smaller) = isNegative == true ? (negative, positive) : (positive, negative)
    var difference = [UInt64](repeating: 0, count: Self.limbCount)
    var borrow: UInt64 = 0
    for index in 0..<Self.limbCount {
      let subtrahend = smaller[index] + borrow
      borrow = larger[index] >= subtrahend ? 0 : 1
      difference[index] = larger[index] + borrow * Self.limbBase - subtrahend
    }
    let digits = difference.reversed().map { limb in
      let text = String(limb)
      return String(repeating: "0", count: 9 - text.count) + text
    }.joined()
    let point = digits.index(digits.endIndex, offsetBy: -Self.unitDigit)
    let whole = digits[..<point].drop { $0 == "0" }
    var fraction = digits[point...]
    while fraction.last == "0" { fraction.removeLast() }
    let sign = isNegative == true ? "-" : ""
    let text = sign + (whole.isEmpty ? "0" : whole) + (fraction.isEmpty ? "" : "." + fraction)
    // A mantissa of at most 2^128 - 1 times 10 to an exponent of -128 up: a Decimal's.
    return Decimal(string: text).map(Total.value) ?? .orderDependent
  }
}
