import Foundation

/// Why a batch request cannot run; thrown before anything is written.
public enum BatchError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The entity class is not part of the context's model.
  case unknownEntity(String)
  /// An assignment's key path does not name one attribute.
  case unsupportedKeyPath(String)
  /// A negative row count.
  case invalidCount(Int)

  /// Why the request cannot run.
  public var description: String {
    switch self {
    case .unknownEntity(let name): "\(name) is not an entity of the context's model"
    case .unsupportedKeyPath(let keyPath): "\(keyPath) does not name an attribute"
    case .invalidCount(let count): "cannot insert \(count) rows"
    }
  }
}
