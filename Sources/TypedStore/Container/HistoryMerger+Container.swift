extension HistoryMerger {
  /// A consumer named `consumer` of the container's store, merging into `contexts` and into
  /// the contexts of `modelActors` (on each actor's executor, between its own jobs), woken by
  /// the container's change notifications.
  ///
  /// ```swift
  /// let merger = try HistoryMerger(container: container, consumer: "board", modelActors: [board])
  /// try await merger.start()
  /// ```
  ///
  /// - Throws: `HistoryError.invalidConsumerName`, `.invalidLease`, `.historyNotRecorded`.
  public convenience init(
    container: PersistentContainer, consumer: String, contexts: [ManagedObjectContext] = [],
    modelActors: [any ModelActor] = [], options: Options = Options()
  ) throws {
    try self.init(
      store: container.persistentStore, consumer: consumer, contexts: contexts, modelActors: modelActors,
      options: options, subscribe: { callback in container.addStoreChangesObserver(callback) })
  }
}
