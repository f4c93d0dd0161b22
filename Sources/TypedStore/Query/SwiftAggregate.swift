import Foundation

/// An aggregate computed in Swift over the values SQL reads, for an engine whose SQL cannot
/// give Swift's answer (PostgreSQL: the order of strings and decimals, equality of strings as
/// groups, sums of decimals): the same answers as SQLite's functions and collations give on a
/// store file (`SwiftDecimalFunctions`, the `SWIFT` collation).
///
/// Values arrive in primary-key order, the order SQLite reads a table in, so that a sum of
/// doubles adds them in the same order as on a file.
struct SwiftAggregate {
  let kind: AggregateFunctionKind
  /// The aggregated attribute's type; nil for `count` of rows.
  let type: AttributeType?

  /// The aggregate of `values` (NULLs among them are skipped, as SQL's aggregates skip them)
  /// in the form SQL gives it: NULL over no value, an integer count, the chosen value of a
  /// `min` or `max` as stored, a sum or average as SQLite's functions give it.
  ///
  /// - Throws: `FetchError.unsupportedAggregate` for a sum whose Swift answer depends on the
  ///   order of the rows (decimals), or that overflows (integers).
  func result(of values: [PrimitiveValue]) throws -> PrimitiveValue {
    let present = values.filter { $0 != .null }
    switch kind {
    case .count: return .integer(Int64(type == nil ? values.count : present.count))
    case .min: return try present.min(by: precedes) ?? .null
    case .max: return try present.max(by: precedes) ?? .null
    case .sum, .average: return try total(present)
    }
  }

  /// Whether `a` comes before `b` as Swift orders the attribute's values.
  private func precedes(_ a: PrimitiveValue, _ b: PrimitiveValue) throws -> Bool {
    switch type {
    case .string?: return try String(primitiveValue: a) < String(primitiveValue: b)
    case .decimal?:
      // NaN equals NaN and comes first, as `SWIFT_DECIMAL` (and Swift's `Decimal`) order it.
      let (x, y) = (try Decimal(primitiveValue: a), try Decimal(primitiveValue: b))
      if x.isNaN || y.isNaN { return x.isNaN && !y.isNaN }
      return x < y
    default:
      switch (a, b) {
      case (.integer(let x), .integer(let y)): return x < y
      case (.text(let x), .text(let y)): return x < y
      default: return (Self.number(a) ?? 0) < (Self.number(b) ?? 0)
      }
    }
  }

  /// A sum or average: decimals exactly (`ExactDecimalSum`), integers exactly, doubles added
  /// in order; an average is the sum over the count, as SQLite's `avg` gives it.
  private func total(_ values: [PrimitiveValue]) throws -> PrimitiveValue {
    guard !values.isEmpty else { return .null }
    if type == .decimal {
      let sum = try DecimalSummation(values.map { try Decimal(primitiveValue: $0) })
      guard let total = sum.total else {
        throw FetchError.unsupportedAggregate("\(kind) of decimals: \(SwiftDecimalFunctions.orderDependentSum)")
      }
      return .text((kind == .average ? total / Decimal(values.count) : total).description)
    }
    var real = 0.0
    var integer: Int64 = 0
    var exact = true
    for value in values {
      real += Self.number(value) ?? 0
      guard exact, case .integer(let number) = value else {
        exact = false
        continue
      }
      let (sum, overflow) = integer.addingReportingOverflow(number)
      if overflow && kind == .sum { throw FetchError.unsupportedAggregate("sum: integer overflow") }
      integer = sum
    }
    if kind == .average { return .real(real / Double(values.count)) }
    return exact ? .integer(integer) : .real(real)
  }

  private static func number(_ value: PrimitiveValue) -> Double? {
    switch value {
    case .integer(let number): Double(number)
    case .real(let number): number
    case .text(let text): Double(text)
    default: nil
    }
  }
}
