import Foundation

/// The typed identity of one row: `ManagedID<Note>` names a `Note` (or an object of a
/// subentity of `Note`) and cannot be passed where a `ManagedID<Folder>` is expected.
///
/// ```swift
/// let id: ManagedID<Note> = try await container.performBackgroundTask { context in
///   let note = Note(context: context)
///   try context.save()
///   return note.managedID
/// }
/// try await container.viewContext.perform { context in
///   let note = try context.existingObject(with: id)   // a Note, no cast
/// }
/// ```
///
/// IDs are `Sendable` values: they are what crosses from one context, task or process to
/// another. Two IDs are equal when they name the same row of the same store.
public struct ManagedID<Entity: ManagedObject>: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The untyped form, as history and tools use it.
  public let untyped: AnyManagedID

  init(unchecked untyped: AnyManagedID) {
    self.untyped = untyped
  }

  /// Parses and checks a URI from `uriRepresentation`.
  ///
  /// The store it names must be open in this process, and its entity must be `Entity` or one
  /// of `Entity`'s subentities.
  ///
  /// - Throws: `ManagedIDError` saying which check failed.
  public init(validating uri: URL) throws(ManagedIDError) {
    try self.init(validating: AnyManagedID(uri: uri))
  }

  /// Checks an untyped ID against `Entity`, as `init(validating: URL)` does.
  public init(validating untyped: AnyManagedID) throws(ManagedIDError) {
    guard let model = ModelRegistry.model(for: untyped.storeIdentifier) else {
      throw .unknownStore(untyped.storeIdentifier)
    }
    guard model.entity(named: untyped.entityName) != nil else {
      throw .unknownEntity(untyped.entityName)
    }
    guard let expected = model.entity(for: Entity.self) else {
      throw .unknownEntity(String(describing: Entity.self))
    }
    guard model.isEntity(untyped.entityName, kindOf: expected.name) else {
      throw .entityMismatch(id: untyped.description, expected: expected.name, found: untyped.entityName)
    }
    self.untyped = untyped
  }

  /// The row's primary key, or nil for a temporary ID.
  public var primaryKey: Int64? { untyped.primaryKey }
  /// True for the ID of an inserted object not saved yet.
  public var isTemporaryID: Bool { untyped.isTemporaryID }
  /// The UUID of the store the row belongs to.
  public var storeIdentifier: UUID { untyped.storeIdentifier }
  /// The concrete entity of the row.
  public var entityName: String { untyped.entityName }
  /// `typedstore://<store-uuid>/<Entity>/p<pk>`.
  public var uriRepresentation: URL { untyped.uriRepresentation }

  /// The ID's URI, as `uriRepresentation`.
  public var description: String { untyped.description }

  /// Encodes the ID as its URI string.
  public func encode(to encoder: any Encoder) throws {
    try untyped.encode(to: encoder)
  }

  /// Decodes the URI form. When its store is open in this process the entity is checked as
  /// `init(validating:)` does; otherwise only the syntax can be.
  public init(from decoder: any Decoder) throws {
    let untyped = try AnyManagedID(from: decoder)
    do {
      try self.init(validating: untyped)
    } catch .unknownStore {
      self.init(unchecked: untyped)
    }
  }
}

/// A typed or untyped ID, as a predicate's captured value.
protocol ManagedIDConvertible {
  var untypedManagedID: AnyManagedID { get }
}

extension ManagedID: ManagedIDConvertible {
  var untypedManagedID: AnyManagedID { untyped }
}
