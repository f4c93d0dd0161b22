import Foundation

/// A typed assignment of one attribute, for batch requests.
///
/// ```swift
/// let change: BatchAssignment<Note> = .set(\.title, "Updated")
/// ```
public struct BatchAssignment<Entity: ManagedObject>: Sendable {
  let keyPath: PartialKeyPath<Entity> & Sendable
  let apply: @Sendable (Entity) -> Void

  /// Sets the attribute `keyPath` names to `value`.
  public static func set<Value: Sendable>(
    _ keyPath: ReferenceWritableKeyPath<Entity, Value> & Sendable, _ value: Value
  ) -> BatchAssignment {
    BatchAssignment(keyPath: keyPath, apply: { $0[keyPath: keyPath] = value })
  }
}
