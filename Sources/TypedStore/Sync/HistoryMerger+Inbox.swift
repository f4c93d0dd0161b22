import Synchronization

extension HistoryMerger {
  /// Transactions of other processes that this process's remote-change monitor read from
  /// history and the subscription reported: the merger takes those that follow its position
  /// instead of reading them again (a follower read each transaction twice, once to notice it
  /// and once to merge it). Anything else (a gap left by a commit of this process, an inbox
  /// that filled up) is read from history as before.
  final class Inbox: Sendable {
    private struct Contents {
      var transactions: [HistoryTransaction] = []
      /// The newest transaction reported, of this process too (whose reports carry none).
      var latest: Int64 = 0
    }

    private let contents = Mutex(Contents())
    /// The most kept: past it, later transactions are read from history.
    private static let capacity = 1000

    /// Notes a report: its number, and its transaction when the monitor read it whole.
    func note(_ changes: StoreChanges) {
      contents.withLock { contents in
        if let number = changes.token?.transactionNumber { contents.latest = max(contents.latest, number) }
        if let transaction = changes.historyTransaction, contents.transactions.count < Self.capacity {
          contents.transactions.append(transaction)
        }
      }
    }

    /// The reported transactions that follow `position` without a gap, taken out, and
    /// whether they reach the newest one reported (nothing reported since is left to read);
    /// nil when the next one was not reported with its transaction.
    func take(after position: Int64) -> (run: [HistoryTransaction], reachesLatest: Bool)? {
      contents.withLock { contents in
        contents.transactions.removeAll { $0.transactionNumber <= position }
        guard contents.transactions.first?.transactionNumber == position + 1 else { return nil }
        var end = 1
        while end < contents.transactions.count
          && contents.transactions[end].transactionNumber == contents.transactions[end - 1].transactionNumber + 1
        {
          end += 1
        }
        let run = Array(contents.transactions[..<end])
        contents.transactions.removeFirst(end)
        let last = run[run.count - 1].transactionNumber
        return (run, contents.transactions.isEmpty && last >= contents.latest)
      }
    }
  }
}
