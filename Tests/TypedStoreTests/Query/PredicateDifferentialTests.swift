import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Every attribute type a predicate compares, optional and not.
final class Sample: ManagedObject {
  @Attribute var label: String = ""
  @Attribute var int: Int = 0
  @Attribute var optionalInt: Int? = nil
  @Attribute var small: Int = 0
  @Attribute var double: Double = 0
  @Attribute var optionalDouble: Double? = nil
  @Attribute var string: String = ""
  @Attribute var optionalString: String? = nil
  @Attribute var bool: Bool = false
  @Attribute var optionalBool: Bool? = nil
  @Attribute var date: Date = Date(timeIntervalSinceReferenceDate: 0)
  @Attribute var optionalDate: Date? = nil
  @Attribute var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
  @Attribute var optionalUUID: UUID? = nil
  @Attribute var status: Status = .draft
  @Attribute var priority: Priority? = nil
  @Attribute var decimal: Decimal = 0
  @Attribute var optionalDecimal: Decimal? = nil
  @Attribute var place: Place = Place()
  // Key paths that are no attribute, though each reads one: a predicate reading any of them
  // must be refused with `.unknownKeyPath` before the store is read.
  var shout: String { string.uppercased() }
  var cappedInt: Int { min(int, 40) }
  var labelOrNone: String { optionalString ?? "none" }
  var isBig: Bool { decimal > 10 }
  /// A plain stored property, no attribute: the store has no column for it.
  var plain: Int = 0
}

/// A composite attribute, nested, with a computed property no predicate may read.
struct Place: CompositeAttributeValue {
  struct Geo: CompositeAttributeValue {
    var height: Double = 0
  }
  var city: String = ""
  var code: Int? = nil
  var geo: Geo = Geo()
  var label: String { city + "!" }
}

/// A seeded generator (SplitMix64): the same seed makes the same cases.
struct SeededGenerator: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// The values the data and the predicates draw from: nils, empties, Unicode that bytes and
/// characters disagree on, and extremes.
enum Pools {
  static let ints = [0, 1, -1, 7, 42, -42, Int.max, Int.min, Int.max - 1, 1000]
  static let smalls = Array(-5...5)
  static let doubles: [Double] = [0, -0.0, 1.5, -1.5, 1e300, -1e300, .leastNonzeroMagnitude, 3, 1e-9, .infinity]
  static let strings = [
    "", "a", "A", "b", "ab", "abc", "café", "cafe\u{301}", "e", "é", "\u{301}", "a\r\nb", "\r", "\n", "zoë",
    "👩‍👩‍👧", "👩", "ß", "SS", "Straße", "\u{0}", "x y", "aa", "🇫🇷", "ǅ",
  ]
  static let dates = [0, 1, -1, 86_400, 1e9, -1e9, 63_113_904_000].map { Date(timeIntervalSinceReferenceDate: $0) }
  static let uuids = (0..<4).map { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", $0))! }
  static let statuses: [Status] = [.draft, .published, .archived]
  static let priorities: [Priority?] = [nil, .low, .high]
  /// Money and beyond: equal values (1 and 1.0 are one `Decimal`), signs, tenths that binary
  /// floating point cannot hold, 38 and 39 digits, the ends of the exponent, and NaN.
  static let decimals: [Decimal] =
    [
      "0", "1", "1.0", "-1", "0.1", "0.2", "0.3", "0.30", "1.5", "-1.5", "9", "10", "99.99", "100", "-0.000001",
      "12345678901234567890.123456789", "-12345678901234567890.123456789",
      "0.12345678901234567890123456789012345678", "340282366920938463463374607431768211455", "1e100", "-1e-100",
    ].compactMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } + [
      .greatestFiniteMagnitude, .leastFiniteMagnitude, .leastNonzeroMagnitude, .nan,
    ]

  /// Decimals to multiply the stored ones by: each product's exponent stays within Decimal's.
  static let multipliers = ["0", "1", "-1", "0.1", "1.5", "10", "-2", "1e20"].compactMap {
    Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX"))
  }

