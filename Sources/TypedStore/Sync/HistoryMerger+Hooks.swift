import Foundation

// The hook registry: hooks are added with an id, removed by id, by entity and operation, or
// all at once, and may be put before another. PersistentHistoryTrackingKit's hook registry in
// the merger's terms.
extension HistoryMerger {
  /// Identifies a hook added to a merger: remove it with ``HistoryMerger/removeHook(_:)``, or
  /// put another before it (`addHook(before:_:)`).
  ///
  /// ```swift
  /// let audit = merger.addHook { event in try log.append(event.transaction) }
  /// try merger.addHook(before: audit) { event in try validate(event.transaction) }
  /// merger.removeHook(audit)
  /// ```
  public struct HookID: Hashable, Sendable, CustomStringConvertible {
    /// The merger that gave it (`HistoryMerger.hookOwner`): an id is never another merger's.
    let owner: UUID
    let value: UInt64

    /// "hook 3".
    public var description: String { "hook \(value)" }
  }

  /// A batch hook: called once with a batch of transactions (those one read of history
  /// brings, up to 500), before the default merge of the batch
  /// (`addBatchHook(_:)`).
  public typealias BatchHook = @Sendable (inout BatchEvent) throws -> Void

  /// An async batch hook: a batch hook that awaits (a bulk upload, say).
  public typealias AsyncBatchHook = @Sendable (inout BatchEvent) async throws -> Void

  /// A batch of transactions as a batch hook sees it.
  public struct BatchEvent: Sendable {
    /// The transactions of the batch still in the pipeline, in order (a per-transaction hook
    /// before may have finished some: `Event.finish()`).
    public let transactions: [HistoryTransaction]
    /// Whether the merger merges the batch into its contexts after the hooks.
    public var mergesIntoContexts = true
    /// Whether a hook ended the pipeline for the batch (`finish()`).
    public private(set) var isFinished = false

    /// Ends the pipeline for the batch: no later hook runs for it, and it is not merged into
    /// the contexts; the checkpoint still moves past it (PersistentHistoryTrackingKit's
    /// `.finish`).
    public mutating func finish() {
      isFinished = true
      mergesIntoContexts = false
    }

