import Foundation

/// What follows a store's commits by other processes for its change publisher: a store
/// file's `RemoteChangeMonitor`, or another engine's (`StoreEngine.followChanges`), which may
/// see commits of other hosts too. It reports what it reads on a thread of its own, in commit
/// order; the publisher drops what it published already.
package protocol ChangeFollower: Sendable {
  /// Asks the follower to read history now (the publisher holds a local commit back until
  /// the commits before it are read).
  func wake()
  /// Stops following; what is reported afterwards is dropped.
  func stop()
  /// Whether the follower still follows the store.
  var isFollowing: Bool { get }
}

/// What a `ChangeFollower` reports.
package enum RemoteChangeEvent: Sendable {
  /// Transactions after the position, in order, and when they were noticed and read.
  case transactions([HistoryTransaction], RemoteChangeTimings)
  /// History after the position was deleted before it was read; reading goes on after
  /// `horizon`.
  case expired(horizon: HistoryToken)
  /// Another process migrated the store to another model (`StoreError.modelChanged`): the
  /// follower has stopped, and the store's transactions throw it from now on.
  case modelChanged(StoreError)
}
