import Foundation
import Synchronization

/// Marks a stored property of a `ManagedObject` subclass as a persistent attribute.
///
/// ```swift
/// final class Note: ManagedObject {
///   @Attribute var title: String = ""
///   @Attribute(persistentName: "created") var createdAt: Date? = nil
///   @Attribute var status: Status = .draft                  // RawRepresentable, stored raw
///   @Attribute(.codable) var options: Options? = nil         // Codable, stored as JSON
///   @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
/// }
/// ```
///
/// The value written after `=` is the attribute's default for new objects. The property's
/// Swift name is the attribute's name; `persistentName` renames the column only, and
/// `originalName` names the attribute a model version before this one called it, so that
/// migrating a store renames it and keeps its values (`@Attribute(originalName: "title")`).
/// Reading an attribute of a fault loads the object's row; writing one records the change in
/// the object's context.
@propertyWrapper
public struct Attribute<Value> {
  /// The current value. Stored inline in the object so reads need no lookup.
  @usableFromInline var value: Value
  /// The attribute's index in its entity, assigned when the object joins a context.
  @usableFromInline var slot: Int32 = -1

  /// Property wrappers that use the enclosing instance have no plain `wrappedValue`.
  @available(*, unavailable, message: "@Attribute is only available on ManagedObject subclasses")
  public var wrappedValue: Value {
    get { fatalError("@Attribute is only available on ManagedObject subclasses") }
    set { fatalError("@Attribute is only available on ManagedObject subclasses") }
  }

  /// Reads and writes go through the object so that faults fire and changes are tracked.
  @inlinable
  public static subscript<Object: ManagedObject>(
    _enclosingInstance object: Object,
    wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
    storage storageKeyPath: ReferenceWritableKeyPath<Object, Attribute<Value>>
  ) -> Value {
    @inline(__always) get {
      if object._needsAccessHook {
        object._willAccessValue(slot: object[keyPath: storageKeyPath].slot)
      }
      return object[keyPath: storageKeyPath].value
    }
    @inline(__always) set {
      let slot = object[keyPath: storageKeyPath].slot
      let heard = object._willChangeValue(slot: slot)
      object[keyPath: storageKeyPath].value = newValue
      if heard { object._didChangeValue(slot: slot) }
    }
  }

  @inlinable
  init(value: Value, storage: AttributeStorage, options: @autoclosure () -> AttributeOptions) {
    // The options are built only while a model records its declarations: with bounds they
    // hold a string and a closure, and copying and destroying them for every attribute of
    // every fetched object was a large share of a fetch's time.
    self.value = value
    if DeclarationRecorder.isActive.load(ordering: .relaxed) {
      DeclarationRecorder.record(AttributeDeclaration(storage: storage, options: options()))
    }
  }
}

// The declaration each `@Attribute` initializer records while a model is built (see
// `DeclarationRecorder`). Its types are `@usableFromInline` so the initializers can be inlined
// into entity classes: creating an object then costs no generic metadata lookups.
@usableFromInline
struct AttributeOptions: Sendable {
  @usableFromInline var persistentName: String?
  @usableFromInline var originalName: String?
  @usableFromInline var preservedOnDeletion: Bool
  @usableFromInline var indexed: Bool
  @usableFromInline var unique: Bool
  @usableFromInline var bounds: AttributeBounds?
  @usableFromInline var validator: AttributeValidator?
  /// Whether the attribute is a composite (`CompositeAttributeValue`), stored as the
  /// columns of its elements.
  @usableFromInline var isComposite: Bool

  @inlinable
  init(
    persistentName: String?, originalName: String? = nil, preservedOnDeletion: Bool, indexed: Bool, unique: Bool,
    bounds: AttributeBounds? = nil, validator: AttributeValidator? = nil, isComposite: Bool = false
  ) {
    self.isComposite = isComposite
    self.persistentName = persistentName
    self.originalName = originalName
    self.preservedOnDeletion = preservedOnDeletion
    self.indexed = indexed
    self.unique = unique
    self.bounds = bounds
    self.validator = validator
  }
}

/// An attribute's own validation (`@Attribute(validate:)`, Core Data's `validate<Key>`),
/// checked by `save()` for the objects whose value it sees change: the declared closure,
/// called with the attribute's typed value.
@usableFromInline
struct AttributeValidator: Sendable {
  @usableFromInline let check: @Sendable (Any) throws -> Void

  @inlinable
  init?<Value>(_ validate: (@Sendable (Value) throws -> Void)?) {
    guard let validate else { return nil }
    check = { value in
      if let value = value as? Value { try validate(value) }
    }
  }
}

/// The values an attribute accepts (`@Attribute(bounds: 0...150)`), checked by `save()`: a
/// test of the attribute's Swift value, and the bounds as written, for errors and the schema.
@usableFromInline
struct AttributeBounds: Sendable {
  @usableFromInline let description: String
  @usableFromInline let contains: @Sendable (Any) -> Bool

  @inlinable
  init<Value: Comparable & Sendable>(_ range: some RangeExpression<Value> & Sendable) {
    description = String(describing: range)
    contains = { value in
      if let value = value as? Value { return range.contains(value) }
      if let optional = value as? Value?, optional == nil { return true }  // nil is not out of bounds
      return true
    }
  }
}

@usableFromInline
struct AttributeDeclaration: Sendable {
  @usableFromInline var storage: AttributeStorage
  @usableFromInline var options: AttributeOptions