  /// Another spelling of a decimal's stored text that reads as the same value, as another
  /// tool could write it: trailing zeros, a plus sign, leading zeros, an exponent.
  static func respelled(_ value: Decimal, _ choice: Int) -> String {
    let text = value.description
    guard !value.isNaN else { return text }
    let negative = text.hasPrefix("-")
    let digits = negative ? String(text.dropFirst()) : text
    switch choice % 4 {
    case 0: return text + (text.contains(".") ? "0" : ".0")
    case 1: return (negative ? "-" : "+") + "00" + digits
    case 2: return text + "e0"
    default: return text + (text.contains(".") ? "0E+0" : ".00E-0")
    }
  }
}

extension Pools {
  /// `rows` samples of random values from the pools, each made by `make`; `strings` is the
  /// pool of their strings (an engine that cannot store some of them leaves those out).
  static func fill(
    rows: Int, using rng: inout SeededGenerator, strings: [String] = Pools.strings, _ make: () -> Sample
  ) {
    func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
    func maybe<T>(_ values: [T]) -> T? { Int.random(in: 0..<3, using: &rng) == 0 ? nil : pick(values) }
    for index in 0..<rows {
      let sample = make()
      sample.label = "row \(index)"
      sample.int = pick(Pools.ints)
      sample.optionalInt = maybe(Pools.ints)
      sample.small = pick(Pools.smalls)
      sample.double = pick(Pools.doubles.filter(\.isFinite))
      sample.optionalDouble = maybe(Pools.doubles)
      sample.string = pick(strings)
      sample.optionalString = maybe(strings)
      sample.bool = Bool.random(using: &rng)
      sample.optionalBool = maybe([true, false])
      sample.date = pick(Pools.dates)
      sample.optionalDate = maybe(Pools.dates)
      sample.uuid = pick(Pools.uuids)
      sample.optionalUUID = maybe(Pools.uuids)
      sample.status = pick(Pools.statuses)
      sample.priority = pick(Pools.priorities)
      sample.decimal = pick(Pools.decimals)
      sample.optionalDecimal = maybe(Pools.decimals)
      sample.place = Place(
        city: pick(strings), code: maybe(Pools.ints),
        geo: Place.Geo(height: pick(Pools.doubles.filter(\.isFinite))))
    }
  }
}

extension Recipe {
  /// How a store's answer to each recipe (`fetch`) differs from Swift's evaluation over `all`,
  /// the store's objects; a recipe that reads no attribute must be refused with a typed error
  /// that names the key path, before the store is read.
  static func failures(_ recipes: [Recipe], all: [Sample], fetch: (Predicate<Sample>) throws -> [Sample]) throws
    -> [String]
  {
    var failures: [String] = []
    for recipe in recipes {
      let predicate = recipe.predicate
      if recipe.readsUnstored {
        do {
          _ = try fetch(predicate)
          failures.append("\(recipe): translated, though it reads a computed property or a plain var")
        } catch PredicateTranslationError.unknownKeyPath(let text) {
          if text.contains("0x") || !text.hasPrefix("\\Sample.") { failures.append("\(recipe): named \(text)") }
        }
        continue
      }
      let swift = try all.filter { try predicate.evaluate($0) }.map(\.label).sorted()
      let sql = try fetch(predicate).map(\.label).sorted()
      if sql != swift {
        failures.append(
          "\(recipe): SQL \(sql.count) rows, Swift \(swift.count); only SQL: "
            + "\(Set(sql).subtracting(swift).sorted().prefix(3)), "
            + "only Swift: \(Set(swift).subtracting(sql).sorted().prefix(3))"
        )
      }
    }
    return failures
  }
}

typealias Condition = any StandardPredicateExpression<Bool>
typealias Row = PredicateExpressions.Variable<Sample>

