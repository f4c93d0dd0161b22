// Checking one value before it is set, as Core Data's `validateValue(_:forKey:)`: the rules a
// save checks for the attribute (`@Attribute(bounds:)` and `@Attribute(validate:)`), applied
// to a candidate value, so that a form can refuse input before it reaches the object.
extension ManagedObject {
  /// Checks `value` against the rules of the attribute at `keyPath` (its `bounds:` and its
  /// `validate:`) without setting it: Core Data's `validateValue(_:forKey:)`, typed.
  ///
  /// ```swift
  /// do {
  ///   try note.validateValue(input, for: \Note.title)
  ///   note.title = input
  /// } catch StoreError.validationFailed(let failures) {
  ///   show(failures)
  /// }
  /// ```
  ///
  /// - Throws: `StoreError.validationFailed` with the attribute's failures;
  ///   `StoreError.invalidValue` for an object in no context (it has no model to check
  ///   against) or a key path that names no attribute of the object.
  public func validateValue<Object: ManagedObject, Value>(_ value: Value, for keyPath: KeyPath<Object, Value>) throws {
    guard let entity, let state = tracker as? ContextState, let id = state.anyID(of: self) else {
      throw StoreError.invalidValue(
        entity: String(describing: type(of: self)), attribute: "\(keyPath)", reason: "the object is in no context")
    }
    guard let slot = state.model.attributeSlot(for: keyPath, on: entity) else {
      throw StoreError.invalidValue(
        entity: entity.name, attribute: "\(keyPath)", reason: "the key path names no attribute of the object")
    }
    let failures = state.attributeFailures(entity.storedAttributes[slot], value, id: id)
    if !failures.isEmpty { throw StoreError.validationFailed(failures) }
  }
}
