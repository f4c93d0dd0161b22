import Foundation

/// What one committed transaction changed: the objects it inserted, updated and deleted, by
/// entity, with its author and history token. Every save and batch request publishes one.
///
/// ```swift
/// for await changes in container.storeChanges() {
///   let deleted: Set<ManagedID<Note>> = changes.deleted(Note.self)
///   await container.viewContext.perform { context in _ = context.mergeChanges(changes) }
/// }
/// ```
///
/// Its contents equal the history the transaction recorded.
public struct StoreChanges: Sendable {
  /// The store the transaction was committed to.
  public let storeIdentifier: UUID
  /// The token just after the transaction; nil when the store does not record history.
  public let token: HistoryToken?
  /// The author of the transaction.
  public let author: String?
  /// The name of the context that saved, if any.
  public let contextName: String?
  /// When the transaction committed.
  public let timestamp: Date
  /// Every inserted row, untyped.
  public let insertedIDs: Set<AnyManagedID>
  /// Every updated row, untyped.
  public let updatedIDs: Set<AnyManagedID>
  /// Every deleted row, untyped.
  public let deletedIDs: Set<AnyManagedID>
  /// For each updated row, the attributes that changed.
  public let changedAttributes: [AnyManagedID: [String]]
  /// True when another process committed the transaction: the remote-change monitor read it
  /// from history. False for commits of this process.
  public let isRemote: Bool
  /// The process that committed the transaction.
  public let processID: Int32
  /// The context of this process that committed it, for automatic merging.
  let origin: ObjectIdentifier?
  /// The whole transaction as this process's remote-change monitor read it from history
  /// (`init(reported:)`): a `HistoryMerger` that follows takes it instead of reading the same
  /// history again. Nil for commits of this process and for changes made with the public
  /// initializers (a subscriber may have filtered them).
  private(set) var historyTransaction: HistoryTransaction?
  /// For a commit of another process: when this process's remote-change monitor woke for it,
  /// saw it (`PRAGMA data_version`) and had read its history, for the benchmark's latency
  /// stages. Not part of the API.
  @_spi(Benchmarks) public internal(set) var remoteTimings: RemoteChangeTimings?

  /// This process's ID, read once: `ProcessInfo` asks the kernel on every call, and a
  /// follower builds one `StoreChanges` per transaction it reads.
  private static let thisProcess = ProcessInfo.processInfo.processIdentifier

  init(_ committed: RecordedChanges) {
    historyTransaction = nil
    isRemote = false
    processID = Self.thisProcess
    origin = committed.origin
    storeIdentifier = committed.storeIdentifier
    token = committed.number.map { HistoryToken(storeIdentifier: committed.storeIdentifier, transactionNumber: $0) }
    author = committed.author
    contextName = committed.contextName
    timestamp = committed.timestamp
    var inserted = Set<AnyManagedID>()
    var updated = Set<AnyManagedID>()
    var deleted = Set<AnyManagedID>()
    var changed: [AnyManagedID: [String]] = [:]
    for group in committed.groups {
      for primaryKey in group.primaryKeys {
        let id = AnyManagedID(
          storeIdentifier: committed.storeIdentifier, entityName: group.entityName, key: .permanent(primaryKey))
        switch group.kind {
        case .insert: inserted.insert(id)
        case .update:
          updated.insert(id)
          changed[id] = group.changedAttributes
        case .delete: deleted.insert(id)
        }
      }
    }
    insertedIDs = inserted
    updatedIDs = updated
    deletedIDs = deleted
    changedAttributes = changed
  }

  /// The changes of another process's transaction as the remote-change monitor read it,
  /// whole: they carry the transaction for a following `HistoryMerger`.
  init(reported transaction: HistoryTransaction) {
    self.init(transaction)
    historyTransaction = transaction
  }

  /// The changes of a transaction read from history: what its commit published, so that
  /// history merges as directly as a live notification.
  ///
  /// ```swift
  /// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
  ///   context.mergeChanges(StoreChanges(transaction))
  /// }
  /// ```
  public init(_ transaction: HistoryTransaction) {
    historyTransaction = nil
    storeIdentifier = transaction.token.storeIdentifier
    token = transaction.token
    author = transaction.author
    contextName = transaction.contextName
    timestamp = transaction.timestamp
    processID = transaction.processID
    isRemote = transaction.processID != Self.thisProcess
    origin = nil
    var inserted = Set<AnyManagedID>()
    var updated = Set<AnyManagedID>()
    var deleted = Set<AnyManagedID>()
    var changed: [AnyManagedID: [String]] = [:]
    for change in transaction.changes {
      switch change.changeType {
      case .insert: inserted.insert(change.objectID)
      case .update:
        updated.insert(change.objectID)
        changed[change.objectID] = change.updatedProperties
      case .delete: deleted.insert(change.objectID)
      }
    }
    insertedIDs = inserted
    updatedIDs = updated
    deletedIDs = deleted
    changedAttributes = changed
  }

  /// The inserted objects of `Entity` (and its subentities).
  public func inserted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
    Set(insertedIDs.compactMap { $0.typed(as: type) })
  }

  /// The updated objects of `Entity` (and its subentities).
  public func updated<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
    Set(updatedIDs.compactMap { $0.typed(as: type) })
  }

  /// The deleted objects of `Entity` (and its subentities).
  public func deleted<Entity: ManagedObject>(_ type: Entity.Type) -> Set<ManagedID<Entity>> {
    Set(deletedIDs.compactMap { $0.typed(as: type) })
  }

  /// True when the transaction changed no row (never the case for a published value).
  public var isEmpty: Bool { insertedIDs.isEmpty && updatedIDs.isEmpty && deletedIDs.isEmpty }
}

/// When a remote-change monitor woke for a commit of another process, saw it and had read
/// its history: `CLOCK_MONOTONIC` nanoseconds, comparable across the processes of one host.
/// For the benchmark's merge-latency stages (`Tools/typedstore-bench`); not part of the API.
@_spi(Benchmarks) public struct RemoteChangeTimings: Sendable {
  /// When `poll` returned with the wake-up (an inotify event, a request, the slow poll).
  public var woke: UInt64
  /// When `PRAGMA data_version` showed the commit.
  public var noticed: UInt64
  /// When the history after the position was read and decoded.
  public var read: UInt64

  package init(woke: UInt64, noticed: UInt64, read: UInt64) {
    self.woke = woke
    self.noticed = noticed
    self.read = read
  }

  /// `CLOCK_MONOTONIC` now, in nanoseconds.
  package static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }
}
