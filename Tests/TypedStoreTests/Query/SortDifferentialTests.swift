import Foundation
import Testing
import TypedStore
import TypedStoreTesting

// The sort differential test: generated sort descriptors over every attribute type a sort
// orders, optional and not, enums with and without an order of their own, strings with each
// comparator Foundation offers on Linux, a Codable value with its own `<`, the elements of a
// composite, nested, and attributes of related objects; the store's order must be Swift's `sorted(using:)` on the same objects
// (ties by primary key), and a computed property must be refused before the store is read.

/// Cases in declaration order, which is not their raw values' order ("high" < "low" < "mid").
enum Urgency: String, Codable, Sendable, CaseIterable, Comparable {
  case low, mid, high
  static func < (lhs: Urgency, rhs: Urgency) -> Bool {
    (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
  }
}

/// An order of its own and no list of cases: only Swift can order it.
enum Tier: Int, Codable, Sendable, Comparable {
  case bronze = 3
  case silver = 1
  case gold = 2
  static func < (lhs: Tier, rhs: Tier) -> Bool { lhs.weight < rhs.weight }
  private var weight: Int { [Tier.bronze: 0, .silver: 1, .gold: 2][self] ?? 0 }
}

/// Raw values in the cases' order: the store can use the column as it is.
enum Step: Int, Codable, Sendable, CaseIterable, Comparable {
  case one = 1
  case two = 2
  case three = 3
  static func < (lhs: Step, rhs: Step) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A Codable value stored as JSON, ordered by its own `<`.
struct Price: Codable, Sendable, Comparable, Hashable {
  var cents: Int
  static func < (lhs: Price, rhs: Price) -> Bool { lhs.cents < rhs.cents }
}

final class SortRow: ManagedObject {
  @Attribute var label: String = ""
  @Attribute var int: Int = 0
  @Attribute var optionalInt: Int? = nil
  @Attribute var double: Double = 0
  @Attribute var optionalDouble: Double? = nil
  @Attribute var string: String = ""
  @Attribute var optionalString: String? = nil
  @Attribute var date: Date = Date(timeIntervalSinceReferenceDate: 0)
  @Attribute var optionalDate: Date? = nil
  @Attribute var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
  @Attribute var optionalUUID: UUID? = nil
  @Attribute var urgency: Urgency = .low
  @Attribute var optionalUrgency: Urgency? = nil
  @Attribute var tier: Tier = .bronze
  @Attribute var optionalTier: Tier? = nil
  @Attribute var step: Step = .one
  @Attribute(.codable) var price: Price = Price(cents: 0)
  @Attribute var amount: Decimal = 0
  @Attribute var optionalAmount: Decimal? = nil
  @Attribute var spot: Spot = Spot()
  @Relationship(deleteRule: .nullify) var parent: SortParent?
  var shout: String { string.uppercased() }
  var parentName: String? { parent?.name }
}

/// A composite, nested: its elements sort as attributes of their own.
struct Spot: CompositeAttributeValue {
  struct Depth: CompositeAttributeValue {
    var metres: Double? = nil
    var urgency: Urgency = .low
  }
  var name: String = ""
  var floor: Int = 0
  var depth: Depth = Depth()
}

final class SortParent: ManagedObject {
  @Attribute var name: String = ""
  @Attribute var number: Int? = nil
  @Attribute var spot: Spot = Spot()
  @Attribute var urgency: Urgency = .low
  @Relationship(inverse: \SortRow.parent, deleteRule: .nullify) var rows: Set<SortRow>
  @Relationship(deleteRule: .nullify) var group: SortGroup?
}

final class SortGroup: ManagedObject {
  @Attribute var title: String? = nil
  @Relationship(inverse: \SortParent.group, deleteRule: .nullify) var parents: Set<SortParent>
}

/// One generated sort key: a descriptor in either order, described for failure messages.
struct SortCase: Sendable, CustomStringConvertible {
  let name: String
  let make: @Sendable (SortOrder) -> SortDescriptor<SortRow>
  var description: String { name }

