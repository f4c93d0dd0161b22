// What a context tells its observers about its own work, as Core Data's context notifications
// (`NSManagedObjectContext.ObjectsDidChangeMessage`, `WillSaveMessage`, `DidSaveMessage`,
// `DidSaveObjectIDsMessage`): typed messages, delivered on the context's executor to the
// observers registered there. The changes of other contexts and processes arrive as
// `StoreChanges` instead.

/// A message a context sends its observers (`ManagedObjectContext.addObserver(for:using:)`).
public protocol ContextMessage {
  /// Which of the context's messages this type is.
  static var kind: ContextMessageKind { get }
}

/// The kinds of `ContextMessage`.
public enum ContextMessageKind: Sendable, Hashable {
  /// `ManagedObjectContext.ObjectsDidChangeMessage`.
  case objectsDidChange
  /// `ManagedObjectContext.WillSaveMessage`.
  case willSave
  /// `ManagedObjectContext.DidSaveMessage`.
  case didSave
  /// `ManagedObjectContext.DidSaveObjectIDsMessage`.
  case didSaveObjectIDs
}

/// What removes an observer again (`ManagedObjectContext.removeObserver(_:)`).
///
/// ```swift
/// let token = context.addObserver(for: ManagedObjectContext.WillSaveMessage.self) { _ in print("saving") }
/// context.removeObserver(token)
/// ```
public struct ContextObservationToken: Sendable, Hashable {
  /// The context that made it: another context's `removeObserver` removes nothing.
  let context: ObjectIdentifier
  let number: Int
  let kind: ContextMessageKind
}

extension ManagedObjectContext {
  /// The objects of a context whose unsaved state changed since it last processed its pending
  /// changes (Core Data's `ObjectsDidChangeMessage`): sent by `processPendingChanges()`,
  /// which runs at the end of each `perform` block, at the start of a save, after a merge and
  /// when called. Each object is in one set at most.
  ///
  /// ```swift
  /// context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
  ///   for note in message.updated(Note.self) { print("edited", note.title) }
  /// }
  /// ```
  public struct ObjectsDidChangeMessage: ContextMessage {
    public static var kind: ContextMessageKind { .objectsDidChange }
    /// Objects inserted (and not deleted again before the message).
    public internal(set) var inserted: Set<ManagedObject> = []
    /// Objects whose attributes or relationships changed (not inserted in the same message).
    public internal(set) var updated: Set<ManagedObject> = []
    /// Objects deleted: by `delete(_:)`, or by another context's or process's change merged in.
    public internal(set) var deleted: Set<ManagedObject> = []
    /// Objects refreshed (`refresh(_:mergeChanges:)`, `refreshAllObjects()`, a merge of a
    /// change to them), or whose changes `rollback()` discarded.
    public internal(set) var refreshed: Set<ManagedObject> = []
    /// Objects that left the context and must not be used: inserted objects `rollback()`
    /// dropped.
    public internal(set) var invalidated: Set<ManagedObject> = []
    /// True when `reset()` invalidated every object of the context.
    public internal(set) var invalidatedAll = false

    /// The inserted objects of one entity type (its subentities' included).
    public func inserted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> { objects(of: inserted) }
    /// The updated objects of one entity type.
    public func updated<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> { objects(of: updated) }
    /// The deleted objects of one entity type.
    public func deleted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> { objects(of: deleted) }
    /// The refreshed objects of one entity type.
    public func refreshed<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> { objects(of: refreshed) }

    var isEmpty: Bool {
      inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty
        && !invalidatedAll
    }
  }

  /// Sent when a save with changes begins, before the objects' `willSave()` (Core Data's
  /// `WillSaveMessage`).
  ///
  /// ```swift
  /// context.addObserver(for: ManagedObjectContext.WillSaveMessage.self) { _ in stampEdits() }
  /// ```
  public struct WillSaveMessage: ContextMessage, Sendable {
    public static var kind: ContextMessageKind { .willSave }
  }

  /// Sent when a save committed, after the objects' `didSave()` (Core Data's
  /// `DidSaveMessage`): the objects it wrote.
  ///
  /// ```swift
  /// context.addObserver(for: ManagedObjectContext.DidSaveMessage.self) { message in
  ///   print(message.inserted(Note.self).map(\.title))
  /// }
  /// ```
  public struct DidSaveMessage: ContextMessage {
    public static var kind: ContextMessageKind { .didSave }
    /// The objects the save inserted (their IDs are permanent now).
    public internal(set) var inserted: Set<ManagedObject> = []
    /// The objects whose changes the save wrote.
    public internal(set) var updated: Set<ManagedObject> = []
    /// The objects the save deleted (delete rules in the store may have deleted more rows:
    /// `DidSaveObjectIDsMessage` lists those too).
    public internal(set) var deleted: Set<ManagedObject> = []

    /// The inserted objects of one entity type (its subentities' included).
    public func inserted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> {
      objects(of: inserted)
    }
    /// The updated objects of one entity type.
    public func updated<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> {
      objects(of: updated)
    }
    /// The deleted objects of one entity type.
    public func deleted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<Entity> {
      objects(of: deleted)
    }
  }

  /// Sent when a save committed, with the IDs of the rows it wrote (Core Data's
  /// `DidSaveObjectIDsMessage`): `Sendable`, so it may be passed to other contexts and tasks.
  ///
  /// ```swift
  /// context.addObserver(for: ManagedObjectContext.DidSaveObjectIDsMessage.self) { message in
  ///   let ids = message.inserted(Note.self)   // Set<ManagedID<Note>>
  ///   Task { await index(ids) }
  /// }
  /// ```
  public struct DidSaveObjectIDsMessage: ContextMessage, Sendable {
    public static var kind: ContextMessageKind { .didSaveObjectIDs }
    /// The rows the save inserted.
    public internal(set) var insertedIDs: Set<AnyManagedID> = []
    /// The rows it updated, with those the store's delete rules changed (`.nullify`).
    public internal(set) var updatedIDs: Set<AnyManagedID> = []
    /// The rows it deleted, with those the store's delete rules deleted (`.cascade`).
    public internal(set) var deletedIDs: Set<AnyManagedID> = []

    /// The inserted rows of one entity (its subentities' included), typed.
    public func inserted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      Self.typed(insertedIDs)
    }
    /// The updated rows of one entity, typed.
    public func updated<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      Self.typed(updatedIDs)
    }
    /// The deleted rows of one entity, typed.
    public func deleted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      Self.typed(deletedIDs)
    }

    private static func typed<Entity: ManagedObject>(_ ids: Set<AnyManagedID>) -> Set<ManagedID<Entity>> {
      Set(ids.compactMap { $0.typed(as: Entity.self) })
    }
  }
}

/// The objects of `objects` that are `Entity`s (its subentities' included), typed.
private func objects<Entity: ManagedObject>(of objects: Set<ManagedObject>) -> Set<Entity> {
  Set(objects.compactMap { $0 as? Entity })
}
