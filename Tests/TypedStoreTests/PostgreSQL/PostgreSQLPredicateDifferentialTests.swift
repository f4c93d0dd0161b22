import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// The predicate differential test (`PredicateDifferentialTests`) on a PostgreSQL store: the
/// same generated predicates, fetched through a context from a PostgreSQL schema, select
/// exactly the rows Swift's evaluation selects. Numbers, booleans, dates, bytes, keys and
/// relationships are answered in SQL; strings, decimals and floating point arithmetic narrow
/// the rows in SQL and are checked in Swift (`SQLExactness`), so no case is left out.
@Suite struct PostgreSQLPredicateDifferentialTests {
  /// 1,000 generated predicates over 80 rows in the test command; more with
  /// `TYPEDSTORE_PREDICATE_CASES`, and a failure reruns with `TYPEDSTORE_PREDICATE_SEED`.
  @Test func postgreSQLSelectsExactlyWhatSwiftsEvaluationSelects() throws {
    let environment = ProcessInfo.processInfo.environment
    let cases = environment["TYPEDSTORE_PREDICATE_CASES"].flatMap(Int.init) ?? 1_000
    let seed = environment["TYPEDSTORE_PREDICATE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    print("PostgreSQL predicate differential test: seed \(seed), \(cases) cases")
    var rng = SeededGenerator(state: seed)
    let model = try ManagedObjectModel(Sample.self)
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let admin = try PostgreSQLConnection(url: server.url)
    defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    let store = try PostgreSQLStoreEngine.openStore(url: server.url, schema: schema, model: model)

    let writing = ModelContext(store: store)
    var data = SeededGenerator(state: rng.next())
    // PostgreSQL's text holds no NUL character: the stored strings leave it out, the
    // predicates still compare with it.
    Pools.fill(rows: 80, using: &data, strings: Pools.strings.filter { !$0.utf8.contains(0) }) {
      Sample(context: writing)
    }
    try writing.save()

    let recipes = (0..<cases).map { _ in Recipe.random(depth: 3, using: &rng) }
    let context = ModelContext(store: store)
    let failures = try Recipe.failures(recipes, all: context.fetch(FetchRequest<Sample>())) { predicate in
      try context.fetch(FetchRequest(predicate: predicate))
    }
    #expect(failures.isEmpty, "seed \(seed): \(failures.count) of \(cases) differ; first: \(failures.prefix(5))")

    // SQL answers every kind of comparison alone, so that the comparison above proves its
    // translation; only searches in strings, decimal arithmetic and a string PostgreSQL cannot
    // hold (a NUL) narrow the rows for Swift to check.
    let narrowing = ["containsString", "startsWith", "coalescedContains", "decimalArithmetic"]
    var leaves = SeededGenerator(state: seed)
    for _ in 0..<2_000 {
      let leaf = Recipe.Leaf.random(using: &leaves)
      let kind = String(String(describing: leaf).prefix { $0 != "(" })
      guard !Recipe.leaf(leaf).readsUnstored, !narrowing.contains(kind), !"\(leaf)".contains("\\0") else { continue }
      let translated = try PredicateTranslator<Sample>.translate(
        Recipe.leaf(leaf).predicate, model: model, dialect: .postgreSQL)
      #expect(translated.isExact, "\(leaf) only narrows the rows on PostgreSQL")
    }
  }
}

/// The sort differential test (`SortDifferentialTests`) on a PostgreSQL store: generated
/// sort descriptors order the rows of a PostgreSQL schema, whole and with a range, exactly as
/// Swift's sort descriptors order the objects (strings in NFC by code point, decimals with NaN
/// first, nil first, enums by their own `<`; codable values and the lexical comparator in
/// memory).
@Suite struct PostgreSQLSortDifferentialTests {
  /// 300 generated sorts over 120 rows; more with `TYPEDSTORE_SORT_CASES`, and a failure
  /// reruns with `TYPEDSTORE_SORT_SEED`.
  @Test func postgreSQLSortsExactlyAsSwiftsSortDescriptorsSort() throws {
    let environment = ProcessInfo.processInfo.environment
    let cases = environment["TYPEDSTORE_SORT_CASES"].flatMap(Int.init) ?? 300
    let seed = environment["TYPEDSTORE_SORT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    print("PostgreSQL sort differential test: seed \(seed), \(cases) cases")
    var rng = SeededGenerator(state: seed)
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let admin = try PostgreSQLConnection(url: server.url)
    defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    let store = try PostgreSQLStoreEngine.openStore(
      url: server.url, schema: schema, model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    let writing = ModelContext(store: store)
    SortDifferentialTests.fill(rows: 120, seed: rng.next(), strings: Pools.strings.filter { !$0.utf8.contains(0) }) {
      type in
      let object = type.init()
      writing.insert(object)
      return object
    }
    try writing.save()
    let context = ModelContext(store: store)
    let failures = try SortDifferentialTests.failures(
      cases: cases, using: &rng, all: context.fetch(FetchRequest<SortRow>())
    ) { try context.fetch($0) }
    #expect(failures.isEmpty, "seed \(seed): \(failures.count) differ; first: \(failures.prefix(3))")
  }
}