/// One generated predicate: a recipe the RNG chose, built into a `Predicate` and described
/// for the failure message.
indirect enum Recipe: CustomStringConvertible, Sendable {
  /// Whether the predicate reads a computed property or a plain `var` anywhere.
  var readsUnstored: Bool {
    switch self {
    case .leaf(let leaf): if case .unstored = leaf { true } else { false }
    case .and(let a, let b), .or(let a, let b): a.readsUnstored || b.readsUnstored
    case .not(let a): a.readsUnstored
    case .conditional(let a, let b, let c): a.readsUnstored || b.readsUnstored || c.readsUnstored
    }
  }

  case leaf(Leaf)
  case and(Recipe, Recipe)
  case or(Recipe, Recipe)
  case not(Recipe)
  case conditional(Recipe, Recipe, Recipe)

  enum Leaf: Sendable {
    case compareInt(Int, PredicateExpressions.ComparisonOperator)
    case equalOptionalInt(Int?, negated: Bool)
    case coalescedInt(Int, PredicateExpressions.ComparisonOperator, Int)
    case intIn([Int])
    case arithmetic(Int, Int, PredicateExpressions.ComparisonOperator)
    /// `-small op value`, or `small op -value` when `literal` (the literal negated).
    case negated(Int, PredicateExpressions.ComparisonOperator, literal: Bool)
    case compareDouble(Double, PredicateExpressions.ComparisonOperator)
    case coalescedDouble(Double, PredicateExpressions.ComparisonOperator, Double)
    case equalString(String, negated: Bool)
    case compareString(String, PredicateExpressions.ComparisonOperator)
    case containsString(String)
    case startsWith(String)
    case equalOptionalString(String?, negated: Bool)
    case coalescedContains(String, String)
    case stringIn([String?])
    case bool
    case equalOptionalBool(Bool?, negated: Bool)
    case compareDate(Date, PredicateExpressions.ComparisonOperator)
    case optionalDateAfter(Date, orElse: Bool)
    case equalUUID(UUID)
    case equalOptionalUUID(UUID?, negated: Bool)
    case equalStatus(Status, negated: Bool)
    case equalPriority(Priority?, negated: Bool)
    case compareDecimal(Decimal, PredicateExpressions.ComparisonOperator)
    case equalDecimal(Decimal, negated: Bool)
    case equalOptionalDecimal(Decimal?, negated: Bool)
    case decimalIn([Decimal?])
    /// `(lower...upper).contains(decimal)`, or `..<`; `captured` passes the range as a value.
    case decimalInRange(Decimal, Decimal, closed: Bool, captured: Bool)
    case coalescedDecimal(Decimal, PredicateExpressions.ComparisonOperator, Decimal)
    /// `decimal <op> value <comparison> other`, or with the optional decimal as the operand.
    case decimalArithmetic(
      PredicateExpressions.ArithmeticOperator, Decimal, PredicateExpressions.ComparisonOperator, Decimal,
      attributes: Bool)
    /// `-decimal op value`.
    case negatedDecimal(PredicateExpressions.ComparisonOperator, Decimal)
    /// A computed property or a plain `var` (`Sample.shout` and the rest), compared with a value.
    case unstored(Unstored, String)

    enum Unstored: Sendable, CaseIterable {
      case shout, cappedInt, labelOrNone, isBig, plain, placeLabel
    }
    /// `decimal op (optionalDecimal ?? fallback)`: two attributes.
    case decimalAgainstOptional(PredicateExpressions.ComparisonOperator, Decimal)
    /// `optionalDecimal.flatMap { $0 > value } ?? orElse`.
    case optionalDecimalAbove(Decimal, orElse: Bool)
    case intInRange(Int, Int, closed: Bool, captured: Bool)
    case stringInRange(String, String, closed: Bool, captured: Bool)
    /// The elements of the composite `place`, as `#Predicate` writes them: `$0.place.city`.
    case compareCity(String, PredicateExpressions.ComparisonOperator)
    case equalCode(Int?, negated: Bool)
    case compareHeight(Double, PredicateExpressions.ComparisonOperator)
  }

  var description: String {
    switch self {
    case .leaf(let leaf): "\(leaf)"
    case .and(let a, let b): "(\(a) && \(b))"
    case .or(let a, let b): "(\(a) || \(b))"
    case .not(let a): "!(\(a))"
    case .conditional(let a, let b, let c): "(\(a) ? \(b) : \(c))"
    }
  }

  static func random(depth: Int, using rng: inout SeededGenerator) -> Recipe {
    if depth == 0 || Int.random(in: 0..<10, using: &rng) < 4 { return .leaf(.random(using: &rng)) }
    switch Int.random(in: 0..<7, using: &rng) {
    case 0, 1: return .and(random(depth: depth - 1, using: &rng), random(depth: depth - 1, using: &rng))
    case 2, 3: return .or(random(depth: depth - 1, using: &rng), random(depth: depth - 1, using: &rng))
    case 4, 5: return .not(random(depth: depth - 1, using: &rng))
    default:
      return .conditional(
        random(depth: depth - 1, using: &rng), random(depth: depth - 1, using: &rng),
        random(depth: depth - 1, using: &rng))
    }
  }

  var predicate: Predicate<Sample> {
    Predicate<Sample> { row in build(row) }
  }

  func build(_ row: Row) -> Condition {
    switch self {
    case .leaf(let leaf): leaf.build(row)
    case .and(let a, let b): Build.and(a.build(row), b.build(row))
    case .or(let a, let b): Build.or(a.build(row), b.build(row))
    case .not(let a): Build.not(a.build(row))
    case .conditional(let a, let b, let c): Build.conditional(a.build(row), b.build(row), c.build(row))
    }
  }
}

