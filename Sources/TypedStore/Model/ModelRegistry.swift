import Foundation
import Synchronization

/// The stores opened in this process, by UUID, so that a `ManagedID` URI can be validated
/// against the model of the store it names.
enum ModelRegistry {
  private static let models = Mutex<[UUID: ManagedObjectModel]>([:])

  static func register(_ identifier: UUID, model: ManagedObjectModel) {
    models.withLock { $0[identifier] = model }
  }

  static func model(for identifier: UUID) -> ManagedObjectModel? {
    models.withLock { $0[identifier] }
  }

  /// A model of an open store that has `type` as an entity, if any.
  static func model(containing type: ManagedObject.Type) -> ManagedObjectModel? {
    models.withLock { models in models.values.first { $0.entity(for: type) != nil } }
  }
}