    /// The objects of `Entity` (and its subentities) inserted by any transaction of the batch.
    public func inserted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      transactions.reduce(into: []) { $0.formUnion(StoreChanges($1).inserted(type)) }
    }
    /// The objects of `Entity` (and its subentities) updated by any transaction of the batch.
    public func updated<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      transactions.reduce(into: []) { $0.formUnion(StoreChanges($1).updated(type)) }
    }
    /// The objects of `Entity` (and its subentities) deleted by any transaction of the batch.
    public func deleted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
      transactions.reduce(into: []) { $0.formUnion(StoreChanges($1).deleted(type)) }
    }
  }

  /// Which transactions an entity hook runs for: those with a change of one of `names` (an
  /// entity and its subentities), of `operation` (any when nil).
  struct HookScope: Sendable, Equatable {
    let entity: String
    let names: Set<String>
    let operation: HistoryChange.Kind?

    func matches(_ transaction: HistoryTransaction) -> Bool {
      transaction.changes.contains { change in
        names.contains(change.objectID.entityName) && (operation.map { $0 == change.changeType } ?? true)
      }
    }
  }

  /// A hook as registered: its id, what it is, and the scope of an entity hook.
  struct RegisteredHook: Sendable {
    let id: HookID
    let hook: StoredHook
    let scope: HookScope?
  }

  // MARK: - Adding

  /// Adds a hook, called for each transaction after those added before it, before the
  /// default merge. Returns its id. Hooks may be added and removed while the merger runs;
  /// the change takes effect from the next transaction (in a merger with a batch hook, from
  /// the next batch).
  ///
  /// ```swift
  /// let id = merger.addHook { event in
  ///   for id in event.inserted(Note.self) { try index.add(id) }
  /// }
  /// ```
  @discardableResult
  public func addHook(_ hook: @escaping Hook) -> HookID {
    register(.plain(hook))
  }

  /// Adds a hook that runs just before the hook `next` (a hook added later before the same
  /// one runs after this one). Returns its id.
  ///
  /// ```swift
  /// try merger.addHook(before: audit) { event in try validate(event.transaction) }
  /// ```
  ///
  /// - Throws: `HistoryError.unknownHook` when the merger has no hook `next` (it was
  ///   removed); nothing is added then.
  @discardableResult
  public func addHook(before next: HookID, _ hook: @escaping Hook) throws(HistoryError) -> HookID {
    try register(.plain(hook), before: next)
  }

  /// Adds an async hook, called for each transaction after those added before it, and
  /// awaited before the merger goes on (its back-pressure), on a task of its own, while its
  /// thread waits: no thread of the caller's pool and no context is held meanwhile. `stop()`
  /// waits for the running hook to return (so a hook must return: give it a timeout, and
  /// never call `stop()` from a hook). What throws stops the consumer at that transaction, as
  /// a plain hook's error does. Returns its id.
  ///
  /// ```swift
  /// merger.addHook { (event: inout HistoryMerger.Event) async throws in
  ///   for change in event.transaction.changes {
  ///     try await webhook.post(change, idempotencyKey: event.transaction.key(for: change))
  ///   }
  /// }
  /// ```
  @discardableResult
  public func addHook(_ hook: @escaping AsyncHook) -> HookID {
    register(.async(hook))
  }

  /// Adds an async hook that runs just before the hook `next`. Returns its id.
  ///
  /// ```swift
  /// try merger.addHook(before: audit) { (event: inout HistoryMerger.Event) async throws in
  ///   try await Task.sleep(for: .milliseconds(1))
  /// }
  /// ```
  ///
  /// - Throws: `HistoryError.unknownHook` when the merger has no hook `next`.
  @discardableResult
  public func addHook(before next: HookID, _ hook: @escaping AsyncHook) throws(HistoryError) -> HookID {
    try register(.async(hook), before: next)
  }

  /// Adds a hook for the transactions that change an `Entity` (or a subentity) by
  /// `operation` (by any when nil): it runs, in its place among the hooks, only for those.
  /// Remove such hooks by id, or with ``removeHooks(for:operation:)``. Returns its id.
  ///
  /// ```swift
  /// try merger.addHook(for: Order.self, operation: .insert) { event in
  ///   for id in event.inserted(Order.self) { try mailer.confirm(id) }
  /// }
  /// ```
  ///
  /// - Throws: `HistoryError.invalidRequest` when the store's model has no such entity;
  ///   `HistoryError.unknownHook` when `next` is given and the merger has no such hook.
  @discardableResult
  public func addHook<Entity: ManagedObject>(
    for entity: Entity.Type, operation: HistoryChange.Kind? = nil, before next: HookID? = nil,
    _ hook: @escaping Hook
  ) throws(HistoryError) -> HookID {
    let scope = try scope(entity, operation: operation)
    guard let next else { return register(.plain(hook), scope: scope) }
    return try register(.plain(hook), scope: scope, before: next)
  }

  /// Adds a transactional hook just before the hook `next` (see ``addTransactionalHook(_:)``).
  ///
  /// ```swift
  /// try merger.addTransactionalHook(before: notify) { event, context in
  ///   for id in event.updated(Order.self) { try context.existingObject(with: id).isSeen = true }
  /// }
  /// ```
  ///
  /// - Throws: `HistoryError.unknownHook` when the merger has no hook `next`.
  @discardableResult
  public func addTransactionalHook(before next: HookID, _ hook: @escaping TransactionalHook) throws(HistoryError)
    -> HookID
  {
    try register(.transactional(hook), before: next)
  }

  /// Adds a batch hook: called once per batch of transactions (those one read of history
  /// brings: a page of up to 500 while catching up, or the run of transactions a wake-up
  /// found; PersistentHistoryTrackingKit's groups) instead of once per transaction. Returns
  /// its id.
  ///
  /// A merger with a batch hook processes batches, which changes how its other hooks run:
  /// - each hook in its order, a per-transaction hook on each transaction of the batch in
  ///   turn, a batch hook once; then the default merge of the batch; then the checkpoint
  ///   past it. Nothing of the batch reaches the contexts before all its hooks ran.
  /// - A hook that throws stops the consumer before the batch, which is processed again
  ///   after a restart, all of it.
  /// - Transactional hooks write the effects of the whole batch in one effects context,
  ///   saved once with the checkpoint (the context is reset per batch, not per transaction);
  ///   a conflict runs the batch's hooks again.
  /// - `stop()` waits for the batch being processed.
  ///
  /// ```swift
  /// merger.addBatchHook { batch in
  ///   try search.reindex(batch.inserted(Note.self).union(batch.updated(Note.self)))
  /// }
  /// ```
  @discardableResult
  public func addBatchHook(_ hook: @escaping BatchHook) -> HookID {
    register(.batch(hook))
  }

  /// Adds a batch hook just before the hook `next`. Returns its id.
  ///
  /// ```swift
  /// try merger.addBatchHook(before: merge) { batch in print(batch.transactions.count) }
  /// ```
  ///
  /// - Throws: `HistoryError.unknownHook` when the merger has no hook `next`.
  @discardableResult
  public func addBatchHook(before next: HookID, _ hook: @escaping BatchHook) throws(HistoryError) -> HookID {
    try register(.batch(hook), before: next)
  }

  /// Adds an async batch hook, awaited as an async hook is. Returns its id.
  ///
  /// ```swift
  /// merger.addBatchHook { (batch: inout HistoryMerger.BatchEvent) async throws in
  ///   try await uploader.send(batch.transactions)
  /// }
  /// ```
  @discardableResult
  public func addBatchHook(_ hook: @escaping AsyncBatchHook) -> HookID {
    register(.asyncBatch(hook))
  }

  // MARK: - Removing

  /// Removes a hook; returns whether there was one with that id (an id another merger gave
  /// is never one). The hooks of the transaction being processed run to its end, and in a
  /// merger with a batch hook, to the end of the batch: free what a hook uses only after
  /// that (`stop()` first, say).
  ///
  /// ```swift
  /// merger.removeHook(id)
  /// ```
  @discardableResult
  public func removeHook(_ id: HookID) -> Bool {
    state.withLock { state in
      guard let index = state.hooks.firstIndex(where: { $0.id == id }) else { return false }
      state.hooks.remove(at: index)
      return true
    }
  }

  /// Removes the hooks added for `entity` and `operation` with
  /// ``addHook(for:operation:before:_:)`` (with `operation` nil: those added for the entity
  /// and any operation, and those for each operation). Returns how many went.
  ///
  /// ```swift
  /// merger.removeHooks(for: Order.self, operation: .insert)
  /// ```
  @discardableResult
  public func removeHooks<Entity: ManagedObject>(for entity: Entity.Type, operation: HistoryChange.Kind? = nil)
    -> Int
  {
    guard let name = store.model.entity(for: entity)?.name else { return 0 }
    return state.withLock { state in
      let before = state.hooks.count
      state.hooks.removeAll { registered in
        guard let scope = registered.scope, scope.entity == name else { return false }
        return operation == nil || scope.operation == operation
      }
      return before - state.hooks.count
    }
  }

  /// Removes every hook: the merger then only merges into its contexts.
  ///
  /// ```swift
  /// merger.removeAllHooks()
  /// ```
  public func removeAllHooks() {
    state.withLock { $0.hooks.removeAll() }
  }

  // MARK: - Registering

  func register(_ hook: StoredHook, scope: HookScope? = nil) -> HookID {
    state.withLock { state in
      let id = HookID(owner: hookOwner, value: state.nextHookID)
      state.nextHookID += 1
      state.hooks.append(RegisteredHook(id: id, hook: hook, scope: scope))
      return id
    }
  }

  func register(_ hook: StoredHook, scope: HookScope? = nil, before next: HookID) throws(HistoryError) -> HookID {
    let id = state.withLock { state -> HookID? in
      guard let index = state.hooks.firstIndex(where: { $0.id == next }) else { return nil }
      let id = HookID(owner: hookOwner, value: state.nextHookID)
      state.nextHookID += 1
      state.hooks.insert(RegisteredHook(id: id, hook: hook, scope: scope), at: index)
      return id
    }
    guard let id else { throw .unknownHook(next.description) }
    return id
  }

  private func scope<Entity: ManagedObject>(_ type: Entity.Type, operation: HistoryChange.Kind?) throws(HistoryError)
    -> HookScope
  {
    guard let entity = store.model.entity(for: type) else {
      throw .invalidRequest("\(type) is not an entity of the store's model")
    }
    return HookScope(entity: entity.name, names: Set(entity.selfAndDescendantNames), operation: operation)
  }
}
