import Foundation

/// Why a `#Predicate` cannot run in SQLite. Thrown before the store is touched: TypedStore
/// never traps on a predicate and never falls back to loading a table to evaluate it in
/// memory.
///
/// ```swift
/// do {
///   try request.setPredicate(#Predicate<Note> { $0.summary.count > 3 })   // computed property
/// } catch let error as PredicateTranslationError {
///   print(error)   // "\Note.summary is not a stored attribute of Note"
/// }
/// ```
public enum PredicateTranslationError: Error, Sendable, Equatable, CustomStringConvertible {
  /// An expression SQLite cannot answer as Swift would (its type, as Foundation names it).
  case unsupportedExpression(String)
  /// A key path that does not name one stored attribute of the entity (a computed property, a
  /// property of another type).
  case unknownKeyPath(String)
  /// A value or attribute whose type cannot be compared in SQL as in Swift (`URL` and
  /// `Codable` attributes), with the operation asked.
  case unsupportedValue(type: String, operation: String)

  /// What part of the predicate SQLite cannot evaluate, and why.
  public var description: String {
    switch self {
    case .unsupportedExpression(let expression):
      "the predicate uses \(expression), which TypedStore cannot translate to SQL"
    case .unknownKeyPath(let keyPath): "\(keyPath) is not a stored attribute of the predicate's entity"
    case .unsupportedValue(let type, let operation):
      "\(operation) on \(type) values cannot be translated to SQL with Swift's semantics"
    }
  }
}
