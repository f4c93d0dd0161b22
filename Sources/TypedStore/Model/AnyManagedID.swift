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

  /// The ID's URI, as `uriRepresentation`.
  public var description: String { uriRepresentation.absoluteString }

  /// Encodes the ID as its URI string.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(uriRepresentation.absoluteString)
  }

  /// Decodes an ID from its URI string; throws for a string that is not an ID's URI.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    guard let url = URL(string: text) else { throw ManagedIDError.malformedURI(text) }
    try self.init(uri: url)
  }
}

extension AnyManagedID: ManagedIDConvertible {
  var untypedManagedID: AnyManagedID { self }
}
