import Foundation

/// Why a fetch request cannot run; thrown before anything is read.
public enum FetchError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The entity class is not part of the context's model.
  case unknownEntity(String)
  /// A sort key path does not name one attribute (of the object, or of an object up to three
  /// to-one relationships away).
  case unsupportedSortKey(String)
  /// `fetchLimit` or `fetchOffset` is negative.
  case invalidRange(String)
  /// An aggregate over a key path that is not one attribute, or over values SQLite cannot
  /// aggregate as Swift would (`URL`, `Data`, `UUID`, `Codable`; sums of strings); a sum or
  /// average of decimals whose Swift answer depends on the order of the rows; a group key path
  /// that is neither an attribute nor a to-one relationship.
  case unsupportedAggregate(String)
  /// A key path in `relationshipKeyPathsForPrefetching` that names no relationship.
  case notARelationship(String)

  /// Why the request cannot run, naming the key path or value at fault.
  public var description: String {
    switch self {
    case .unknownEntity(let name): "\(name) is not an entity of the context's model"
    case .unsupportedSortKey(let key):
      "cannot sort by \(key): it reads no single attribute of the object, "
        + "or of an object at most three to-one relationships away"
    case .invalidRange(let text): text
    case .unsupportedAggregate(let text): "cannot aggregate \(text)"
    case .notARelationship(let key): "cannot prefetch \(key): it is not a relationship"
    }
  }
}