extension Recipe.Leaf {
  static func random(using rng: inout SeededGenerator) -> Recipe.Leaf {
    func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
    let operators: [PredicateExpressions.ComparisonOperator] = [
      .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual,
    ]
    let negated = Bool.random(using: &rng)
    switch Int.random(in: 0..<40, using: &rng) {
    case 0: return .compareInt(pick(Pools.ints), pick(operators))
    case 1: return .equalOptionalInt(Bool.random(using: &rng) ? nil : pick(Pools.ints), negated: negated)
    case 2: return .coalescedInt(pick(Pools.ints), pick(operators), pick(Pools.ints))
    case 3: return .intIn((0..<Int.random(in: 0...3, using: &rng)).map { _ in pick(Pools.ints) })
    case 4: return .arithmetic(pick(Pools.smalls), pick(Pools.smalls), pick(operators))
    case 5: return .compareDouble(pick(Pools.doubles.filter(\.isFinite)), pick(operators))
    case 6: return .coalescedDouble(pick(Pools.doubles.filter(\.isFinite)), pick(operators), pick(Pools.doubles))
    case 7: return .equalString(pick(Pools.strings), negated: negated)
    case 8: return .compareString(pick(Pools.strings), pick(operators))
    case 9: return .containsString(pick(Pools.strings))
    case 10: return .startsWith(pick(Pools.strings))
    case 11: return .equalOptionalString(Bool.random(using: &rng) ? nil : pick(Pools.strings), negated: negated)
    case 12: return .coalescedContains(pick(Pools.strings), pick(Pools.strings))
    case 13:
      return .stringIn(
        (0..<Int.random(in: 0...3, using: &rng)).map { _ in Bool.random(using: &rng) ? nil : pick(Pools.strings) })
    case 14: return .bool
    case 15: return .equalOptionalBool(pick([nil, true, false]), negated: negated)
    case 16: return .compareDate(pick(Pools.dates), pick(operators))
    case 17: return .optionalDateAfter(pick(Pools.dates), orElse: Bool.random(using: &rng))
    case 18: return .equalUUID(pick(Pools.uuids))
    case 19: return .equalOptionalUUID(Bool.random(using: &rng) ? nil : pick(Pools.uuids), negated: negated)
    case 20: return .equalStatus(pick(Pools.statuses), negated: negated)
    case 21: return .negated(pick(Pools.smalls), pick(operators), literal: Bool.random(using: &rng))
    case 22: return .equalPriority(pick(Pools.priorities), negated: negated)
    case 23: return .compareDecimal(pick(Pools.decimals), pick(operators))
    case 24: return .equalDecimal(pick(Pools.decimals), negated: negated)
    case 25: return .equalOptionalDecimal(Bool.random(using: &rng) ? nil : pick(Pools.decimals), negated: negated)
    case 26:
      return .decimalIn(
        (0..<Int.random(in: 0...3, using: &rng)).map { _ in Bool.random(using: &rng) ? nil : pick(Pools.decimals) })
    case 27:
      // Swift stops the program for a range whose lower bound is above its upper one.
      let (a, b) = (pick(Pools.decimals), pick(Pools.decimals))
      return .decimalInRange(
        min(a, b), max(a, b), closed: Bool.random(using: &rng), captured: Bool.random(using: &rng))
    case 28: return .coalescedDecimal(pick(Pools.decimals), pick(operators), pick(Pools.decimals))
    case 29:
      // Foundation's `*` stops the program on a product whose exponents add up below -128
      // (99.99 × 10^-127): multipliers have exponents of -1 and up, and attributes are not
      // multiplied by each other.
      let attributes = Bool.random(using: &rng)
      let op: PredicateExpressions.ArithmeticOperator = pick(
        attributes ? [.add, .subtract] : [.add, .subtract, .multiply])
      return .decimalArithmetic(
        op, pick(op == .multiply ? Pools.multipliers : Pools.decimals), pick(operators), pick(Pools.decimals),
        attributes: attributes)
    case 30: return .negatedDecimal(pick(operators), pick(Pools.decimals))
    case 31: return .decimalAgainstOptional(pick(operators), pick(Pools.decimals))
    case 32: return .optionalDecimalAbove(pick(Pools.decimals), orElse: Bool.random(using: &rng))
    case 34, 35: return .unstored(pick(Unstored.allCases), pick(Pools.strings))
    case 33:
      let (a, b) = (pick(Pools.ints), pick(Pools.ints))
      return .intInRange(min(a, b), max(a, b), closed: Bool.random(using: &rng), captured: Bool.random(using: &rng))
    case 37: return .compareCity(pick(Pools.strings), pick(operators))
    case 38: return .equalCode(Bool.random(using: &rng) ? nil : pick(Pools.ints), negated: negated)
    case 39: return .compareHeight(pick(Pools.doubles.filter(\.isFinite)), pick(operators))
    default:
      let (a, b) = (pick(Pools.strings), pick(Pools.strings))
      return .stringInRange(min(a, b), max(a, b), closed: Bool.random(using: &rng), captured: Bool.random(using: &rng))
    }
  }

