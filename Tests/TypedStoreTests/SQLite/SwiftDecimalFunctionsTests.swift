import Foundation
import Testing

@testable import TypedStore

/// The `SWIFT_DECIMAL` collation and the `swift_decimal_` functions, checked on texts as
/// TypedStore writes them and as another tool might, against Foundation's own reading of each
/// text and Swift's own `Decimal` operators.
@Suite struct SwiftDecimalFunctionsTests {
  /// Values of every kind: zero, signs, fractions, 38 and 39 digits, the extremes of the
  /// exponent, and NaN.
  static let values: [Decimal] =
    [
      "0", "1", "-1", "1.5", "-1.5", "0.1", "0.2", "0.3", "9", "10", "11", "99.99", "100", "-100",
      "0.000001", "-0.000001", "12345678901234567890.123456789", "-12345678901234567890.123456789",
      "0.12345678901234567890123456789012345678", "340282366920938463463374607431768211455",
      "-340282366920938463463374607431768211455", "1e100", "-1e100", "1e-100", "123456789e90",
    ].compactMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } + [
      .greatestFiniteMagnitude, .leastFiniteMagnitude, .leastNonzeroMagnitude, -Decimal.leastNonzeroMagnitude,
      .nan,
    ]

  /// Other spellings of some of those values, as another tool could write them: each reads as
  /// the value next to it.
  static let spellings: [(String, Decimal)] = [
    ("1.0", 1), ("1.00", 1), ("+1", 1), ("01", 1), ("1e0", 1), ("10e-1", 1), ("0.1E1", 1), ("-0", 0), ("-0.0", 0),
    ("+.5", Decimal(5) / 10), ("5.", 5), ("1E+2", 100), ("-1.50", Decimal(-15) / 10), ("0.10", Decimal(1) / 10),
  ]

  /// Text that is not a decimal: the collation puts it before NaN, in byte order.
  static let notDecimals = ["", "abc", "1abc", " 1", "-", ".", "1e", "nan", "e5", "1.2.3", "1e200"]

  /// Every text, with the value Foundation reads it as (nil for what is not a decimal).
  static var texts: [(text: String, value: Decimal?)] {
    values.map { ($0.description, $0) } + spellings.map { ($0.0, $0.1) } + notDecimals.map { ($0, nil) }
  }

  private func connection() throws -> SQLiteConnection {
    try SQLiteConnection(path: ":memory:", mode: .readWriteCreate)
  }

  /// How Swift orders two texts' values, as the collation must: Swift's `Decimal` `<` and
  /// `==`; text that is not a decimal before every decimal, by its bytes.
  private func swiftOrder(_ a: (text: String, value: Decimal?), _ b: (text: String, value: Decimal?)) -> Int {
    switch (a.value, b.value) {
    case (let x?, let y?): x == y ? 0 : (x < y ? -1 : 1)
    case (nil, nil): a.text == b.text ? 0 : (Array(a.text.utf8).lexicographicallyPrecedes(b.text.utf8) ? -1 : 1)
    case (nil, _?): -1
    case (_?, nil): 1
    }
  }

  @Test func collationComparesEveryPairAsSwiftComparesTheirDecimals() throws {
    // The fixtures first: each spelling reads, in Foundation, as the value beside it.
    for (text, value) in Self.spellings {
      #expect(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) == value, "\(text)")
    }
    let connection = try connection()
    let statement = try connection.statement(
      "SELECT ?1 < ?2 COLLATE SWIFT_DECIMAL, ?1 = ?2 COLLATE SWIFT_DECIMAL, ?1 > ?2 COLLATE SWIFT_DECIMAL")
    var differences: [String] = []
    for a in Self.texts {
      for b in Self.texts {
        statement.reset()
        statement.bind(a.text, at: 1)
        statement.bind(b.text, at: 2)
        #expect(try statement.step())
        let sql = statement.int64(0) == 1 ? -1 : (statement.int64(1) == 1 ? 0 : 1)
        #expect(statement.int64(0) + statement.int64(1) + statement.int64(2) == 1)
        if sql != swiftOrder(a, b) { differences.append("\(a.text) vs \(b.text): SQL \(sql)") }
      }
    }
    statement.reset()
    #expect(differences.isEmpty, "\(differences.count) pairs differ: \(differences.prefix(10))")
  }

  @Test func orderByTheCollationSortsAsSwiftSortsTheDecimals() throws {
    let connection = try connection()
    try connection.execute("CREATE TABLE t (i INTEGER, v TEXT)")
    var rng = SeededGenerator(state: 22)
    let shuffled = Self.texts.shuffled(using: &rng)
    for (index, entry) in shuffled.enumerated() {
      let insert = try connection.statement("INSERT INTO t VALUES (?, ?)")
      insert.bind(Int64(index), at: 1)
      insert.bind(entry.text, at: 2)
      try insert.run()
    }
    let select = try connection.statement("SELECT i FROM t ORDER BY v COLLATE SWIFT_DECIMAL, i")
    var sql: [Int] = []
    while try select.step() { sql.append(Int(select.int64(0))) }
    select.reset()
    let swift = shuffled.indices.sorted { left, right in
      let order = swiftOrder(shuffled[left], shuffled[right])
      return order != 0 ? order < 0 : left < right
    }
    #expect(sql.map { shuffled[$0].text } == swift.map { shuffled[$0].text })
    // NaN first among the decimals, equal to itself; what is not a decimal before it.
    let firstDecimal = try #require(sql.first { shuffled[$0].value != nil })
    #expect(shuffled[firstDecimal].value?.isNaN == true)
    #expect(sql.prefix(Self.notDecimals.count).allSatisfy { shuffled[$0].value == nil })
  }

  @Test func arithmeticFunctionsGiveSwiftsOperatorsResults() throws {
    let connection = try connection()
    let statement = try connection.statement(
      "SELECT swift_decimal_add(?1, ?2), swift_decimal_subtract(?1, ?2), swift_decimal_negate(?1)")
    let product = try connection.statement("SELECT swift_decimal_multiply(?1, ?2)")
    let operands = Self.texts.filter { $0.value != nil }
    var differences: [String] = []
    var refused = 0
    for a in operands {
      for b in operands {
        guard let x = a.value, let y = b.value else { continue }
        statement.reset()
        statement.bind(a.text, at: 1)
        statement.bind(b.text, at: 2)
        #expect(try statement.step())
        let expected = [x + y, x - y, -x].map(\.description)
        let got = (0..<3).map { statement.string(Int32($0)) }
        if got != expected { differences.append("\(a.text), \(b.text): \(got) instead of \(expected)") }
        product.reset()
        product.bind(a.text, at: 1)
        product.bind(b.text, at: 2)
        if x.exponent + y.exponent < -128 {
          // Foundation's `*` traps on these (99.99 × 10^-127): the statement fails instead.
          #expect(throws: SQLiteError.self) { _ = try product.step() }
          refused += 1
        } else {
          #expect(try product.step())
          if product.string(0) != (x * y).description { differences.append("\(a.text) * \(b.text)") }
        }
      }
    }
    statement.reset()
    product.reset()
    #expect(refused > 0)
    #expect(differences.isEmpty, "\(differences.count) differ: \(differences.prefix(5))")
    #expect(try connection.scalarText("SELECT swift_decimal_add(NULL, '1')") == nil)
    #expect(try connection.scalarText("SELECT swift_decimal_negate(NULL)") == nil)
    let error = #expect(throws: SQLiteError.self) { try connection.scalarText("SELECT swift_decimal_add('1abc', '1')") }
    #expect(error?.message.contains("1abc is not a decimal") == true)
  }

  /// `swift_decimal_sum` and `swift_decimal_avg` of these values (nil for NULL).
  private func aggregates(_ values: [String?], on connection: SQLiteConnection) throws -> (
    sum: String?, average: String?
  ) {
    try connection.execute("CREATE TABLE IF NOT EXISTS t (v TEXT); DELETE FROM t")
    for value in values {
      let statement = try connection.statement("INSERT INTO t VALUES (?)")
      if let value { statement.bind(value, at: 1) } else { statement.bindNull(1) }
      try statement.run()
    }
    let statement = try connection.statement("SELECT swift_decimal_sum(v), swift_decimal_avg(v) FROM t")
    defer { statement.reset() }
    #expect(try statement.step())
    return (statement.isNull(0) ? nil : statement.string(0), statement.isNull(1) ? nil : statement.string(1))
  }

  private func swiftSum(_ texts: [String?]) -> Decimal {
    texts.compactMap { $0.flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } }.reduce(0, +)
  }

  @Test func sumIsSwiftsSumAndAverageIsTheSumOverTheCount() throws {
    let connection = try connection()
    // Ten dimes are exactly one.
    let tenths = Array(repeating: "0.1", count: 10)
    #expect(swiftSum(tenths) == 1)
    #expect(try aggregates(tenths, on: connection) == ("1", "0.1"))
    // Thirty and more significant digits, none lost; NULLs left out.
    let long = ["1234567890123456789012345678901.25", "98765432109876543210.5", "0.26", nil]
    #expect(swiftSum(long).description == "1234567890222222221122222222112.01")
    #expect(try aggregates(long, on: connection) == (swiftSum(long).description, (swiftSum(long) / 3).description))
    // Other spellings of the same values.
    #expect(
      try aggregates(["1.0", "+2", "3e0", "-0.50"], on: connection) == ("5.5", (Decimal(55) / 10 / 4).description))
    // 39 digits, while the mantissa fits 128 bits.
    let largest = "340282366920938463463374607431768211455"
    #expect(swiftSum(["340282366920938463463374607431768211454", "1"]).description == largest)
    #expect(try aggregates(["340282366920938463463374607431768211454", "1"], on: connection).sum == largest)
    #expect(
      try aggregates([Decimal.greatestFiniteMagnitude.description], on: connection).sum
        == Decimal.greatestFiniteMagnitude.description)
    // NaN makes the sum NaN in every order.
    #expect(try aggregates(["1", "NaN", "2"], on: connection) == ("NaN", "NaN"))
    // No values: NULL, as SQL's sum and avg give.
    #expect(try aggregates([], on: connection) == (nil, nil))
    #expect(try aggregates([nil], on: connection) == (nil, nil))
    #expect(throws: SQLiteError.self) { try aggregates(["1", "abc"], on: connection) }
  }

  @Test func aSumWhoseSwiftAnswerDependsOnTheOrderFails() throws {
    let connection = try connection()
    let huge = "100000000000000000000000000000000000000"
    let values = [huge, "0.5", "-" + huge].map { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX"))! }
    // Swift: 10^38 + 0.5 has 40 digits and loses the half, so the order decides.
    #expect(values.reduce(0, +) == 0)
    #expect([values[0], values[2], values[1]].reduce(0, +) == Decimal(5) / 10)
    for texts in [
      [huge, "0.5", "-" + huge], [huge, "0.5"], ["340282366920938463463374607431768211455", "1"],
      [Decimal.greatestFiniteMagnitude.description, Decimal.greatestFiniteMagnitude.description],
    ] {
      let error = #expect(throws: SQLiteError.self) { try aggregates(texts, on: connection) }
      #expect(error?.message.contains(SwiftDecimalFunctions.orderDependentSum) == true)
    }
  }

  @Test func aSumOfManyValuesIsSwiftsSumInEveryOrder() throws {
    // 500 values of up to 12 digits from 10^-8 to 10^20: every partial sum fits a Decimal's
    // 38 digits, so Swift's `+` is exact and its order does not matter.
    let connection = try connection()
    var rng = SeededGenerator(state: 4)
    var values: [Decimal] = []
    for _ in 0..<500 {
      let digits = String(
        (0..<Int.random(in: 1...12, using: &rng)).map { _ in "0123456789".randomElement(using: &rng)! })
      let exponent = Int.random(in: -8...8, using: &rng)
      let sign = Bool.random(using: &rng) ? "-" : ""
      values.append(
        try #require(Decimal(string: "\(sign)\(digits)e\(exponent)", locale: Locale(identifier: "en_US_POSIX"))))
    }
    let total = values.reduce(0, +)
    #expect(values.shuffled(using: &rng).reduce(0, +) == total)
    #expect(values.reversed().reduce(0, +) == total)
    let (sum, average) = try aggregates(values.map(\.description), on: connection)
    #expect(sum == total.description)
    #expect(average == (total / 500).description)
  }
}
