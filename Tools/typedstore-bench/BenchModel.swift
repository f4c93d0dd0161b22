import Foundation
import Observation
import TypedStore

/// The benchmark's entity: five attributes (integer, text, text, double, date).
final class BenchItem: ManagedObject {
  @Attribute var number: Int = 0
  @Attribute var name: String = ""
  @Attribute var category: String = ""
  @Attribute var score: Double = 0
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// `BenchItem` with an index on `number`: for the predicate fetch that can use an index.
final class BenchIndexedItem: ManagedObject {
  @Attribute(indexed: true) var number: Int = 0
  @Attribute var name: String = ""
  @Attribute var category: String = ""
  @Attribute var score: Double = 0
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// `BenchItem` declared `Observable`: what reading attributes costs an entity that opts in to
/// Swift's Observation.
final class BenchObservedItem: ManagedObject, Observable {
  @Attribute var number: Int = 0
  @Attribute var name: String = ""
  @Attribute var category: String = ""
  @Attribute var score: Double = 0
  @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// The five attributes the fetch rows read, on any of the item entities.
protocol BenchItemFields: AnyObject {
  var number: Int { get set }
  var name: String { get set }
  var category: String { get set }
  var score: Double { get set }
  var created: Date { get set }
}

extension BenchItem: BenchItemFields {}
extension BenchIndexedItem: BenchItemFields {}
extension BenchObservedItem: BenchItemFields {}

/// An entity whose deletes keep a tombstone: the history of a batch delete of it has one
/// change row per deleted row.
final class BenchRecord: ManagedObject {
  @Attribute var name: String = ""
  @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
}

/// The values of row `index`, the same for both sides.
struct BenchRow {
  var number: Int64
  var name: String
  var category: String
  var score: Double
  var created: Double

  init(number: Int64, name: String, category: String, score: Double, created: Double) {
    self.number = number
    self.name = name
    self.category = category
    self.score = score
    self.created = created
  }

  init(_ index: Int) {
    number = Int64(index)
    name = "item \(index)"
    category = "category \(index % 10)"
    score = Self.score(index)
    created = 700_000_000 + Double(index)
  }

  /// Row `index`'s score, without making the row's strings.
  static func score(_ index: Int) -> Double { Double(index) * 0.5 }
}

/// An order-independent summary of rows, to check that both sides read the same data.
struct Checksum: Equatable, CustomStringConvertible {
  var count = 0
  var numbers: Int64 = 0
  var textLength = 0
  var scores: Double = 0
  var dates: Double = 0

  mutating func add(_ row: BenchRow) {
    add(number: row.number, name: row.name, category: row.category, score: row.score, created: row.created)
  }

  mutating func add(number: Int64, name: String, category: String, score: Double, created: Double) {
    count += 1
    numbers &+= number
    textLength += name.utf8.count + category.utf8.count
    scores += score
    dates += created
  }

  var description: String { "\(count) rows, Σnumber \(numbers), Σtext \(textLength), Σscore \(scores)" }
}

/// Sets an item's five attributes to a row's values.
func fill(_ item: some BenchItemFields, _ row: BenchRow) {
  item.number = Int(row.number)
  item.name = row.name
  item.category = row.category
  item.score = row.score
  item.created = Date(timeIntervalSinceReferenceDate: row.created)
}

/// The checksum of fetched items' five attributes, as the raw side's `Checksum` of its rows.
func itemChecksum(_ items: [some BenchItemFields]) -> Checksum {
  var checksum = Checksum()
  for item in items {
    checksum.add(
      number: Int64(item.number), name: item.name, category: item.category, score: item.score,
      created: item.created.timeIntervalSinceReferenceDate)
  }
  return checksum
}
