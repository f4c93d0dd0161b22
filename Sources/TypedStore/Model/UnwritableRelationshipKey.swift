/// A to-one relationship whose key column cannot be written yet: the related object has no
/// permanent ID, or belongs to another context.
///
/// Thrown by the key column's accessor, in the model layer, which names nothing of the store;
/// a save or batch request reports it as `StoreError.invalidValue` (see
/// `AttributeAccessor.storedValue(of:)`), the error users see.
struct UnwritableRelationshipKey: Error {
  let entity: String
  let relationship: String
  let reason: String
}
