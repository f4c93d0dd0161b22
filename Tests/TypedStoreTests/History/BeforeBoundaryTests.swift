import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// "Before" is strictly before, in every API, policy and command (Core Data's rule): given
/// transaction 3 — as a token, as its commit date, as a consumer's checkpoint, or to the tool —
/// each deletes 1 and 2 and keeps 3.
@Suite struct BeforeBoundaryTests {
  /// A store with five transactions, 1...5, each at its own date.
  private func fiveTransactions(_ variant: String) async throws -> PersistentContainer {
    let container = try PersistentContainer.makeTest(model: notesModel, variant: variant)
    for title in ["a", "b", "c", "d", "e"] {
      try await save([title], in: container)
      try await Task.sleep(for: .milliseconds(2))  // distinct dates
    }
    return container
  }

  private func kept(_ container: PersistentContainer) throws -> [Int64] {
    let horizon = try container.persistentStore.historyHorizon()
    return try container.fetchHistory(HistoryRequest(after: horizon)).map(\.transactionNumber)
  }

  private func third(_ container: PersistentContainer) throws -> HistoryTransaction {
    try #require(try container.fetchHistory(HistoryRequest()).first { $0.transactionNumber == 3 })
  }

  @Test func everyFormOfBeforeKeepsTheTransactionItNames() async throws {
    let byToken = try await fiveTransactions("token")
    #expect(try byToken.deleteHistory(before: try third(byToken).token) == 2)
    #expect(try kept(byToken) == [3, 4, 5])

    let byDate = try await fiveTransactions("date")
    #expect(try byDate.deleteHistory(before: try third(byDate).timestamp) == 2, "one at exactly the date is kept")
    #expect(try kept(byDate) == [3, 4, 5])

    let byPolicy = try await fiveTransactions("policy")
    let report = try HistoryPruner(container: byPolicy).prune(.before(try third(byPolicy).token))
    #expect(report.deletedTransactions == 2 && report.horizon.transactionNumber == 2)
    #expect(try kept(byPolicy) == [3, 4, 5])

    let consumed = try await fiveTransactions("consumed")
    _ = try consumed.persistentStore.registerHistoryConsumer(
      name: "reader", startingAt: .after(try third(consumed).token))
    #expect(try HistoryPruner(container: consumed).prune(.consumed).deletedTransactions == 2)
    #expect(try kept(consumed) == [3, 4, 5], "the last transaction the consumer read is kept")

    let byTool = try await fiveTransactions("tool")
    let path = byTool.persistentStore.location
    let run = try typedstore(["history", "prune", "--store", path, "--before", "3"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("deleted 2 transactions; horizon 2"))
    #expect(try kept(byTool) == [3, 4, 5])
  }
}
