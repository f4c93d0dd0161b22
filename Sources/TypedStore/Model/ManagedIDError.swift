import Foundation

/// Why an ID, or a URI, names no row the call can reach: thrown by `ManagedID(validating:)`
/// and by every API that takes an ID (`existingObject(with:)`, `object(with:)`,
/// `registeredObject(for:)`, batch requests by ID), before anything is read into the context
/// or written to the store.
///
/// ```swift
/// do {
///   _ = try context.execute(BatchDeleteRequest(objectIDs: ids))
/// } catch ManagedIDError.noSuchRow(let uri) {
///   print("already gone:", uri)              // and nothing was deleted
/// } catch let error as ManagedIDError {
///   print(error)                             // names the ID and why
/// }
/// ```
///
/// An ID names one row: of one store (`storeIdentifier`), of one concrete entity
/// (`entityName`), with one primary key. A temporary ID names an unsaved object of the context
/// that made it, and nothing anywhere else, as in Core Data.
public enum ManagedIDError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Not of the form `typedstore://<uuid>/<Entity>/p<pk>`.
  case malformedURI(String)
  /// No store with this UUID is open in this process.
  case unknownStore(UUID)
  /// The store's model has no entity of this name.
  case unknownEntity(String)
  /// The ID (its URI first) names an entity that is neither the expected one nor one of its
  /// subentities (just the expected one for a request with `includesSubentities` false), or
  /// its row is of another entity (`found`) than the ID says.
  case entityMismatch(id: String, expected: String, found: String)
  /// The ID (its URI) names a row of another store than `expected`, the store it was used with.
  case foreignStore(id: String, expected: UUID)
  /// A temporary ID (its URI) used outside the context that made it, or after its object was
  /// saved or dropped: it names no row, and a batch request never skips it.
  case temporaryID(String)
  /// The store has no row for the ID (its URI): the row was deleted, or never existed.
  case noSuchRow(String)

  /// What the ID names, and why the call cannot reach it.
  public var description: String {
    switch self {
    case .malformedURI(let text): "'\(text)' is not a TypedStore object URI"
    case .unknownStore(let uuid): "no store with UUID \(uuid) is open in this process"
    case .unknownEntity(let name): "the store's model has no entity \(name)"
    case .entityMismatch(let id, let expected, let found):
      "\(id) names a \(found) where a \(expected) is expected"
    case .foreignStore(let id, let expected): "\(id) names a row of another store than \(expected)"
    case .temporaryID(let id):
      "\(id) is a temporary ID: it names an unsaved object of the context that made it, and no row of the store"
    case .noSuchRow(let id): "the store has no row for \(id): it was deleted, or never existed"
    }
  }
}
