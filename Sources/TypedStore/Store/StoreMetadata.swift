import Foundation

/// What a store file says about itself, read without opening it as a store: its UUID, format
/// version and the model it keeps (as Core Data's store metadata).
///
/// ```swift
/// let metadata = try PersistentStore.metadataForPersistentStore(at: url)
/// print(metadata.storeIdentifier, metadata.schema.entities.map(\.name))
/// ```
public struct StoreMetadata: Sendable, Equatable {
  /// The store's UUID, fixed at creation; part of every object URI and history token.
  public let storeIdentifier: UUID
  /// The file format version (`PersistentStore.formatVersion` for this library).
  public let formatVersion: Int
  /// The version hash of the model the store was created with.
  public let modelHash: String
  /// That model's JSON form, as the store keeps it.
  public let modelJSON: Data
  /// That model, decoded.
  public let schema: ModelSchema
}