  static let all: [SortCase] = [
    SortCase(name: "int") { SortDescriptor(\.int, order: $0) },
    SortCase(name: "optionalInt") { SortDescriptor(\.optionalInt, order: $0) },
    SortCase(name: "double") { SortDescriptor(\.double, order: $0) },
    SortCase(name: "optionalDouble") { SortDescriptor(\.optionalDouble, order: $0) },
    SortCase(name: "string") { SortDescriptor(\.string, order: $0) },
    SortCase(name: "string lexical") { SortDescriptor(\.string, comparator: .lexical, order: $0) },
    SortCase(name: "optionalString") { SortDescriptor(\.optionalString, order: $0) },
    SortCase(name: "optionalString lexical") { SortDescriptor(\.optionalString, comparator: .lexical, order: $0) },
    SortCase(name: "date") { SortDescriptor(\.date, order: $0) },
    SortCase(name: "optionalDate") { SortDescriptor(\.optionalDate, order: $0) },
    SortCase(name: "uuid") { SortDescriptor(\.uuid, order: $0) },
    SortCase(name: "optionalUUID") { SortDescriptor(\.optionalUUID, order: $0) },
    SortCase(name: "urgency (own order, CaseIterable)") { SortDescriptor(\.urgency, order: $0) },
    SortCase(name: "optionalUrgency") { SortDescriptor(\.optionalUrgency, order: $0) },
    SortCase(name: "tier (own order, not CaseIterable)") { SortDescriptor(\.tier, order: $0) },
    SortCase(name: "optionalTier") { SortDescriptor(\.optionalTier, order: $0) },
    SortCase(name: "step (raw order)") { SortDescriptor(\.step, order: $0) },
    SortCase(name: "price (Codable, own order)") { SortDescriptor(\.price, order: $0) },
    SortCase(name: "amount (Decimal)") { SortDescriptor(\.amount, order: $0) },
    SortCase(name: "optionalAmount") { SortDescriptor(\.optionalAmount, order: $0) },
    SortCase(name: "parent?.name") { SortDescriptor(\.parent?.name, order: $0) },
    SortCase(name: "parent?.name lexical") { SortDescriptor(\.parent?.name, comparator: .lexical, order: $0) },
    SortCase(name: "parent?.number") { SortDescriptor(\.parent?.number, order: $0) },
    SortCase(name: "parent?.urgency") { SortDescriptor(\.parent?.urgency, order: $0) },
    SortCase(name: "parent?.group?.title") { SortDescriptor(\.parent?.group?.title, order: $0) },
    SortCase(name: "spot.name (composite)") { SortDescriptor(\.spot.name, order: $0) },
    SortCase(name: "spot.floor") { SortDescriptor(\.spot.floor, order: $0) },
    SortCase(name: "spot.depth.metres (nested)") { SortDescriptor(\.spot.depth.metres, order: $0) },
    SortCase(name: "spot.depth.urgency") { SortDescriptor(\.spot.depth.urgency, order: $0) },
    SortCase(name: "parent?.spot.name") { SortDescriptor(\.parent?.spot.name, order: $0) },
  ]
}

@Suite struct SortDifferentialTests {
  /// Swift's order of `objects`: the descriptors in turn, then the primary key.
  static func swiftOrder(_ objects: [SortRow], _ descriptors: [SortDescriptor<SortRow>]) -> [SortRow] {
    objects.sorted { left, right in
      for descriptor in descriptors {
        let result = descriptor.compare(left, right)
        if result != .orderedSame { return result == .orderedAscending }
      }
      return (left.managedID.primaryKey ?? .max) < (right.managedID.primaryKey ?? .max)
    }
  }

  /// Decimals whose text order is not their order, equal ones spelt apart, many digits.
  static let decimals: [Decimal] = [
    "0", "1", "1.0", "10", "9.99", "-2", "-10.5", "0.1", "100000000000000000000000000000000001", "-0.000001",
    "3.14159265358979323846264338327950288",
  ].compactMap { Decimal(string: $0) }

  static func fill(_ context: isolated ManagedObjectContext, rows: Int, seed: UInt64) throws {
    fill(rows: rows, seed: seed) { type in
      let object = type.init()
      context.insert(object)
      return object
    }
  }

