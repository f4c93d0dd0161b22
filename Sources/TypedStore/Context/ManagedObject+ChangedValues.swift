// Committed and changed values, as Core Data's `committedValues(forKeys:)`, `changedValues()`
// and `hasPersistentChangedValues`: the object keeps the saved value of each attribute it
// changed since the last save (`ManagedObject.committedValues`), and these read it.
extension ManagedObject {
  /// The saved values of the attributes named `keys` (every attribute when nil), by name:
  /// for an attribute changed since the last save, the value the store has; for the others,
  /// the current value. A nil value is an `Optional.none`. An object not saved yet has no
  /// saved values: the answer is empty. Attributes only; unknown names are left out.
  ///
  /// ```swift
  /// note.title = "Renamed"
  /// note.committedValues(forKeys: ["title"])["title"] as? String   // the saved title
  /// ```
  public func committedValues(forKeys keys: [String]? = nil) -> [String: Any] {
    guard lifecycle == .persisted, let entity else { return [:] }
    var values: [String: Any] = [:]
    for (slot, attribute) in entity.storedAttributes.enumerated() where attribute.foreignKeyOf == nil {
      guard keys?.contains(attribute.name) ?? true else { continue }
      let stored = committedValues[Int32(slot)] ?? (try? entity.accessors[slot].encode(self))
      if let stored, let value = try? attribute.accessor.codec.decodeAny(stored) { values[attribute.name] = value }
    }
    return values
  }

  /// The saved value of the attribute at `keyPath`, typed; nil for an object not saved yet or
  /// a key path that names no attribute of the object itself.
  ///
  /// ```swift
  /// if let saved = note.committedValue(for: \Note.title), saved != note.title { print("was", saved) }
  /// ```
  public func committedValue<Object: ManagedObject, Value>(for keyPath: KeyPath<Object, Value>) -> Value? {
    guard lifecycle == .persisted, let entity, let model = (tracker as? ContextState)?.model,
      let slot = model.attributeSlot(for: keyPath, on: entity)
    else { return nil }
    let stored = committedValues[Int32(slot)] ?? (try? entity.accessors[slot].encode(self))
    return stored.flatMap { try? entity.storedAttributes[slot].accessor.codec.decodeAny($0) } as? Value
  }

  /// The current values of the attributes changed since the last save, by name (every
  /// attribute of an object not saved yet). Attributes only.
  ///
  /// ```swift
  /// for (name, value) in note.changedValues() { print(name, value) }
  /// ```
  public func changedValues() -> [String: Any] {
    guard let entity else { return [:] }
    var values: [String: Any] = [:]
    for (slot, attribute) in entity.storedAttributes.enumerated() where attribute.foreignKeyOf == nil {
      guard isInserted || committedValues[Int32(slot)] != nil else { continue }
      if let stored = try? entity.accessors[slot].encode(self),
        let value = try? attribute.accessor.codec.decodeAny(stored)
      {
        values[attribute.name] = value
      }
    }
    return values
  }

  /// Whether a property the store keeps changed since the last save (an object not saved yet
  /// counts as changed). TypedStore keeps every declared property, so this is `isInserted ||
  /// isUpdated`.
  ///
  /// ```swift
  /// if note.hasPersistentChangedValues { try context.save() }
  /// ```
  public var hasPersistentChangedValues: Bool { isInserted || isUpdated }
}
