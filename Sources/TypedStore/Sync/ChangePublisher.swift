import Dispatch
import Foundation
import Synchronization

/// Hands each commit's `StoreChanges` to the container's observers, in commit order.
///
/// `publish` runs under the store's writer lock, so it never blocks: streams get the value
/// through their continuation, callbacks are called on one serial queue.
final class ChangePublisher: Sendable {
  private struct Observers {
    var streams: [UUID: AsyncStream<StoreChanges>.Continuation] = [:]
    var callbacks: [UUID: @Sendable (StoreChanges) -> Void] = [:]
  }

  private let observers = Mutex(Observers())
  private let callbackQueue = DispatchQueue(label: "TypedStore.storeChanges")

  func publish(_ committed: CommittedTransaction) {
    // Built only when someone listens: a large batch makes a large value.
    var changes: StoreChanges?
    let callbacks = observers.withLock { observers -> [@Sendable (StoreChanges) -> Void] in
      guard !observers.streams.isEmpty || !observers.callbacks.isEmpty else { return [] }
      let value = StoreChanges(committed)
      changes = value
      for continuation in observers.streams.values { continuation.yield(value) }
      return Array(observers.callbacks.values)
    }
    guard let changes else { return }
    guard !callbacks.isEmpty else { return }
    callbackQueue.async {
      for callback in callbacks { callback(changes) }
    }
  }

  func stream() -> AsyncStream<StoreChanges> {
    let key = UUID()
    let (stream, continuation) = AsyncStream<StoreChanges>.makeStream(bufferingPolicy: .unbounded)
    continuation.onTermination = { [weak self] _ in
      self?.observers.withLock { _ = $0.streams.removeValue(forKey: key) }
    }
    observers.withLock { $0.streams[key] = continuation }
    return stream
  }

  func addObserver(_ callback: @escaping @Sendable (StoreChanges) -> Void) -> StoreChangesObservation {
    let key = UUID()
    observers.withLock { $0.callbacks[key] = callback }
    return StoreChangesObservation { [weak self] in
      self?.observers.withLock { _ = $0.callbacks.removeValue(forKey: key) }
    }
  }
}

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
