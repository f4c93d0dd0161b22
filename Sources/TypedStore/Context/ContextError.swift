/// An error from a context operation.
///
/// ```swift
/// do { let note = try context.existingObject(with: id) }
/// catch ContextError.objectNotFound(let uri) { print("gone:", uri) }
/// ```
public enum ContextError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No row exists for the ID (never saved, deleted, or a temporary ID of another context).
  case objectNotFound(String)
  /// The ID or object belongs to another store than this context's.
  case foreignStore(String)

  public var description: String {
    switch self {
    case .objectNotFound(let uri): "no object exists for \(uri)"
    case .foreignStore(let uri): "\(uri) belongs to another store"
    }
  }
}
