import Foundation
import Synchronization

/// Marks a stored property of a `ManagedObject` subclass as a relationship to other objects.
///
/// ```swift
/// final class Folder: ManagedObject {
///   @Attribute var name: String = ""
///   @Relationship(deleteRule: .cascade) var notes: Set<Note>
/// }
///
/// final class Note: ManagedObject {
///   @Attribute var title: String = ""
///   @Relationship(inverse: \Folder.notes, deleteRule: .nullify) var folder: Folder?
/// }
///
/// note.folder = inbox                 // inbox.notes.contains(note) is true at once
/// inbox.$notes.remove(note)           // note.folder is nil at once
/// ```
///
/// The property's type says what it is: `Destination?` is a to-one relationship,
/// `Set<Destination>` an unordered to-many, `[Destination]` an ordered to-many (its order is
/// kept across save and fetch). Every relationship has an inverse, named with `inverse:` on
/// one side of the pair at least (as in SwiftData: Swift cannot type-check two wrapped
/// properties whose attributes name each other, a circular reference). The model pairs them
/// and refuses a relationship with no inverse, or whose inverse does not point back
/// (`ModelError`). Setting either side updates the other side in memory
/// at once, and removes the object from its old partner.
///
/// A relationship is a fault until touched: reading a to-many loads its objects with one
/// query (faults themselves until their attributes are read); reading a to-one costs no query
/// when this object's row holds the key (but one small read, of the related row's entity, when
/// the destination has subentities). To change a to-many, assign the whole value (also
/// through a mutating method, `folder.notes.insert(note)`: the old and new values are compared,
/// so its cost grows with the size of the relationship), or use the typed helpers of its
/// projected value, which cost the same whatever the size: `folder.$notes.insert(note)`,
/// `folder.$notes.remove(note)`, and for ordered ones `list.$items.insert(item, at: 0)`.
@propertyWrapper
public struct Relationship<Value> {
  /// The current value: meaningful unless `isFault`.
  @usableFromInline var value: Value
  /// The relationship's index in its entity, assigned when the object joins a context.
  @usableFromInline var slot: Int32 = -1
  /// True while `value` has not been loaded from the store.
  @usableFromInline var isFault = false
  /// For a to-one relationship whose key this object's row holds, while it is a fault: the
  /// related row's primary key, or 0 for none.
  @usableFromInline var foreignKey: Int64 = 0

  /// Property wrappers that use the enclosing instance have no plain `wrappedValue`.
  @available(*, unavailable, message: "@Relationship is only available on ManagedObject subclasses")
  public var wrappedValue: Value {
    get { fatalError("@Relationship is only available on ManagedObject subclasses") }
    set { fatalError("@Relationship is only available on ManagedObject subclasses") }
  }

  /// The typed helpers (`$notes`), reached through the enclosing instance.
  @available(*, unavailable, message: "@Relationship is only available on ManagedObject subclasses")
  public var projectedValue: RelationshipEditor<Value> {
    fatalError("@Relationship is only available on ManagedObject subclasses")
  }

  /// Reads load the relationship when it is a fault; writes update the inverse side.
  @inlinable
  public static subscript<Object: ManagedObject>(
    _enclosingInstance object: Object,
    wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
    storage storageKeyPath: ReferenceWritableKeyPath<Object, Relationship<Value>>
  ) -> Value {
    get {
      if object._needsAccessHook || object[keyPath: storageKeyPath].isFault {
        object._willAccessRelationship(slot: object[keyPath: storageKeyPath].slot)
      }
      return object[keyPath: storageKeyPath].value
    }
    set {
      let slot = object[keyPath: storageKeyPath].slot
      guard slot >= 0 else {  // an object in no context: nothing to keep consistent yet
        object[keyPath: storageKeyPath].value = newValue
        return
      }
      object._relationshipWillChange(slot: slot)
      let old = object[keyPath: storageKeyPath].value
      object[keyPath: storageKeyPath].value = newValue
      object._relationshipDidChange(slot: slot, from: old)
    }
  }

  /// The typed helpers of a to-many relationship: `folder.$notes.insert(note)`.
  @inlinable
  public static subscript<Object: ManagedObject>(
    _enclosingInstance object: Object,
    projected projectedKeyPath: KeyPath<Object, RelationshipEditor<Value>>,
    storage storageKeyPath: ReferenceWritableKeyPath<Object, Relationship<Value>>
  ) -> RelationshipEditor<Value> {
    RelationshipEditor(object: object, slot: object[keyPath: storageKeyPath].slot)
  }

  /// Inlinable, so that it is specialized in the entity's module: called generically, it
  /// made creating every object slower, per relationship. The declaration (and the
  /// inverse's key path, an autoclosure in the public initializers) is made only while the
  /// model records it: a key path made for every new object cost a runtime lookup, a retain
  /// and a release.
  @inlinable
  init(value: Value, declaration: @autoclosure () -> RelationshipDeclaration) {
    self.value = value
    if DeclarationRecorder.isActive.load(ordering: .relaxed) {
      DeclarationRecorder.record(declaration())
    }
  }
}

