/// What merging one transaction into a context did.
///
/// ```swift
/// let result = context.mergeChanges(changes)
/// for (id, attributes) in result.discardedChanges { log("lost unsaved \(attributes) of \(id)") }
/// ```
public struct MergeResult: Sendable, Equatable {
  /// Registered objects reloaded with the store's values, their unsaved changes kept on top.
  public var refreshed: Set<AnyManagedID> = []
  /// Registered objects that left the context because their rows were deleted.
  public var deleted: Set<AnyManagedID> = []
  /// For each deleted object that had unsaved changes, the attributes whose unsaved values
  /// the deletion discarded: never silently.
  public var discardedChanges: [AnyManagedID: Set<String>] = [:]

  /// A result of a merge that changed nothing.
  public init() {}
}
