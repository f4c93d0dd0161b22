/// Told of a ``FetchedResultsController``'s changes, on the context's executor, in the shape
/// of Core Data's `controller(_:didChangeContentWith:)`.
///
/// ```swift
/// final class Board: FetchedResultsControllerDelegate {
///   func controller(
///     _ controller: FetchedResultsController<Note>, didChangeContentWith difference: FetchedResultsDiff
///   ) {
///     render(controller.sections, inserted: difference.inserted, deleted: difference.deleted)
///   }
/// }
/// ```
public protocol FetchedResultsControllerDelegate<Entity>: AnyObject {
  /// The entity of the controllers the delegate follows.
  associatedtype Entity: ManagedObject

  /// The results changed as `difference` says; the controller's objects and sections are
  /// current.
  func controller(_ controller: FetchedResultsController<Entity>, didChangeContentWith difference: FetchedResultsDiff)
}
