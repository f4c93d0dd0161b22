import Foundation

/// The identity of one row of a store, for any entity: what history and tools carry.
///
/// ```swift
/// let any: AnyManagedID = note.managedID.untyped
/// if let id = any.typed(as: Note.self) { ... }
/// ```
public struct AnyManagedID: Sendable, Hashable, Codable, CustomStringConvertible {
  enum Key: Hashable, Sendable {
    case permanent(Int64)
    /// A number unique in the process, and the process's random nonce so that temporary IDs
    /// of different processes never compare equal.
    case temporary(nonce: UInt64, number: Int64)
  }

  /// The UUID of the store the row belongs to.
  public let storeIdentifier: UUID
  /// The entity of the object (the concrete subentity, for an object of a subentity).
  public let entityName: String
  let key: Key

  init(storeIdentifier: UUID, entityName: String, key: Key) {
    self.storeIdentifier = storeIdentifier
    self.entityName = entityName
    self.key = key
  }

  /// The row's primary key, or nil for a temporary ID.
  public var primaryKey: Int64? {
    if case .permanent(let pk) = key { return pk }
    return nil
  }

  /// True for the ID of an inserted object that was not saved (nor given a permanent ID).
  public var isTemporaryID: Bool {
    if case .temporary = key { return true }
    return false
  }

  /// `typedstore://<store-uuid>/<Entity>/p<pk>`, or `.../t<nonce>-<n>` for a temporary ID.
  public var uriRepresentation: URL {
    let last: String
    switch key {
    case .permanent(let pk): last = "p\(pk)"
    case .temporary(let nonce, let number): last = "t\(String(nonce, radix: 16))-\(number)"
    }
    // The components are a UUID, a validated entity name and digits: always a valid URL.
    return URL(string: "typedstore://\(storeIdentifier.uuidString)/\(entityName)/\(last)")
      ?? URL(fileURLWithPath: "/")
  }

  /// Parses a URI made by `uriRepresentation`, checking its syntax only.
  public init(uri: URL) throws(ManagedIDError) {
    let text = uri.absoluteString
    guard uri.scheme == "typedstore", let host = uri.host, let store = UUID(uuidString: host) else {
      throw .malformedURI(text)
    }
    let parts = uri.path.split(separator: "/", omittingEmptySubsequences: true)
    guard parts.count == 2, ManagedObjectModel.isValidIdentifier(String(parts[0])) else {
      throw .malformedURI(text)
    }
    let last = parts[1]
    let key: Key
    if last.first == "p", let pk = Int64(last.dropFirst()), pk > 0 {
      key = .permanent(pk)
    } else if last.first == "t" {
      let halves = last.dropFirst().split(separator: "-")
      guard halves.count == 2, let nonce = UInt64(halves[0], radix: 16), let number = Int64(halves[1]) else {
        throw .malformedURI(text)
      }
      key = .temporary(nonce: nonce, number: number)
    } else {
      throw .malformedURI(text)
    }
    self.init(storeIdentifier: store, entityName: String(parts[0]), key: key)
  }

  /// This ID typed as `Entity`, or nil when the row's entity is not `Entity` or one of its
  /// subentities (checked against the model of the store, when it is open in this process).
  public func typed<Entity: ManagedObject>(as type: Entity.Type) -> ManagedID<Entity>? {
    try? ManagedID<Entity>(validating: self)
  }

  public var description: String { uriRepresentation.absoluteString }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(uriRepresentation.absoluteString)
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    guard let url = URL(string: text) else { throw ManagedIDError.malformedURI(text) }
    try self.init(uri: url)
  }
}

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

  public var description: String { untyped.description }

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

/// A typed or untyped ID, as a predicate's captured value.
protocol ManagedIDConvertible {
  var untypedManagedID: AnyManagedID { get }
}

extension AnyManagedID: ManagedIDConvertible {
  var untypedManagedID: AnyManagedID { self }
}

extension ManagedID: ManagedIDConvertible {
  var untypedManagedID: AnyManagedID { untyped }
}
