import Foundation

/// A typed aggregate over a fetch request's rows, computed in SQLite without making objects:
/// its result is a Swift value of the attribute's type.
///
/// ```swift
/// let total: Double = try context.aggregate(.sum(\.score), for: FetchRequest<Player>())
/// let oldest: Date? = try context.aggregate(.min(\.joined), for: FetchRequest<Player>())
/// let perTeam: [String: Int] = try context.aggregate(.count, for: FetchRequest<Player>(), groupedBy: \.team)
/// ```
///
/// Aggregates read the saved rows: unsaved changes of the context do not count (as Core
/// Data's dictionary results). `min` and `max` of strings and decimals order them as Swift
/// does; a sum of decimals is exact, and their average is a `Decimal`:
///
/// ```swift
/// let revenue: Decimal = try context.aggregate(.sum(\.total), for: FetchRequest<Order>())
/// let typical: Decimal? = try context.aggregate(.average(\.total), for: FetchRequest<Order>())
/// ```
public struct AggregateFunction<Entity: ManagedObject, Result>: Sendable {
  typealias Kind = AggregateFunctionKind

  let kind: Kind
  let keyPath: (PartialKeyPath<Entity> & Sendable)?
  /// The result over no rows (or only NULLs): a `Result`.
  let emptyResult: any Sendable
}

extension AggregateFunction where Result == Int {
  /// How many rows.
  public static var count: Self { Self(kind: .count, keyPath: nil, emptyResult: 0) }
}

extension AggregateFunction where Result: AdditiveArithmetic & Sendable {
  /// The sum of an attribute's values (zero when there are no rows). An `Int` sum that
  /// overflows throws, where Swift would stop the program. A `Decimal` sum is exact: the
  /// values are added without rounding, and the total loses digits only when it has more
  /// than a `Decimal` holds (it is NaN beyond `Decimal`'s range, or when a value is NaN).
  public static func sum(_ keyPath: KeyPath<Entity, Result> & Sendable) -> Self {
    Self(kind: .sum, keyPath: keyPath, emptyResult: Result.zero)
  }

  /// The sum of an optional attribute's non-nil values (zero when there is none).
  public static func sum(_ keyPath: KeyPath<Entity, Result?> & Sendable) -> Self {
    Self(kind: .sum, keyPath: keyPath, emptyResult: Result.zero)
  }
}

extension AggregateFunction {
  /// The smallest value of an attribute (nil when there are no rows, or all are nil).
  public static func min<Value: Comparable & Sendable>(_ keyPath: KeyPath<Entity, Value> & Sendable) -> Self
  where Result == Value? {
    Self(kind: .min, keyPath: keyPath, emptyResult: Value?.none)
  }

  /// The largest value of an attribute (nil when there are no rows, or all are nil).
  public static func max<Value: Comparable & Sendable>(_ keyPath: KeyPath<Entity, Value> & Sendable) -> Self
  where Result == Value? {
    Self(kind: .max, keyPath: keyPath, emptyResult: Value?.none)
  }

  /// The mean of a numeric attribute's values, as a `Double` (nil when there are no rows).
  public static func average<Value: Numeric>(_ keyPath: KeyPath<Entity, Value> & Sendable) -> Self
  where Result == Double? {
    Self(kind: .average, keyPath: keyPath, emptyResult: Double?.none)
  }

  /// The smallest non-nil value of an optional attribute (nil when there is none).
  public static func min<Value: Comparable & Sendable>(_ keyPath: KeyPath<Entity, Value?> & Sendable) -> Self
  where Result == Value? {
    Self(kind: .min, keyPath: keyPath, emptyResult: Value?.none)
  }

  /// The largest non-nil value of an optional attribute (nil when there is none).
  public static func max<Value: Comparable & Sendable>(_ keyPath: KeyPath<Entity, Value?> & Sendable) -> Self
  where Result == Value? {
    Self(kind: .max, keyPath: keyPath, emptyResult: Value?.none)
  }

  /// The mean of an optional numeric attribute's non-nil values (nil when there is none).
  public static func average<Value: Numeric>(_ keyPath: KeyPath<Entity, Value?> & Sendable) -> Self
  where Result == Double? {
    Self(kind: .average, keyPath: keyPath, emptyResult: Double?.none)
  }
}

extension AggregateFunction where Result == Decimal? {
  /// The mean of a `Decimal` attribute's values, as Swift computes it: their exact sum (as
  /// `sum(_:)` gives it) divided by `Decimal(count)` with `Decimal`'s `/` (nil when there are
  /// no rows).
  ///
  /// ```swift
  /// let typical: Decimal? = try context.aggregate(.average(\.total), for: FetchRequest<Order>())
  /// ```
  ///
  /// Written where a `Double?` is expected, `average(_:)` gives this mean as the nearest
  /// `Double`.
  public static func average(_ keyPath: KeyPath<Entity, Decimal> & Sendable) -> Self {
    Self(kind: .average, keyPath: keyPath, emptyResult: Decimal?.none)
  }

  /// The mean of an optional `Decimal` attribute's non-nil values, as `average(_:)` of a
  /// `Decimal` attribute computes it (nil when there is none).
  public static func average(_ keyPath: KeyPath<Entity, Decimal?> & Sendable) -> Self {
    Self(kind: .average, keyPath: keyPath, emptyResult: Decimal?.none)
  }
}

/// What an `AggregateFunction` computes.
enum AggregateFunctionKind: Sendable {
  case count
  case sum
  case min
  case max
  case average
}
