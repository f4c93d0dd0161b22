import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct AttributeRoundTripTests {
  /// Saves an object set up by `fill` in one context and reads it back in a fresh one.
  private func roundTrip(
    variant: String, function: String = #function, _ fill: @escaping @Sendable (AllTypes) -> Void,
    check: @escaping @Sendable (AllTypes) -> Void
  ) async throws {
    let container = try PersistentContainer.makeTest(model: allTypesModel, variant: variant, function: function)
    let id = try await container.performBackgroundTask { context in
      let object = AllTypes(context: context)
      fill(object)
      try context.save()
      return object.managedID
    }
    try await container.newBackgroundContext().perform { context in
      check(try context.existingObject(with: id))
    }
  }

  @Test func everyTypeRoundTripsTypicalValues() async throws {
    try await roundTrip(variant: "typical") { o in
      o.bool = true
      o.int = 42
      o.int16 = -7
      o.int32 = 70_000
      o.int64 = 1 << 40
      o.double = 3.25
      o.float = 1.5
      o.string = "héllo wörld 👋"
      o.date = Date(timeIntervalSince1970: 1_700_000_000.123456)
      o.data = Data([0, 1, 2, 255])
      o.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
      o.url = URL(string: "https://example.com/a%20b?q=1#frag")!
      o.decimal = Decimal(string: "12345678901234567890.123456789")!
      o.status = .published
      o.options = Options(pinned: true, tags: ["a", "b"])
    } check: { o in
      #expect(o.bool == true)
      #expect(o.int == 42)
      #expect(o.int16 == -7)
      #expect(o.int32 == 70_000)
      #expect(o.int64 == 1 << 40)
      #expect(o.double == 3.25)
      #expect(o.float == 1.5)
      #expect(o.string == "héllo wörld 👋")
      #expect(o.date == Date(timeIntervalSince1970: 1_700_000_000.123456))
      #expect(o.data == Data([0, 1, 2, 255]))
      #expect(o.uuid == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)
      #expect(o.url == URL(string: "https://example.com/a%20b?q=1#frag")!)
      #expect(o.decimal == Decimal(string: "12345678901234567890.123456789")!)
      #expect(o.status == .published)
      #expect(o.options == Options(pinned: true, tags: ["a", "b"]))
    }
  }

  @Test func everyTypeRoundTripsExtremes() async throws {
    let bigData = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    try await roundTrip(variant: "extremes") { o in
      o.int = .min
      o.int16 = .max
      o.int32 = .min
      o.int64 = .max
      o.double = -.greatestFiniteMagnitude
      o.float = .leastNonzeroMagnitude
      o.string = "nul\u{0}inside"
      o.date = .distantFuture
      o.data = bigData
      o.decimal = Decimal(string: "-0.000000000000000000000000000001")!
      o.optionalDouble = .infinity
      o.optionalDate = .distantPast
      o.optionalString = ""
      o.optionalData = Data()
      o.optionalInt16 = .min
    } check: { o in
      #expect(o.int == .min)
      #expect(o.int16 == .max)
      #expect(o.int32 == .min)
      #expect(o.int64 == .max)
      #expect(o.double == -.greatestFiniteMagnitude)
      #expect(o.float == .leastNonzeroMagnitude)
      #expect(o.string == "nul\u{0}inside")
      #expect(o.date == .distantFuture)
      #expect(o.data == bigData)
      #expect(o.decimal == Decimal(string: "-0.000000000000000000000000000001")!)
      #expect(o.optionalDouble == .infinity)
      #expect(o.optionalDate == .distantPast)
      #expect(o.optionalString == "")
      #expect(o.optionalData == Data())
      #expect(o.optionalInt16 == .min)
    }
  }

  @Test func optionalsRoundTripNilAndValues() async throws {
    try await roundTrip(variant: "nil") { _ in
    } check: { o in
      #expect(o.optionalBool == nil)
      #expect(o.optionalInt == nil)
      #expect(o.optionalInt16 == nil)
      #expect(o.optionalInt32 == nil)
      #expect(o.optionalInt64 == nil)
      #expect(o.optionalDouble == nil)
      #expect(o.optionalFloat == nil)
      #expect(o.optionalString == nil)
      #expect(o.optionalDate == nil)
      #expect(o.optionalData == nil)
      #expect(o.optionalUUID == nil)
      #expect(o.optionalURL == nil)
      #expect(o.optionalDecimal == nil)
      #expect(o.optionalPriority == nil)
      #expect(o.optionalOptions == nil)
    }
    try await roundTrip(variant: "values") { o in
      o.optionalBool = false
      o.optionalInt = 0
      o.optionalInt32 = -1
      o.optionalInt64 = 5
      o.optionalFloat = -2.5
      o.optionalUUID = UUID(uuidString: "00000000-0000-0000-0000-000000000001")
      o.optionalURL = URL(string: "file:///tmp/x")
      o.optionalDecimal = 1.5
      o.optionalPriority = .high
      o.optionalOptions = Options(pinned: false, tags: [])
    } check: { o in
      #expect(o.optionalBool == false)
      #expect(o.optionalInt == 0)
      #expect(o.optionalInt32 == -1)
      #expect(o.optionalInt64 == 5)
      #expect(o.optionalFloat == -2.5)
      #expect(o.optionalUUID == UUID(uuidString: "00000000-0000-0000-0000-000000000001"))
      #expect(o.optionalURL == URL(string: "file:///tmp/x"))
      #expect(o.optionalDecimal == 1.5)
      #expect(o.optionalPriority == .high)
      #expect(o.optionalOptions == Options(pinned: false, tags: []))
    }
  }

  @Test func storedFormIsTheDocumentedOne() async throws {
    let container = try PersistentContainer.makeTest(model: allTypesModel)
    try await container.performBackgroundTask { context in
      let o = AllTypes(context: context)
      o.bool = true
      o.date = Date(timeIntervalSinceReferenceDate: 10.5)
      o.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
      o.status = .archived
      o.optionalPriority = .high
      o.options = Options(pinned: true, tags: ["x"])
      try context.save()
    }
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readOnly)
    let row = try connection.statement(
      "SELECT typeof(bool), bool, typeof(date), date, typeof(uuid), hex(uuid), status, optionalPriority, options, "
        + "typeof(decimal), (SELECT name FROM _entities WHERE code = _entity), _version FROM \"AllTypes\""
    )
    #expect(try row.step())
    #expect(row.string(0) == "integer")
    #expect(row.int64(1) == 1)
    #expect(row.string(2) == "real")
    #expect(row.double(3) == 10.5)
    #expect(row.string(4) == "blob")
    #expect(row.string(5) == "E621E1F8C36C495A93FC0C247A3E6E5F")
    #expect(row.string(6) == "archived")
    #expect(row.int64(7) == 2)
    #expect(row.string(8) == #"{"pinned":true,"tags":["x"]}"#)
    #expect(row.string(9) == "text")
    #expect(row.string(10) == "AllTypes")
    #expect(row.int64(11) == 1)
  }

  /// Decimals of every shape: signs, zero, 38 and 39 digits, the ends of the exponent, results
  /// of arithmetic, NaN, and 2,000 random ones (up to 39 digits, any exponent a Decimal has).
  static func decimals() -> [Decimal] {
    let posix = Locale(identifier: "en_US_POSIX")
    var values: [Decimal] =
      [
        "0", "-0", "1", "-1", "0.1", "-0.5", "19.99", "1e100", "-1e-100", "0.00000000000000000000000000000001",
        "12345678901234567890123456789012345678", "340282366920938463463374607431768211455",
        "-0.12345678901234567890123456789012345678",
      ].compactMap { Decimal(string: $0, locale: posix) } + [
        .greatestFiniteMagnitude, .leastFiniteMagnitude, .leastNonzeroMagnitude, -Decimal.leastNonzeroMagnitude, .pi,
        Decimal(1) / 3, Decimal(2) / 3, Decimal(string: "0.1", locale: posix)! * 3, Decimal(Int64.min),
        Decimal(UInt64.max),
        Decimal(Double.leastNonzeroMagnitude), Decimal(0.1), .nan,
      ]
    var rng = SeededGenerator(state: 42)
    while values.count < 2_000 {
      let count = Int.random(in: 1...39, using: &rng)
      let digits = String((0..<count).map { _ in "0123456789".randomElement(using: &rng)! })
      guard count < 39 || digits <= "340282366920938463463374607431768211455",
        let significand = Decimal(string: (Bool.random(using: &rng) ? "-" : "") + digits, locale: posix)
      else { continue }
      let value = Decimal(sign: .plus, exponent: Int.random(in: -128...127, using: &rng), significand: significand)
      if !value.isNaN { values.append(value) }
    }
    return values
  }

  @Test func everyDecimalRoundTripsExactlyAsItsDescription() async throws {
    let values = Self.decimals()
    let container = try PersistentContainer.makeTest(model: allTypesModel)
    let ids = try await container.performBackgroundTask { context in
      let objects = values.map { value in
        let object = AllTypes(context: context)
        object.decimal = value
        object.optionalDecimal = value
        return object
      }
      try context.save()
      return objects.map(\.managedID)
    }
    let read = try await container.newBackgroundContext().perform { context in
      try ids.map { id in
        let object = try context.existingObject(with: id)
        return (object.decimal, object.optionalDecimal)
      }
    }
    var differences: [String] = []
    for (value, (back, optional)) in zip(values, read) {
      let same = value.isNaN ? back.isNaN && optional?.isNaN == true : back == value && optional == value
      if !same || back.description != value.description { differences.append("\(value) read as \(back)") }
    }
    #expect(differences.isEmpty, "\(differences.count) differ: \(differences.prefix(5))")
    // The stored text is the description: plain digits and a point, whatever the locale.
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readOnly)
    let rows = try connection.statement(#"SELECT "decimal", typeof("decimal") FROM "AllTypes" ORDER BY pk"#)
    var stored: [String] = []
    while try rows.step() {
      #expect(rows.string(1) == "text")
      stored.append(rows.string(0))
    }
    rows.reset()
    #expect(stored == values.map(\.description))
    #expect(stored.allSatisfy { $0 == "NaN" || $0.allSatisfy { "-0123456789.".contains($0) } })
    // Equal values are the same text, however they were computed.
    let posix = Locale(identifier: "en_US_POSIX")
    let one = Decimal(1)
    for same in [Decimal(5) / 10 + Decimal(5) / 10, Decimal(string: "1.000", locale: posix)!, one * 10 / 10, -(-one)] {
      #expect(same == one && same.description == one.description)
    }
  }
}