/// What a `@Relationship` initializer records while the model builds its prototype object.
@usableFromInline
struct RelationshipDeclaration: Sendable {
  /// The inverse, when this side names it (one side of each pair must).
  @usableFromInline var inverse: (AnyKeyPath & Sendable)?
  @usableFromInline var deleteRule: DeleteRule
  @usableFromInline var minimumCount: Int?
  @usableFromInline var maximumCount: Int?
  @usableFromInline var isRequired: Bool
  /// The relationship's name in the previous model version (`originalName:`).
  @usableFromInline var originalName: String?
  /// Whether the relationship is its own inverse (`inverse: .itself`).
  @usableFromInline var isOwnInverse = false
  /// For a `Set` relationship: builds its value from objects. Made in the initializer, which is
  /// inlined into the entity's module where the element type is known, so the set's insertions
  /// are specialized there (the library's own generic code would not be).
  @usableFromInline var makeValue: RelationshipValueBuilder?

  @inlinable
  init(
    inverse: (AnyKeyPath & Sendable)?, deleteRule: DeleteRule, minimumCount: Int? = nil, maximumCount: Int? = nil,
    isRequired: Bool = false, originalName: String? = nil, makeValue: RelationshipValueBuilder? = nil
  ) {
    self.originalName = originalName
    self.inverse = inverse
    self.deleteRule = deleteRule
    self.minimumCount = minimumCount
    self.maximumCount = maximumCount
    self.isRequired = isRequired
    self.makeValue = makeValue
  }

  /// A relationship that is its own inverse.
  @inlinable
  init(ownInverse deleteRule: DeleteRule, originalName: String?, makeValue: RelationshipValueBuilder?) {
    self.init(inverse: nil, deleteRule: deleteRule, originalName: originalName, makeValue: makeValue)
    isOwnInverse = true
  }
}

/// The inverse of a relationship that is its own: a person's `friends`. A key path cannot name
/// the property it is declared on (Swift reads it as a circular reference), so the declaration
/// says so with `.itself`. An unordered to-many only, for now: a to-one that is its own inverse
/// (a spouse) is kept in a key column of each row, which deletes made in the store itself do
/// not yet clear.
///
/// ```swift
/// @Relationship(inverse: .itself) var friends: Set<Person>
/// ```
public enum RelationshipInverse: Sendable {
  /// The relationship is its own inverse: linking `a` to `b` links `b` to `a`.
  case itself
}

// MARK: - Initializers, one per kind

extension Relationship {
  /// Declares a to-many relationship that is its own inverse: inserting `b` in `a.friends`
  /// inserts `a` in `b.friends`.
  ///
  /// ```swift
  /// @Relationship(inverse: .itself) var friends: Set<Person>
  /// ```
  @inlinable
  public init<Destination: ManagedObject>(
    inverse: RelationshipInverse, deleteRule: DeleteRule = .nullify, minimumCount: Int? = nil,
    maximumCount: Int? = nil, originalName: String? = nil
  ) where Value == Set<Destination> {
    var declaration = RelationshipDeclaration(
      ownInverse: deleteRule, originalName: originalName, makeValue: makeSet(Destination.self))
    declaration.minimumCount = minimumCount
    declaration.maximumCount = maximumCount
    self.init(value: [], declaration: declaration)
  }
}

extension Relationship {
  /// Declares a to-one relationship.
  ///
  /// ```swift
  /// @Relationship(inverse: \Folder.notes, deleteRule: .nullify) var folder: Folder?
  /// ```
  ///
  /// - Parameters:
  ///   - inverse: the relationship of `Destination` that points back at this one.
  ///   - deleteRule: what deleting this object does to the related object.
  ///   - required: a save throws `StoreError.validationFailed` while the relationship is nil.
  ///   - originalName: the relationship's name in the previous model version, when it was
  ///     renamed: migrating a store keeps its links ([Migration](migration.md)).
  @inlinable
  public init<Destination: ManagedObject, Inverse>(
    inverse: @autoclosure () -> KeyPath<Destination, Inverse> & Sendable, deleteRule: DeleteRule = .nullify,
    required: Bool = false, originalName: String? = nil
  ) where Value == Destination? {
    self.init(
      value: nil,
      declaration: RelationshipDeclaration(
        inverse: inverse(), deleteRule: deleteRule, isRequired: required, originalName: originalName)
    )
  }

  /// Declares a to-one relationship whose inverse names it (`inverse:` on the other side).
  @inlinable
  public init<Destination: ManagedObject>(
    deleteRule: DeleteRule = .nullify, required: Bool = false, originalName: String? = nil
  ) where Value == Destination? {
    self.init(
      value: nil,
      declaration: RelationshipDeclaration(
        inverse: nil, deleteRule: deleteRule, isRequired: required, originalName: originalName))
  }