  func build(_ row: Row) -> Condition {
    switch self {
    case .unstored(let property, let text):
      switch property {
      case .shout: Build.equal(row, \.shout, text, negated: false)
      case .cappedInt: Build.compare(row, \.cappedInt, .lessThan, text.count)
      case .labelOrNone: Build.equal(row, \.labelOrNone, text, negated: true)
      case .isBig: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.isBig)
      case .plain: Build.equal(row, \.plain, text.count, negated: false)
      case .placeLabel:
        PredicateExpressions.Equal(
          lhs: PredicateExpressions.KeyPath(root: Build.place(row), keyPath: \Place.label),
          rhs: PredicateExpressions.Value(text))
      }
    case .compareCity(let value, let op):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.KeyPath(root: Build.place(row), keyPath: \Place.city),
        rhs: PredicateExpressions.Value(value), op: op)
    case .equalCode(let value, let negated):
      negated
        ? PredicateExpressions.NotEqual(
          lhs: PredicateExpressions.KeyPath(root: Build.place(row), keyPath: \Place.code),
          rhs: PredicateExpressions.Value(value))
        : PredicateExpressions.Equal(
          lhs: PredicateExpressions.KeyPath(root: Build.place(row), keyPath: \Place.code),
          rhs: PredicateExpressions.Value(value))
    case .compareHeight(let value, let op):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.KeyPath(
          root: PredicateExpressions.KeyPath(root: Build.place(row), keyPath: \Place.geo), keyPath: \Place.Geo.height),
        rhs: PredicateExpressions.Value(value), op: op)
    case .compareInt(let value, let op): Build.compare(row, \.int, op, value)
    case .equalOptionalInt(let value, let negated): Build.equal(row, \.optionalInt, value, negated: negated)
    case .coalescedInt(let fallback, let op, let value):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.NilCoalesce(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalInt),
          rhs: PredicateExpressions.Value(fallback)),
        rhs: PredicateExpressions.Value(value), op: op)
    case .intIn(let values):
      PredicateExpressions.SequenceContains(
        sequence: PredicateExpressions.Value(values),
        element: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.int))
    case .arithmetic(let add, let value, let op):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.Arithmetic(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.small),
          rhs: PredicateExpressions.Value(add), op: add % 2 == 0 ? .add : .multiply),
        rhs: PredicateExpressions.Value(value), op: op)
    case .negated(let value, let op, let literal):
      literal
        ? PredicateExpressions.Comparison(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.small),
          rhs: PredicateExpressions.UnaryMinus(PredicateExpressions.Value(value)), op: op)
        : PredicateExpressions.Comparison(
          lhs: PredicateExpressions.UnaryMinus(PredicateExpressions.KeyPath(root: row, keyPath: \Sample.small)),
          rhs: PredicateExpressions.Value(value), op: op)
    case .compareDouble(let value, let op): Build.compare(row, \.double, op, value)
    case .coalescedDouble(let fallback, let op, let value):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.NilCoalesce(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDouble),
          rhs: PredicateExpressions.Value(fallback)),
        rhs: PredicateExpressions.Value(value), op: op)
    case .equalString(let value, let negated): Build.equal(row, \.string, value, negated: negated)
    case .compareString(let value, let op): Build.compare(row, \.string, op, value)
    case .containsString(let value):
      PredicateExpressions.CollectionContainsCollection(
        base: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.string), other: PredicateExpressions.Value(value)
      )
    case .startsWith(let value):
      PredicateExpressions.SequenceStartsWith(
        base: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.string),
        prefix: PredicateExpressions.Value(value))
    case .equalOptionalString(let value, let negated): Build.equal(row, \.optionalString, value, negated: negated)
    case .coalescedContains(let fallback, let value):
      PredicateExpressions.CollectionContainsCollection(
        base: PredicateExpressions.NilCoalesce(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalString),
          rhs: PredicateExpressions.Value(fallback)),
        other: PredicateExpressions.Value(value))
    case .stringIn(let values):
      PredicateExpressions.SequenceContains(
        sequence: PredicateExpressions.Value(values),
        element: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalString))
    case .bool: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.bool)
    case .equalOptionalBool(let value, let negated): Build.equal(row, \.optionalBool, value, negated: negated)
    case .compareDate(let value, let op): Build.compare(row, \.date, op, value)
    case .optionalDateAfter(let value, let orElse):
      PredicateExpressions.NilCoalesce(
        lhs: PredicateExpressions.OptionalFlatMap(
          PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDate)
        ) { date in
          PredicateExpressions.Comparison(lhs: date, rhs: PredicateExpressions.Value(value), op: .greaterThan)
        },
        rhs: PredicateExpressions.Value(orElse))
    case .equalUUID(let value): Build.equal(row, \.uuid, value, negated: false)
    case .equalOptionalUUID(let value, let negated): Build.equal(row, \.optionalUUID, value, negated: negated)
    case .equalStatus(let value, let negated): Build.equal(row, \.status, value, negated: negated)
    case .equalPriority(let value, let negated): Build.equal(row, \.priority, value, negated: negated)
    case .compareDecimal(let value, let op): Build.compare(row, \.decimal, op, value)
    case .equalDecimal(let value, let negated): Build.equal(row, \.decimal, value, negated: negated)
    case .equalOptionalDecimal(let value, let negated): Build.equal(row, \.optionalDecimal, value, negated: negated)
    case .decimalIn(let values):
      PredicateExpressions.SequenceContains(
        sequence: PredicateExpressions.Value(values),
        element: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDecimal))
    case .decimalInRange(let lower, let upper, let closed, let captured):
      Build.range(row, \.decimal, lower, upper, closed: closed, captured: captured)
    case .coalescedDecimal(let fallback, let op, let value):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.NilCoalesce(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDecimal),
          rhs: PredicateExpressions.Value(fallback)),
        rhs: PredicateExpressions.Value(value), op: op)
    case .decimalArithmetic(let arithmetic, let operand, let op, let value, let attributes):
      attributes
        ? PredicateExpressions.Comparison(
          lhs: PredicateExpressions.Arithmetic(
            lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.decimal),
            rhs: PredicateExpressions.NilCoalesce(
              lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDecimal),
              rhs: PredicateExpressions.Value(operand)), op: arithmetic),
          rhs: PredicateExpressions.Value(value), op: op)
        : PredicateExpressions.Comparison(
          lhs: PredicateExpressions.Arithmetic(
            lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.decimal),
            rhs: PredicateExpressions.Value(operand), op: arithmetic),
          rhs: PredicateExpressions.Value(value), op: op)
    case .negatedDecimal(let op, let value):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.UnaryMinus(PredicateExpressions.KeyPath(root: row, keyPath: \Sample.decimal)),
        rhs: PredicateExpressions.Value(value), op: op)
    case .decimalAgainstOptional(let op, let fallback):
      PredicateExpressions.Comparison(
        lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.decimal),
        rhs: PredicateExpressions.NilCoalesce(
          lhs: PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDecimal),
          rhs: PredicateExpressions.Value(fallback)), op: op)
    case .optionalDecimalAbove(let value, let orElse):
      PredicateExpressions.NilCoalesce(
        lhs: PredicateExpressions.OptionalFlatMap(
          PredicateExpressions.KeyPath(root: row, keyPath: \Sample.optionalDecimal)
        ) { decimal in
          PredicateExpressions.Comparison(lhs: decimal, rhs: PredicateExpressions.Value(value), op: .greaterThan)
        },
        rhs: PredicateExpressions.Value(orElse))
    case .intInRange(let lower, let upper, let closed, let captured):
      Build.range(row, \.int, lower, upper, closed: closed, captured: captured)
    case .stringInRange(let lower, let upper, let closed, let captured):
      Build.range(row, \.string, lower, upper, closed: closed, captured: captured)
    }
  }
}