  /// `rows` rows of random values, each object made by `make` in the caller's context, from
  /// `strings` (an engine that cannot store some strings leaves those out).
  static func fill(
    rows: Int, seed: UInt64, strings: [String] = Pools.strings, _ make: (ManagedObject.Type) -> ManagedObject
  ) {
    var rng = SeededGenerator(state: seed)
    func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
    func maybe<T>(_ values: [T]) -> T? { Int.random(in: 0..<3, using: &rng) == 0 ? nil : pick(values) }
    let groups: [SortGroup?] =
      [nil]
      + ["b", "a", "B", nil].map { title in
        let group = make(SortGroup.self) as! SortGroup
        group.title = title
        return group
      }
    let parents: [SortParent?] =
      [nil]
      + (0..<8).map { _ in
        let parent = make(SortParent.self) as! SortParent
        parent.name = pick(strings)
        parent.number = maybe(Pools.smalls)
        parent.urgency = pick(Urgency.allCases)
        parent.spot.name = pick(strings)
        parent.group = pick(groups)
        return parent
      }
    for index in 0..<rows {
      let row = make(SortRow.self) as! SortRow
      row.label = "row \(index)"
      // Few distinct values, so that ties (and the keys after them) matter.
      row.int = pick(Pools.smalls)
      row.optionalInt = maybe(Pools.ints)
      row.double = pick(Pools.doubles.filter(\.isFinite))
      row.optionalDouble = maybe(Pools.doubles)
      row.string = pick(strings)
      row.optionalString = maybe(strings)
      row.date = pick(Pools.dates)
      row.optionalDate = maybe(Pools.dates)
      row.uuid = pick(Pools.uuids)
      row.optionalUUID = maybe(Pools.uuids)
      row.urgency = pick(Urgency.allCases)
      row.optionalUrgency = maybe(Urgency.allCases)
      row.tier = pick([.bronze, .silver, .gold])
      row.optionalTier = maybe([.bronze, .silver, .gold])
      row.step = pick(Step.allCases)
      row.price = Price(cents: pick([5, -3, 100, 0, 42]))
      row.amount = pick(Self.decimals)
      row.optionalAmount = maybe(Self.decimals)
      row.spot = Spot(
        name: pick(strings), floor: pick(Pools.smalls),
        depth: Spot.Depth(metres: maybe(Pools.doubles), urgency: pick(Urgency.allCases)))
      row.parent = pick(parents)
    }
  }

  static func randomDescriptors(using rng: inout SeededGenerator) -> (String, [SortDescriptor<SortRow>]) {
    let count = Int.random(in: 1...3, using: &rng)
    let picked = (0..<count).map { _ in
      (SortCase.all[Int.random(in: 0..<SortCase.all.count, using: &rng)], Bool.random(using: &rng))
    }
    let name = picked.map { "\($0.0)\($0.1 ? "" : " reverse")" }.joined(separator: ", ")
    return (name, picked.map { $0.0.make($0.1 ? .forward : .reverse) })
  }

  /// How the store's order (`fetch`) of `cases` generated sorts, whole and with a range,
  /// differs from Swift's order of `all`, the store's objects.
  static func failures(
    cases: Int, using rng: inout SeededGenerator, all: [SortRow], fetch: (FetchRequest<SortRow>) throws -> [SortRow]
  ) throws -> [String] {
    var failures: [String] = []
    for _ in 0..<cases {
      let (name, descriptors) = Self.randomDescriptors(using: &rng)
      let expected = Self.swiftOrder(all, descriptors).map(\.label)
      var request = FetchRequest<SortRow>(sortBy: descriptors)
      let sql = try fetch(request).map(\.label)
      if sql != expected { failures.append("\(name): store \(sql.prefix(6)), Swift \(expected.prefix(6))") }
      request.fetchOffset = Int.random(in: 0...10, using: &rng)
      request.fetchLimit = Int.random(in: 1...20, using: &rng)
      let range = try fetch(request).map(\.label)
      let expectedRange = Array(expected.dropFirst(request.fetchOffset).prefix(request.fetchLimit))
      if range != expectedRange { failures.append("\(name) with a range: store \(range), Swift \(expectedRange)") }
    }
    return failures
  }