  /// Declares an unordered to-many relationship.
  ///
  /// ```swift
  /// @Relationship(inverse: \Note.folder, deleteRule: .cascade) var notes: Set<Note>
  /// ```
  ///
  /// - Parameters:
  ///   - inverse: the relationship of `Destination` that points back at this one.
  ///   - deleteRule: what deleting this object does to the related objects.
  ///   - minimumCount: a save throws `StoreError.validationFailed` for fewer objects.
  ///   - maximumCount: a save throws `StoreError.validationFailed` for more objects.
  ///   - originalName: the relationship's name in the previous model version, when it was
  ///     renamed: migrating a store keeps its links.
  @inlinable
  public init<Destination: ManagedObject, Inverse>(
    inverse: @autoclosure () -> KeyPath<Destination, Inverse> & Sendable, deleteRule: DeleteRule = .nullify,
    minimumCount: Int? = nil, maximumCount: Int? = nil, originalName: String? = nil
  ) where Value == Set<Destination> {
    self.init(
      value: [],
      declaration: RelationshipDeclaration(
        inverse: inverse(), deleteRule: deleteRule, minimumCount: minimumCount, maximumCount: maximumCount,
        originalName: originalName, makeValue: makeSet(Destination.self)))
  }

  /// Declares an unordered to-many relationship whose inverse names it.
  ///
  /// ```swift
  /// @Relationship(deleteRule: .cascade) var notes: Set<Note>   // Note.folder names \Folder.notes
  /// ```
  @inlinable
  public init<Destination: ManagedObject>(
    deleteRule: DeleteRule = .nullify, minimumCount: Int? = nil, maximumCount: Int? = nil, originalName: String? = nil
  ) where Value == Set<Destination> {
    self.init(
      value: [],
      declaration: RelationshipDeclaration(
        inverse: nil, deleteRule: deleteRule, minimumCount: minimumCount, maximumCount: maximumCount,
        originalName: originalName, makeValue: makeSet(Destination.self)))
  }

  /// Declares an ordered to-many relationship: its order is stored.
  ///
  /// ```swift
  /// @Relationship(inverse: \Item.list, deleteRule: .cascade) var items: [Item]
  /// ```
  ///
  /// An object appears at most once: assigning an array with repeats keeps the first of each.
  @inlinable
  public init<Destination: ManagedObject, Inverse>(
    inverse: @autoclosure () -> KeyPath<Destination, Inverse> & Sendable, deleteRule: DeleteRule = .nullify,
    minimumCount: Int? = nil, maximumCount: Int? = nil, originalName: String? = nil
  ) where Value == [Destination] {
    self.init(
      value: [],
      declaration: RelationshipDeclaration(
        inverse: inverse(), deleteRule: deleteRule, minimumCount: minimumCount, maximumCount: maximumCount,
        originalName: originalName))
  }

  /// Declares an ordered to-many relationship whose inverse names it.
  @inlinable
  public init<Destination: ManagedObject>(
    deleteRule: DeleteRule = .nullify, minimumCount: Int? = nil, maximumCount: Int? = nil, originalName: String? = nil
  ) where Value == [Destination] {
    self.init(
      value: [],
      declaration: RelationshipDeclaration(
        inverse: nil, deleteRule: deleteRule, minimumCount: minimumCount, maximumCount: maximumCount,
        originalName: originalName))
  }
}

/// Builds a relationship's value from objects the caller keeps alive: passed unretained, so
/// that the value's own reference is the only one taken per object.
@usableFromInline
typealias RelationshipValueBuilder = @Sendable (UnsafeBufferPointer<Unmanaged<ManagedObject>>) -> Any

/// Builds a `Set<Element>` from objects, specialized where it is inlined (see
/// `RelationshipDeclaration.makeValue`).
@inlinable
func makeSet<Element: ManagedObject>(_: Element.Type) -> RelationshipValueBuilder {
  { objects in
    var set = Set<Element>(minimumCapacity: objects.count)
    for object in objects {
      if let element = object.takeUnretainedValue() as? Element { set.insert(element) }
    }
    return set
  }
}

// MARK: - @Attribute on a relationship's type

extension Attribute {
  /// A property whose type is a managed object is a relationship.
  @available(
    *, unavailable,
    message: "a property of a ManagedObject type is a relationship: declare it with @Relationship(inverse:deleteRule:)"
  )
  public init<Destination: ManagedObject>(wrappedValue: Value) where Value == Destination? {
    fatalError("unavailable")
  }

  /// A property whose type is a set of managed objects is a relationship.
  @available(
    *, unavailable,
    message: """
      a property of type Set<ManagedObject type> is a to-many relationship: \
      declare it with @Relationship(inverse:deleteRule:)
      """
  )
  public init<Destination: ManagedObject>(wrappedValue: Value) where Value == Set<Destination> {
    fatalError("unavailable")
  }

  /// A property whose type is an array of managed objects is a relationship.
  @available(
    *, unavailable,
    message: """
      a property of type [ManagedObject type] is an ordered relationship: \
      declare it with @Relationship(inverse:deleteRule:)
      """
  )
  public init<Destination: ManagedObject>(wrappedValue: Value) where Value == [Destination] {
    fatalError("unavailable")
  }
}
