/// A set of properties whose values, together, no two objects of an entity may share (Core
/// Data's `uniquenessConstraints`). Declare them on the class:
///
/// ```swift
/// final class Person: ManagedObject {
///   override class var uniquenessConstraints: [UniquenessConstraint] {
///     [UniquenessConstraint(\Person.givenName, \Person.familyName)]
///   }
///   @Attribute var givenName: String = ""
///   @Attribute var familyName: String = ""
/// }
/// ```
///
/// Each key path names an attribute, or a to-one relationship whose key the row holds. The
/// store keeps a unique index on the columns; rows with a NULL in any of them never conflict
/// (SQLite's rule). What a save does on a conflict depends on the context's `mergePolicy`
/// (see `MergePolicy`). `@Attribute(unique: true)` is a constraint of one attribute.
public struct UniquenessConstraint: Sendable {
  let keyPaths: [AnyKeyPath & Sendable]

  /// A constraint on the properties the key paths name, together.
  public init<Root: ManagedObject>(_ keyPaths: (PartialKeyPath<Root> & Sendable)...) {
    self.keyPaths = keyPaths
  }
}