  /// 300 generated sorts over 120 saved rows, in the store and with a range; more with
  /// `TYPEDSTORE_SORT_CASES`, and a failure reruns with `TYPEDSTORE_SORT_SEED`.
  @Test func theStoreSortsExactlyAsSwiftsSortDescriptorsSort() throws {
    let environment = ProcessInfo.processInfo.environment
    let cases = environment["TYPEDSTORE_SORT_CASES"].flatMap(Int.init) ?? 300
    let seed = environment["TYPEDSTORE_SORT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    print("sort differential test: seed \(seed), \(cases) cases (TYPEDSTORE_SORT_SEED=\(seed) reruns them)")
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    let failures = try container.viewContext.performAndWait { context -> [String] in
      var rng = SeededGenerator(state: seed)
      try Self.fill(context, rows: 120, seed: rng.next())
      try context.save()
      context.reset()
      return try Self.failures(cases: cases, using: &rng, all: context.fetch(FetchRequest<SortRow>())) {
        try context.fetch($0)
      }
    }
    #expect(failures.isEmpty, "seed \(seed): \(failures.count) differ; first: \(failures.prefix(3))")
  }

  /// With unsaved edits of sorted attributes and unsaved inserts, the context orders the
  /// objects in memory: still Swift's order (inserted objects after saved ones among equals).
  @Test func unsavedChangesSortInMemoryAsSwiftSorts() throws {
    let seed = UInt64.random(in: 0...UInt64.max)
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    let failures = try container.viewContext.performAndWait { context -> [String] in
      var rng = SeededGenerator(state: seed)
      try Self.fill(context, rows: 60, seed: rng.next())
      try context.save()
      try Self.fill(context, rows: 15, seed: rng.next())  // unsaved inserts
      let all = try context.fetch(FetchRequest<SortRow>())
      for row in all where Bool.random(using: &rng) {  // unsaved edits
        row.string = Pools.strings[Int.random(in: 0..<Pools.strings.count, using: &rng)]
        row.urgency = Urgency.allCases[Int.random(in: 0..<3, using: &rng)]
        row.int = Int.random(in: -2...2, using: &rng)
      }
      var failures: [String] = []
      for _ in 0..<100 {
        let (name, descriptors) = Self.randomDescriptors(using: &rng)
        let fetched = try context.fetch(FetchRequest<SortRow>(sortBy: descriptors))
        if Set(fetched.map(\.label)) != Set(all.map(\.label)) { failures.append("\(name): other rows") }
        for (left, right) in zip(fetched, fetched.dropFirst()) {
          var result = ComparisonResult.orderedSame
          for descriptor in descriptors where result == .orderedSame { result = descriptor.compare(left, right) }
          let keys = (left.managedID.primaryKey, right.managedID.primaryKey)
          if result == .orderedDescending
            || (result == .orderedSame && keys.0 != nil && keys.1 != nil && (keys.0 ?? 0) > (keys.1 ?? 0))
            || (result == .orderedSame && keys.0 == nil && keys.1 != nil)
          {
            failures.append("\(name): \(left.label) before \(right.label)")
            break
          }
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "seed \(seed): \(failures.count) differ; first: \(failures.prefix(3))")
  }

  /// A sort whose SQL binds values (an enum ranked by a `CASE`) after a predicate's, and one
  /// only memory can order, through every way of reading a request's results.
  @Test func rankedAndInMemorySortsAgreeInEveryKindOfFetch() throws {
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    let low = 0
    let predicate = #Predicate<SortRow> { $0.int >= low && $0.string != "a" }
    let failures = try container.viewContext.performAndWait { context -> [String] in
      try Self.fill(context, rows: 80, seed: 42)
      try context.save()
      let all = try context.fetch(FetchRequest<SortRow>()).filter { try predicate.evaluate($0) }
      var failures: [String] = []
      for descriptors in [
        [SortDescriptor(\SortRow.urgency, order: .reverse), SortDescriptor(\.int)],
        [SortDescriptor(\SortRow.tier), SortDescriptor(\.parent?.urgency)],
      ] {
        let expected = Self.swiftOrder(all, descriptors).map(\.managedID)
        var request = FetchRequest<SortRow>(predicate: predicate, sortBy: descriptors)
        if try context.fetch(request).map(\.managedID) != expected { failures.append("fetch \(descriptors)") }
        if try context.fetchObjectIDs(for: request) != expected { failures.append("fetchObjectIDs \(descriptors)") }
        if try context.fetch(request, batchSize: 7).map(\.managedID) != expected {
          failures.append("batched \(descriptors)")
        }
        let controller = FetchedResultsController(fetchRequest: request, context: context)
        try controller.performFetch()
        if controller.fetchedObjects.map(\.managedID) != expected { failures.append("controller \(descriptors)") }
        request.fetchOffset = 3
        request.fetchLimit = 10
        if try context.fetch(request).map(\.managedID) != Array(expected.dropFirst(3).prefix(10)) {
          failures.append("range \(descriptors)")
        }
        do {
          let count = try context.aggregate(.count, for: request)
          if count != 10 { failures.append("aggregate over a range: \(count)") }
        } catch FetchError.unsupportedAggregate {
          // Only a sort memory orders is refused over a range.
          if descriptors.first?.keyPath == \SortRow.urgency { failures.append("ranked aggregate refused") }
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures)")
  }

  /// `<` on an enum in a predicate is the enum's own: SQL compares raw values only when they
  /// are in that order, and refuses otherwise.
  @Test func predicatesOrderEnumsByTheirOwnLessThanOrRefuse() throws {
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    let two = Step.two
    let mid = Urgency.mid
    let silver = Tier.silver
    let byStep = #Predicate<SortRow> { $0.step < two }
    let byUrgency = #Predicate<SortRow> { $0.urgency < mid }
    let byTier = #Predicate<SortRow> { $0.tier > silver }
    let (stored, evaluated) = try container.viewContext.performAndWait { context in
      try Self.fill(context, rows: 40, seed: 7)
      try context.save()
      let all = try context.fetch(FetchRequest<SortRow>())
      return (
        Set(try context.fetch(FetchRequest(predicate: byStep)).map(\.label)),
        Set(try all.filter { try byStep.evaluate($0) }.map(\.label))
      )
    }
    #expect(stored == evaluated && !stored.isEmpty)
    for predicate in [byUrgency, byTier] {
      #expect {
        try container.viewContext.performAndWait { context in
          _ = try context.fetch(FetchRequest(predicate: predicate))
        }
      } throws: { error in
        guard case PredicateTranslationError.unsupportedValue = error else { return false }
        return true
      }
    }
  }

  /// The rows of a range are the sort's, so an aggregate over a range whose sort only memory
  /// can order is computed over the rows Swift's order puts in the range (by their keys).
  @Test func anAggregateOverARangeOfAnInMemorySortReadsTheRowsOfThatRange() throws {
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    let request = FetchRequest<SortRow>(sortBy: [SortDescriptor(\.tier)], fetchLimit: 5)
    try container.viewContext.performAndWait { context in
      try Self.fill(context, rows: 10, seed: 3)
      try context.save()
      #expect(try context.aggregate(.count, for: request) == 5)
      let ranged = try context.fetch(request)
      let grouped = try context.aggregate(.count, for: request, groupedBy: \.tier)
      #expect(grouped == Dictionary(grouping: ranged, by: \.tier).mapValues(\.count))
      // An unsaved edit of the sort key does not count: aggregates read the saved rows. (The
      // edited row would move into the range: not all five are bronze.)
      #expect(grouped[.bronze, default: 0] < 5)
      let last = try context.fetch(FetchRequest<SortRow>(sortBy: [SortDescriptor(\.tier, order: .reverse)]))[0]
      last.tier = .bronze
      #expect(try context.aggregate(.count, for: request, groupedBy: \.tier) == grouped)
      context.rollback()
    }
  }

  @Test func aComputedPropertyIsRefusedBeforeTheStoreIsRead() throws {
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(SortRow.self, SortParent.self, SortGroup.self))
    for descriptor in [SortDescriptor(\SortRow.shout), SortDescriptor(\SortRow.parentName)] {
      #expect {
        try container.viewContext.performAndWait { context in
          _ = try context.fetch(FetchRequest<SortRow>(sortBy: [descriptor]))
        }
      } throws: { error in
        guard case FetchError.unsupportedSortKey(let text) = error else { return false }
        return text.hasPrefix("\\SortRow.<computed") && !text.contains("0x")
      }
    }
  }
}
