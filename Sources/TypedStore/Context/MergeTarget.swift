/// Where a subscription delivers commits for a context to merge, later, on the context's own
/// isolation.
protocol MergeTarget: AnyObject, Sendable {
  func enqueueMerge(_ changes: StoreChanges)
  func enqueueRefreshAllObjects()
}

extension ContextState {
  /// Turns automatic merging on (subscribing `target` through `automaticMerging`) or off.
  func setMergesAutomatically(_ on: Bool, into target: any MergeTarget) {
    if !on {
      automaticMergeSubscription = nil
    } else if automaticMergeSubscription == nil {
      automaticMergeSubscription = automaticMerging?(target, ObjectIdentifier(self))
    }
  }
}