  @inlinable
  init(storage: AttributeStorage, options: AttributeOptions) {
    self.storage = storage
    self.options = options
  }
}

// MARK: - Initializers, one per storage kind

extension Attribute where Value: AttributeValue {
  /// Declares an attribute of a type that `AttributeValue` covers (and optionals of it).
  ///
  /// - Parameters:
  ///   - wrappedValue: the default for new objects.
  ///   - persistentName: the column name, when it differs from the property name.
  ///   - originalName: the attribute's name in the model version before this one, when it was
  ///     renamed: an inferred migration renames its column and keeps every value
  ///     ([Migration](migration.md)). Distinct from `persistentName`, which maps storage now.
  ///   - preservedOnDeletion: keep the value in the history tombstone of a deleted object.
  ///   - indexed: create an index on the column.
  ///   - unique: create a unique index on the column.
  ///   - validate: the attribute's own validation (Core Data's `validate<Key>`): `save()` calls
  ///     it with the value of each inserted object and of each object whose value changed, and
  ///     a throw refuses the save (`StoreError.validationFailed`, the error in the failure).
  ///
  /// ```swift
  /// @Attribute(validate: { if $0.isEmpty { throw NoteError.emptyTitle } }) var title: String = "Untitled"
  /// ```
  @inlinable
  public init(
    wrappedValue: Value, persistentName: String? = nil, originalName: String? = nil, preservedOnDeletion: Bool = false,
    indexed: Bool = false, unique: Bool = false,
    validate: (@Sendable (Value) throws -> Void)? = nil
  ) {
    self.init(
      value: wrappedValue, storage: .standard,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: indexed, unique: unique, validator: AttributeValidator(validate)))
  }
}

extension Attribute where Value: AttributeValue & Comparable & Sendable {
  /// Declares an attribute whose values must lie within `bounds`; `save()` throws
  /// `StoreError.validationFailed` for an object whose value does not.
  ///
  /// ```swift
  /// @Attribute(bounds: 0...150) var age: Int = 0
  /// @Attribute(bounds: Date(timeIntervalSince1970: 0)...) var created: Date = .now
  /// ```
  @inlinable
  public init(
    wrappedValue: Value, bounds: some RangeExpression<Value> & Sendable, persistentName: String? = nil,
    originalName: String? = nil,
    preservedOnDeletion: Bool = false, indexed: Bool = false, unique: Bool = false,
    validate: (@Sendable (Value) throws -> Void)? = nil
  ) {
    self.init(
      value: wrappedValue, storage: .standard,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: indexed, unique: unique, bounds: AttributeBounds(bounds),
        validator: AttributeValidator(validate)))
  }
}

extension Attribute {
  /// Declares an optional attribute whose non-nil values must lie within `bounds`.
  ///
  /// ```swift
  /// @Attribute(bounds: 1...5) var rating: Int? = nil
  /// ```
  @inlinable
  public init<Wrapped: AttributeValue & Comparable & Sendable>(
    wrappedValue: Value, bounds: some RangeExpression<Wrapped> & Sendable, persistentName: String? = nil,
    originalName: String? = nil,
    preservedOnDeletion: Bool = false, indexed: Bool = false, unique: Bool = false,
    validate: (@Sendable (Value) throws -> Void)? = nil
  ) where Value == Wrapped? {
    self.init(
      value: wrappedValue, storage: .standard,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: indexed, unique: unique, bounds: AttributeBounds(bounds),
        validator: AttributeValidator(validate)))
  }
}

extension Attribute where Value: RawRepresentable, Value.RawValue: AttributeValue {
  /// Declares an attribute of a `RawRepresentable` type (an enum, usually), stored as its raw value.
  @inlinable
  public init(
    wrappedValue: Value, persistentName: String? = nil, originalName: String? = nil, preservedOnDeletion: Bool = false,
    indexed: Bool = false, unique: Bool = false,
    validate: (@Sendable (Value) throws -> Void)? = nil
  ) {
    self.init(
      value: wrappedValue, storage: .raw,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: indexed, unique: unique, validator: AttributeValidator(validate)))
  }
}

extension Attribute where Value: OptionalRawRepresentable {
  /// Declares an optional attribute of a `RawRepresentable` type, stored as its raw value or NULL.
  @inlinable
  public init(
    wrappedValue: Value, persistentName: String? = nil, originalName: String? = nil, preservedOnDeletion: Bool = false,
    indexed: Bool = false, unique: Bool = false,
    validate: (@Sendable (Value) throws -> Void)? = nil
  ) {
    self.init(
      value: wrappedValue, storage: .raw,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: indexed, unique: unique, validator: AttributeValidator(validate)))
  }
}

extension Attribute where Value: Codable {
  /// Declares an attribute of any `Codable` type, stored as JSON text (NULL for nil).
  ///
  /// ```swift
  /// @Attribute(.codable) var options: Options? = nil
  /// ```
  @inlinable
  public init(
    wrappedValue: Value, _ storage: CodableStorage, persistentName: String? = nil, originalName: String? = nil,
    preservedOnDeletion: Bool = false, indexed: Bool = false, unique: Bool = false,
    validate: (@Sendable (Value) throws -> Void)? = nil
  ) {
    self.init(
      value: wrappedValue, storage: .codable,
      options: AttributeOptions(
        persistentName: persistentName, originalName: originalName, preservedOnDeletion: preservedOnDeletion,
        indexed: indexed, unique: unique, validator: AttributeValidator(validate)))
  }
}
