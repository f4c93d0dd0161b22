extension AttributeAccessor {
  /// The value a save or batch request writes for `object`'s attribute: `encode(_:)`'s, with a
  /// to-one key that cannot be written yet reported as the store's `StoreError.invalidValue`.
  func storedValue(of object: ManagedObject) throws -> PrimitiveValue {
    do {
      return try encode(object)
    } catch let error as UnwritableRelationshipKey {
      throw StoreError.invalidValue(entity: error.entity, attribute: error.relationship, reason: error.reason)
    }
  }
}