/// Builds expressions from existentials by opening them, as the `#Predicate` macro would with
/// concrete types.
enum Build {
  /// `$0.place`, the composite, as `#Predicate` writes the start of `$0.place.city`.
  static func place(_ row: Row) -> PredicateExpressions.KeyPath<Row, Place> {
    PredicateExpressions.KeyPath(root: row, keyPath: \Sample.place)
  }
  static func compare<Value: Comparable & Codable & Sendable>(
    _ row: Row, _ keyPath: KeyPath<Sample, Value> & Sendable, _ op: PredicateExpressions.ComparisonOperator,
    _ value: Value
  ) -> Condition {
    PredicateExpressions.Comparison(
      lhs: PredicateExpressions.KeyPath(root: row, keyPath: keyPath), rhs: PredicateExpressions.Value(value), op: op)
  }

  static func equal<Value: Equatable & Codable & Sendable>(
    _ row: Row, _ keyPath: KeyPath<Sample, Value> & Sendable, _ value: Value, negated: Bool
  ) -> Condition {
    let lhs = PredicateExpressions.KeyPath(root: row, keyPath: keyPath)
    let rhs = PredicateExpressions.Value(value)
    return negated ? PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs) : PredicateExpressions.Equal(lhs: lhs, rhs: rhs)
  }

  /// `(lower...upper).contains(keyPath)` or `..<`, the range built in the predicate or
  /// captured as a value.
  static func range<Value: Comparable & Codable & Sendable>(
    _ row: Row, _ keyPath: KeyPath<Sample, Value> & Sendable, _ lower: Value, _ upper: Value, closed: Bool,
    captured: Bool
  ) -> Condition {
    let element = PredicateExpressions.KeyPath(root: row, keyPath: keyPath)
    let (low, high) = (PredicateExpressions.Value(lower), PredicateExpressions.Value(upper))
    switch (closed, captured) {
    case (true, false):
      return PredicateExpressions.RangeExpressionContains(
        range: PredicateExpressions.ClosedRange(lower: low, upper: high), element: element)
    case (false, false):
      return PredicateExpressions.RangeExpressionContains(
        range: PredicateExpressions.Range(lower: low, upper: high), element: element)
    case (true, true):
      return PredicateExpressions.RangeExpressionContains(
        range: PredicateExpressions.Value(lower...upper), element: element)
    case (false, true):
      return PredicateExpressions.RangeExpressionContains(
        range: PredicateExpressions.Value(lower..<upper), element: element)
    }
  }

  static func and(_ a: Condition, _ b: Condition) -> Condition {
    func left<L: StandardPredicateExpression<Bool>>(_ l: L) -> Condition {
      func right<R: StandardPredicateExpression<Bool>>(_ r: R) -> Condition {
        PredicateExpressions.Conjunction(lhs: l, rhs: r)
      }
      return right(b)
    }
    return left(a)
  }

  static func or(_ a: Condition, _ b: Condition) -> Condition {
    func left<L: StandardPredicateExpression<Bool>>(_ l: L) -> Condition {
      func right<R: StandardPredicateExpression<Bool>>(_ r: R) -> Condition {
        PredicateExpressions.Disjunction(lhs: l, rhs: r)
      }
      return right(b)
    }
    return left(a)
  }

  static func not(_ a: Condition) -> Condition {
    func open<W: StandardPredicateExpression<Bool>>(_ w: W) -> Condition { PredicateExpressions.Negation(w) }
    return open(a)
  }

  static func conditional(_ test: Condition, _ yes: Condition, _ no: Condition) -> Condition {
    func first<T: StandardPredicateExpression<Bool>>(_ t: T) -> Condition {
      func second<A: StandardPredicateExpression<Bool>>(_ a: A) -> Condition {
        func third<B: StandardPredicateExpression<Bool>>(_ b: B) -> Condition {
          PredicateExpressions.Conditional(test: t, trueBranch: a, falseBranch: b)
        }
        return third(no)
      }
      return second(yes)
    }
    return first(test)
  }
}

