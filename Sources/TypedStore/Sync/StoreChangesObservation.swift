import Synchronization

/// A registration of a store-changes callback; it ends when cancelled or deallocated.
///
/// ```swift
/// let observation = container.addStoreChangesObserver { changes in print(changes.insertedIDs.count) }
/// observation.cancel()
/// ```
public final class StoreChangesObservation: Sendable {
  private let onCancel: Mutex<(@Sendable () -> Void)?>

  init(onCancel: @escaping @Sendable () -> Void) {
    self.onCancel = Mutex(onCancel)
  }

  /// Stops the callbacks. Calling it again does nothing.
  public func cancel() {
    let action = onCancel.withLock { action in
      defer { action = nil }
      return action
    }
    action?()
  }

  deinit { cancel() }
}
