import Testing

@testable import TypedStore

@Suite struct HistorySchemaTests {
  @Test func keyListsRoundTripThroughTheirJSONForm() {
    let keys: [Int64] = [1, 2, 10, 999_999, -5, 0, .max, .min, 42]
    let json = HistorySchema.jsonArray(keys)
    #expect(json == "[1,2,10,999999,-5,0,9223372036854775807,-9223372036854775808,42]")
    #expect(HistorySchema.integers(fromJSONArray: json) == keys)
    #expect(HistorySchema.jsonArray([Int64]()) == "[]")
    #expect(HistorySchema.integers(fromJSONArray: "[]").isEmpty)
    let many = (1...100_000).map(Int64.init)
    #expect(HistorySchema.integers(fromJSONArray: HistorySchema.jsonArray(many)) == many)
  }

  @Test func nameListsAreValidJSON() {
    #expect(HistorySchema.jsonArray(["title", "quote\"d", "back\\slash"]) == #"["title","quote\"d","back\\slash"]"#)
  }
}
