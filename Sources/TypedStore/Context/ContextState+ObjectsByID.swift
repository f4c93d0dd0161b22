// Objects by ID: what `existingObject(with:)`, `object(with:)` and `registeredObject(for:)`
// of both context forms do.
extension ContextState {
  func existingObject<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    try object(named: id, loading: true)
  }

  func object<Entity: ManagedObject>(with id: ManagedID<Entity>) throws -> Entity {
    try object(named: id, loading: false)
  }

  func registeredObject<Entity: ManagedObject>(for id: ManagedID<Entity>) throws(ManagedIDError) -> Entity? {
    let (key, _) = try resolve(id)
    guard let object = registeredObject(for: key) else { return nil }
    try checkEntity(of: object, named: id.untyped)
    return object as? Entity
  }

  /// The object `id` names: the registered one, or — once the row is known to exist and to be
  /// of the entity the ID says (one primary-key read) — a new fault of it; with `loading`, a
  /// fault is loaded. Nothing is registered for an ID that names no row.
  private func object<Entity: ManagedObject>(named id: ManagedID<Entity>, loading: Bool) throws -> Entity {
    let (key, entity) = try resolve(id)
    let object: ManagedObject
    if let registered = registered[key], registered.lifecycle != .invalidated {
      try checkEntity(of: registered, named: id.untyped)
      if loading && registered.isFault { try load(registered) }
      object = registered
    } else {
      // Not registered, so the ID is permanent (`resolve` refused any other temporary one).
      let root = model.entities[Int(entity.rootIndex)]
      guard let concrete = try store.entityOfRow(primaryKey: key.value, in: root, connection: reader()) else {
        throw ManagedIDError.noSuchRow(id.description)
      }
      guard concrete === entity else {
        throw ManagedIDError.entityMismatch(id: id.description, expected: entity.name, found: concrete.name)
      }
      object = fault(for: key, entity: concrete)
      if loading { try loadOrForget(object, key: key) }
    }
    guard let typed = object as? Entity else {
      throw ManagedIDError.entityMismatch(
        id: id.description, expected: String(describing: Entity.self), found: object.entity?.name ?? "?")
    }
    return typed
  }
}
