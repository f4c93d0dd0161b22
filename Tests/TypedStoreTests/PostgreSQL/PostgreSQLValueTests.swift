import Foundation
import Testing
import TypedStore

@testable import TypedStorePostgreSQL

/// Values written to a store's tables on PostgreSQL through prepared statements read back as
/// the same `PrimitiveValue`s an SQLite store holds, and as the same Swift values, at the edges
/// of every attribute type.
@Suite struct PostgreSQLValueTests {
  /// One attribute of `AllTypes` and the Swift values it is written with.
  private struct Column: Sendable {
    var name: String
    var values: [PrimitiveValue]
    /// Decodes a read value and says whether it is the Swift value written at that index.
    var matches: @Sendable (Int, PrimitiveValue) -> Bool
  }

  private static func column<Value: AttributeValue & Equatable & Sendable>(_ name: String, _ values: [Value]) -> Column
  {
    Column(name: name, values: values.map(\.primitiveValue)) { index, read in
      (try? Value(primitiveValue: read)) == values[index]
    }
  }

  private static let columns: [Column] = [
    column("bool", [true, false, true, false, true]),
    column("int", [Int.min, Int.max, 0, -1, 42]),
    column("int16", [Int16.min, Int16.max, 0, -1, 7]),
    column("int32", [Int32.min, Int32.max, 0, -1, 70_000]),
    column("int64", [Int64.min, Int64.max, 0, -1, 1 << 40]),
    column("double", [-0.0, .infinity, -.infinity, .leastNonzeroMagnitude, 0.1 + 0.2]),
    column("float", [Float(0.1), .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.infinity, -0.0]),
    column(
      "string",
      [
        "", "e\u{301} and \u{e9}", "Robert'); DROP TABLE x; --", "\\x41 {\"a\"} \u{1F469}\u{200D}\u{1F52C}",
        String(repeating: "long ", count: 20_000),
      ]),
    column(
      "date",
      [
        Date(timeIntervalSinceReferenceDate: 1e-7), .distantPast, .distantFuture,
        Date(timeIntervalSince1970: 1_700_000_000.123456), Date(timeIntervalSinceReferenceDate: 0),
      ]),
    column(
      "data",
      [Data(), Data([0, 255]), Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), Data([92, 120])]
        + [Data("\\x00".utf8)]),
    column(
      "uuid",
      [
        UUID(uuidString: "00000000-0000-0000-0000-000000000000")!,
        UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!,
        UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, UUID(), UUID(),
      ]),
    column(
      "url",
      [
        URL(string: "https://example.com/a%20b?q=1#frag")!, URL(string: "file:///tmp/%C3%A9")!,
        URL(string: "https://example.com")!, URL(string: "mailto:a@b.c")!, URL(string: "x:y")!,
      ]),
    column(
      "decimal",
      [
        Decimal(string: "12345678901234567890.123456789")!, Decimal(string: "-0.000000000000000000000000000001")!,
        Decimal(0), Decimal.greatestFiniteMagnitude, Decimal(string: "1.50")!,
      ]),
    // An enum is stored as its raw value, a Codable value as its JSON text.
    column("status", ["draft", "published", "archived", "", "draft"]),
    column("options", ["{}", #"{"pinned":true,"tags":["a","é"]}"#, "[]", "null", #"{"b":1,"a":2}"#]),
  ]

  @Test func everyTypesEdgeValuesReadBackAsWritten() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    _ = try PostgreSQLStoreTables(schema: schema, model: allTypesModel).open(on: connection)
    let names = Self.columns.map { "\"\($0.name)\"" }
    let optionals = ["optionalBool", "optionalInt", "optionalDouble", "optionalString", "optionalData"]
      .map { "\"\($0)\"" }
    let insert = try connection.statement(
      "INSERT INTO \(schema).\"AllTypes\" (pk, _entity, \((names + optionals).joined(separator: ", "))) VALUES ("
        + (1...(names.count + optionals.count + 2)).map { "$\($0)" }.joined(separator: ", ") + ")")
    for row in 0..<5 {
      try insert.bind(.integer(Int64(row + 1)), at: 1)
      try insert.bind(.integer(1), at: 2)
      for (index, column) in Self.columns.enumerated() { try insert.bind(column.values[row], at: Int32(index + 3)) }
      for index in optionals.indices { try insert.bind(.null, at: Int32(names.count + index + 3)) }
      try insert.run()
      #expect(insert.changes == 1)
    }
    let select = try connection.statement(
      "SELECT \((names + optionals).joined(separator: ", ")) FROM \(schema).\"AllTypes\" WHERE pk = $1")
    for row in 0..<5 {
      try select.bind(.integer(Int64(row + 1)), at: 1)
      try select.run()
      #expect(try select.step())
      for (index, column) in Self.columns.enumerated() {
        let read = try select.value(Int32(index))
        #expect(read == column.values[row], "\(column.name) row \(row + 1)")
        #expect(column.matches(row, read), "\(column.name) row \(row + 1) as Swift reads it")
      }
      for index in optionals.indices {
        #expect(try select.value(Int32(names.count + index)) == .null)
        #expect(select.isNull(Int32(names.count + index)))
      }
      #expect(try !select.step())
    }
  }

  @Test func whatAColumnCannotHoldIsATypedErrorAndWritesNothing() throws {
    let connection = try PostgreSQLConnection(url: PostgreSQLTestServer.server().url)
    let schema = PostgreSQLTestServer.schemaName()
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    _ = try PostgreSQLStoreTables(schema: schema, model: allTypesModel).open(on: connection)
    let update = try connection.statement("UPDATE \(schema).\"AllTypes\" SET string = $1, uuid = $2 WHERE pk = $3")
    #expect(update.parameterTypes == [PostgreSQLValues.text, PostgreSQLValues.uuid, PostgreSQLValues.int8])
    let nul = #expect(throws: PostgreSQLError.self) { try update.bind(.text("a\u{0}b"), at: 1) }
    #expect(nul?.kind == .value)
    let short = #expect(throws: PostgreSQLError.self) { try update.bind(.blob(Data([1, 2, 3])), at: 2) }
    #expect(short?.kind == .value)
    let number = #expect(throws: PostgreSQLError.self) { try update.bind(.real(1.5), at: 1) }
    #expect(number?.kind == .value)
    #expect(throws: PostgreSQLError.self) { try update.bind(.integer(1), at: 4) }
    // NaN, which an SQLite store refuses, is a double precision PostgreSQL keeps.
    let nan = try connection.statement("SELECT $1::double precision, $2::real")
    try nan.bind(.real(.nan), at: 1)
    try nan.bind(.real(.nan), at: 2)
    try nan.run()
    #expect(try nan.step())
    guard case .real(let double) = try nan.value(0), case .real(let float) = try nan.value(1) else {
      Issue.record("NaN did not read back as a real")
      return
    }
    #expect(double.isNaN && float.isNaN)
    #expect(try connection.execute("SELECT count(*) FROM \(schema).\"AllTypes\"").rows == [["0"]])
  }
}
