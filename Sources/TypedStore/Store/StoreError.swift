import Foundation

/// An error opening or writing a store.
///
/// ```swift
/// do { _ = try PersistentContainer(name: "Notes", model: model, storeURL: url) }
/// catch StoreError.modelMismatch(let stored, let given) { print("migrate from \(stored) to \(given)") }
/// ```
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The file is not an SQLite database at all.
  case notADatabase(path: String)
  /// The file is an SQLite database, but not a TypedStore store.
  case notATypedStore(path: String)
  /// The file is damaged.
  case corrupt(path: String, message: String)
  /// The store was written with a newer or unknown file format.
  case unsupportedFormatVersion(found: Int, supported: Int)
  /// The store's model differs from the model given: its version hash and the model's.
  case modelMismatch(storeHash: String, modelHash: String)
  /// A save or batch request changed a row that another writer changed or deleted since it
  /// was read (optimistic locking).
  case conflict(entity: String, primaryKey: Int64)
  /// A unique constraint refused the write.
  case uniqueConstraintViolation(entity: String, message: String)
  /// SQLite reported an error.
  case sqlite(SQLiteError)

  public var description: String {
    switch self {
    case .notADatabase(let path): "\(path) is not an SQLite database"
    case .notATypedStore(let path): "\(path) is an SQLite database but not a TypedStore store"
    case .corrupt(let path, let message): "\(path) is damaged: \(message)"
    case .unsupportedFormatVersion(let found, let supported):
      "the store's format version \(found) is not supported (this build reads version \(supported))"
    case .modelMismatch(let stored, let given):
      "the store's model (hash \(stored.prefix(12))…) differs from the given model (hash \(given.prefix(12))…)"
    case .conflict(let entity, let pk):
      "\(entity) p\(pk) was changed or deleted by another writer since it was read"
    case .uniqueConstraintViolation(let entity, let message):
      "a unique constraint of \(entity) refused the write: \(message)"
    case .sqlite(let error): error.description
    }
  }
}
