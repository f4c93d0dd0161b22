extension HistoryPruner {
  /// A pruner of the container's store.
  ///
  /// ```swift
  /// try HistoryPruner(container: container).prune(.consumed)
  /// ```
  public init(container: PersistentContainer) {
    self.init(store: container.persistentStore)
  }
}