@Suite struct PredicateDifferentialTests {
  /// 1,000 generated predicates over 80 rows of random data in the test command; more with
  /// `TYPEDSTORE_PREDICATE_CASES`, and a failure reruns with `TYPEDSTORE_PREDICATE_SEED`.
  @Test func sqlSelectsExactlyWhatSwiftsEvaluationSelects() async throws {
    let environment = ProcessInfo.processInfo.environment
    let cases = environment["TYPEDSTORE_PREDICATE_CASES"].flatMap(Int.init) ?? 1_000
    let seed = environment["TYPEDSTORE_PREDICATE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    print("predicate differential test: seed \(seed), \(cases) cases (TYPEDSTORE_PREDICATE_SEED=\(seed) reruns them)")
    var rng = SeededGenerator(state: seed)
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Sample.self))
    let rows = 80
    var data = SeededGenerator(state: rng.next())
    try await container.performBackgroundTask { [data] context in
      var rng = data
      Pools.fill(rows: rows, using: &rng) { Sample(context: context) }
      try context.save()
    }
    // Another tool spells a third of the decimals differently (1.0 for 1, +005, 2e0): the
    // values read back the same, and SQL must compare them by value too.
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
    let rewrite = try connection.statement(
      #"UPDATE "Sample" SET "decimal" = ?, "optionalDecimal" = ? WHERE "label" = ?"#)
    let spelled = try await container.newBackgroundContext().perform { context in
      try context.fetch(FetchRequest<Sample>()).enumerated().filter { $0.offset % 3 == 0 }.map { index, sample in
        (
          sample.label, Pools.respelled(sample.decimal, index / 3),
          sample.optionalDecimal.map { Pools.respelled($0, index / 3 + 1) }
        )
      }
    }
    for (label, decimal, optionalDecimal) in spelled {
      rewrite.reset()
      rewrite.bind(decimal, at: 1)
      if let optionalDecimal { rewrite.bind(optionalDecimal, at: 2) } else { rewrite.bindNull(2) }
      rewrite.bind(label, at: 3)
      try rewrite.run()
    }
    rewrite.reset()
    _ = data.next()
    let recipes = (0..<cases).map { _ in Recipe.random(depth: 3, using: &rng) }
    let failures = try await container.newBackgroundContext().perform { context -> [String] in
      try Recipe.failures(recipes, all: context.fetch(FetchRequest<Sample>())) { predicate in
        try context.fetch(FetchRequest(predicate: predicate))
      }
    }
    #expect(failures.isEmpty, "seed \(seed): \(failures.count) of \(cases) differ; first: \(failures.prefix(5))")
  }
}
