import Foundation
import Synchronization
import Testing
import TypedStoreTesting

@testable import TypedStore

// The three versions of `Customer` the writer process also declares
// (`Tests/TestWriter/PlanWriter.swift`): version 2 adds `firstName` and `lastName`, which a
// custom stage fills from `name`; version 3 drops `name`.

final class PlanCustomerV1: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var name: String = ""
  @Attribute var email: String? = nil
}

final class PlanCustomerV2: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var name: String = ""
  @Attribute var firstName: String = ""
  @Attribute var lastName: String = ""
  @Attribute var email: String? = nil
}

final class PlanCustomerV3: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var firstName: String = ""
  @Attribute var lastName: String = ""
  @Attribute var email: String? = nil
}

/// Version 1 again, under another class: the same storage, so the same hash.
final class PlanCustomerV1Again: ManagedObject {
  override class var entityName: String { "Customer" }
  @Attribute var name: String = ""
  @Attribute var email: String? = nil
}

private let version1 = MigrationPlan.Version("1", try! ManagedObjectModel(PlanCustomerV1.self))
private let version2 = MigrationPlan.Version("2", try! ManagedObjectModel(PlanCustomerV2.self))
private let version3 = MigrationPlan.Version("3", try! ManagedObjectModel(PlanCustomerV3.self))

private func walBytes(_ url: URL) -> Int {
  ((try? FileManager.default.attributesOfItem(atPath: url.path + "-wal"))?[.size] as? Int) ?? 0
}

/// How many times a stage ran.
private final class Runs: Sendable {
  private let count = Mutex(0)
  func add() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}

/// The stage that splits `name`, counting its runs in `runs`.
private func splitNames(_ runs: Runs? = nil) -> MigrationStage {
  .custom(didMigrate: { context in
    runs?.add()
    for customer in try context.fetch(FetchRequest<PlanCustomerV2>()) {
      let parts = customer.name.split(separator: " ", maxSplits: 1)
      customer.firstName = parts.first.map(String.init) ?? ""
      customer.lastName = parts.count > 1 ? String(parts[1]) : ""
    }
  })
}

private func customerPlan(_ runs: Runs? = nil) -> MigrationPlan {
  MigrationPlan(versions: [version1, version2, version3], stages: [splitNames(runs), .lightweight])
}

/// A version 1 store made without a plan: three customers, one renamed, one deleted, and a
/// consumer whose checkpoint is the first transaction. Closed when this returns.
private func makeVersion1Store(fileID: String = #fileID, function: String = #function) throws -> URL {
  let container = try PersistentContainer.makeTest(
    model: ManagedObjectModel(PlanCustomerV1.self), fileID: fileID, function: function)
  try container.viewContext.performAndWait { context in
    for (name, email) in [("Ada Lovelace", "ada@example.com"), ("Grace Hopper", nil), ("Linus", "l@example.com")] {
      let customer = PlanCustomerV1(context: context)
      customer.name = name
      customer.email = email
    }
    try context.save()
    let customers = try context.fetch(FetchRequest<PlanCustomerV1>(sortBy: [SortDescriptor(\.name)]))
    _ = try container.persistentStore.registerHistoryConsumer(
      "indexer", fromBeginning: false, acceptsHorizon: false, lease: .seconds(60))
    customers[1].name = "Grace Brewster Hopper"
    try context.save()
    context.delete(customers[2])
    try context.save()
  }
  return container.persistentStore.url
}

private func customers(_ container: PersistentContainer) throws -> [String] {
  try container.viewContext.performAndWait { context in
    try context.fetch(FetchRequest<PlanCustomerV3>()).map {
      "\($0.managedID.primaryKey ?? -1) \($0.firstName)|\($0.lastName)|\($0.email ?? "nil")"
    }.sorted()
  }
}

@Suite struct MigrationPlanTests {
  @Test(
    "a version 1 store opens with version 3 through a plan with one custom stage, keeping rows, history, tokens, checkpoints"
  )
  func version1OpensWithVersion3ThroughAPlan() throws {
    let url = try makeVersion1Store()
    let version1Store = try PersistentStore(url: url, model: version1.model)
    let checkpoint: HistoryToken? = try version1Store.historyConsumers().first { $0.name == "indexer" }?.checkpoint
    let before: HistoryToken = try version1Store.currentHistoryToken()
    let identifier: UUID = version1Store.identifier
    let history: [HistoryTransaction] = try version1Store.fetchHistory(HistoryRequest())

    let container = try PersistentContainer(name: "Customers", migrationPlan: customerPlan(), storeURL: url)
    #expect(
      try customers(container) == [
        "1 Ada|Lovelace|ada@example.com", "2 Grace|Brewster Hopper|nil",
      ])
    let store = container.persistentStore
    #expect(store.identifier == identifier)
    let kept = try store.fetchHistory(HistoryRequest()).prefix(history.count)
    #expect(kept.map(\.transactionNumber) == history.map(\.transactionNumber))
    #expect(kept.map { $0.changes.count } == history.map { $0.changes.count })
    let since = try store.fetchHistory(HistoryRequest(after: before))
    let author = PersistentStore.migrationTransactionAuthor
    #expect(since.map(\.author) == [author, author], "the stage's save, then one marker for the whole plan")
    #expect(since.first?.changes.map(\.changeType) == [.update, .update])
    #expect(since.first?.changes.allSatisfy { $0.objectID.entityName == "Customer" } == true)
    #expect(since.last?.changes.isEmpty == true)
    #expect(try store.historyConsumers().first { $0.name == "indexer" }?.checkpoint == checkpoint)
    let versions = try store.inspect().modelVersions
    #expect(versions.map(\.versionIdentifier) == [nil, "2", "3"])
    #expect(versions.map(\.versionHash) == [version1, version2, version3].map(\.model.versionHash))
    #expect(Set(versions.dropFirst().map(\.migrationTransaction)) == [since.last?.token])
    #expect(try store.metadata()["model_version"] == "3")
    #expect(try store.checkConsistency().problems.isEmpty)
  }

  @Test("typedstore inspect shows the plan's version identifiers, in text and JSON")
  func inspectShowsVersionIdentifiers() throws {
    let url = try makeVersion1Store()
    _ = try PersistentContainer(name: "Customers", migrationPlan: customerPlan(), storeURL: url)
    let text = try typedstore(["inspect", "--store", url.path])
    #expect(text.status == 0, "\(text.stderr)")
    let versionLines = text.stdout.split(separator: "\n").filter { $0.contains("migrated in transaction") }
    #expect(versionLines.map { $0.hasSuffix("version 2") || $0.hasSuffix("version 3") } == [true, true])
    let json = try typedstore(["inspect", "--store", url.path, "--json"])
    let identifiers = (json.json["modelVersions"] as? [[String: Any]])?.map { $0["identifier"] as? String }
    #expect(identifiers == [nil, "2", "3"])
  }

  @Test("a store created with a plan records its version, and later opens run only the stages after it")
  func aStoreRunsOnlyTheStagesAfterItsVersion() throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let first = Runs()
    let second = Runs()
    let twoVersions = MigrationPlan(versions: [version1, version2], stages: [splitNames(first)])
    do {
      let container = try PersistentContainer(name: "Customers", migrationPlan: twoVersions, storeURL: url)
      try container.viewContext.performAndWait { context in
        let customer = PlanCustomerV2(context: context)
        customer.name = "Edsger Dijkstra"
        customer.firstName = "Edsger"
        try context.save()
      }
      #expect(try container.persistentStore.metadata()["model_version"] == "2")
    }
    #expect(first.value == 0, "a new store is created at the last version: no stage runs")
    let plan = MigrationPlan(
      versions: [version1, version2, version3],
      stages: [
        splitNames(first),
        .custom(willMigrate: { context in
          second.add()
          // The older version's classes, before `name` is dropped.
          let names = try context.fetch(FetchRequest<PlanCustomerV2>()).map(\.name)
          #expect(names == ["Edsger Dijkstra"])
          // The store itself is read-only inside a stage: only the context writes.
          #expect(throws: StoreError.readOnly(path: url.path)) {
            try context.persistentStore.deleteHistory(before: Date())
          }
        }),
      ])
    let container = try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
    #expect(first.value == 0)
    #expect(second.value == 1)
    #expect(try customers(container) == ["1 Edsger||nil"])
    _ = try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
    #expect(second.value == 1, "a store at the last version runs nothing")
  }

  @Test("a stage that throws leaves the store at its version, byte for byte in its rows and schema")
  func aThrowingStageChangesNothing() throws {
    struct Refused: Error, Equatable {}
    let url = try makeVersion1Store()
    let before = try everything(url)
    let plan = MigrationPlan(
      versions: [version1, version2, version3],
      stages: [
        splitNames(),
        .custom(
          willMigrate: { context in
            for customer in try context.fetch(FetchRequest<PlanCustomerV2>()) { customer.email = "changed" }
            try context.save()
            throw Refused()
          }),
      ])
    #expect(throws: Refused()) { try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url) }
    #expect(try everything(url) == before)
    let container = try PersistentContainer(
      name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
    let count = try container.viewContext.performAndWait { try $0.count(for: FetchRequest<PlanCustomerV1>()) }
    #expect(count == 2)
  }

  @Test("a step the planner refuses after a stage saved rolls the stage's saves back too")
  func aRefusedStepRollsBackTheStagesBeforeIt() throws {
    final class RequiredToken: ManagedObject {
      override class var entityName: String { "Customer" }
      @Attribute var firstName: String = ""
      @Attribute var lastName: String = ""
      @Attribute var email: String? = nil
      @Attribute var token: UUID = UUID()  // no constant default: not inferable on rows
    }
    let url = try makeVersion1Store()
    let before = try everything(url)
    let plan = MigrationPlan(
      versions: [version1, version2, .init("4", try ManagedObjectModel(RequiredToken.self))],
      stages: [splitNames(), .lightweight])
    #expect {
      try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
    } throws: { error in
      guard case MigrationError.notInferable(let entity, let attribute, _, _) = error else { return false }
      return entity == "Customer" && attribute == "token"
    }
    #expect(try everything(url) == before)
  }

  @Test("willMigrate can remove the rows a new uniqueness constraint would refuse, in the same transaction")
  func willMigrateMakesRoomForAUniquenessConstraint() throws {
    final class UniqueEmail: ManagedObject {
      override class var entityName: String { "Customer" }
      @Attribute var name: String = ""
      @Attribute(unique: true) var email: String? = nil
    }
    let url = try makeVersion1Store()
    let container = try PersistentContainer(
      name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
    try container.viewContext.performAndWait { context in
      let twin = PlanCustomerV1(context: context)
      twin.name = "Ada Again"
      twin.email = "ada@example.com"
      try context.save()
    }
    let unique = MigrationPlan.Version("2u", try ManagedObjectModel(UniqueEmail.self))
    #expect(throws: MigrationError.self) {
      try PersistentContainer(
        name: "Customers", migrationPlan: MigrationPlan(versions: [version1, unique], stages: [.lightweight]),
        storeURL: url)
    }
    let plan = MigrationPlan(
      versions: [version1, unique],
      stages: [
        .custom(willMigrate: { context in
          var seen = Set<String>()
          for customer in try context.fetch(FetchRequest<PlanCustomerV1>(sortBy: [SortDescriptor(\.name)])) {
            if let email = customer.email, !seen.insert(email).inserted { context.delete(customer) }
          }
        })
      ])
    let migrated = try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
    let names = try migrated.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<UniqueEmail>()).map(\.name).sorted()
    }
    #expect(names == ["Ada Again", "Grace Brewster Hopper"], "the first by name of each email is kept")
  }

  @Test("a data-only stage between two versions that store alike runs once")
  func aDataOnlyStageRunsOnce() throws {
    let url = try makeVersion1Store()
    let runs = Runs()
    let again = MigrationPlan.Version("1.1", try ManagedObjectModel(PlanCustomerV1Again.self))
    #expect(again.model.versionHash == version1.model.versionHash)
    let plan = MigrationPlan(
      versions: [version1, again],
      stages: [
        .custom(didMigrate: { context in
          runs.add()
          for customer in try context.fetch(FetchRequest<PlanCustomerV1Again>()) {
            customer.email = customer.email?.uppercased()
          }
        })
      ])
    // A process still on version 1's storage: not refused, and it learns what the stage did
    // from history.
    let live = try PersistentContainer(
      name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
    let before = try live.persistentStore.currentHistoryToken()
    for _ in 0..<2 {
      let container = try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
      let emails = try container.viewContext.performAndWait { context in
        try context.fetch(FetchRequest<PlanCustomerV1Again>()).compactMap(\.email).sorted()
      }
      #expect(emails == ["ADA@EXAMPLE.COM"])
      #expect(try container.persistentStore.metadata()["model_version"] == "1.1")
    }
    #expect(runs.value == 1)
    let seen = try live.persistentStore.fetchHistory(HistoryRequest(after: before))
    #expect(seen.first?.changes.map(\.changeType) == [.update], "the stage's save (one email changed), in history")
    let emails = try live.viewContext.performAndWait { context in
      let customer = PlanCustomerV1(context: context)
      customer.name = "After"
      try context.save()
      return try context.fetch(FetchRequest<PlanCustomerV1>()).compactMap(\.email).sorted()
    }
    #expect(emails == ["ADA@EXAMPLE.COM"])
  }

  @Test("a store at a version this plan does not know, with its last version's storage, opens and runs no stage")
  func aLaterBuildsDataOnlyVersionIsNotRunAgain() throws {
    let url = try makeVersion1Store()
    let runs = Runs()
    let again = MigrationPlan.Version("1.1", try ManagedObjectModel(PlanCustomerV1Again.self))
    let later = MigrationPlan.Version("1.2", try ManagedObjectModel(PlanCustomerV1.self))
    let stage = MigrationStage.custom(didMigrate: { _ in runs.add() })
    _ = try PersistentContainer(
      name: "Customers", migrationPlan: MigrationPlan(versions: [version1, again, later], stages: [stage, stage]),
      storeURL: url)
    #expect(runs.value == 2)
    let older = try PersistentContainer(
      name: "Customers", migrationPlan: MigrationPlan(versions: [version1, again], stages: [stage]), storeURL: url)
    #expect(runs.value == 2, "stage 1 → 1.1 is not run again on data already at 1.2")
    #expect(try older.persistentStore.metadata()["model_version"] == "1.2")
  }

  @Test("a refused first step with no code before it is refused before any stage's code runs")
  func aRefusedFirstStepRunsNoStageCode() throws {
    final class RequiredSerial: ManagedObject {
      override class var entityName: String { "Customer" }
      @Attribute var name: String = ""
      @Attribute var email: String? = nil
      @Attribute var serial: UUID = UUID()
    }
    let url = try makeVersion1Store()
    let runs = Runs()
    let plan = MigrationPlan(
      versions: [version1, .init("2s", try ManagedObjectModel(RequiredSerial.self))],
      stages: [.custom(didMigrate: { _ in runs.add() })])
    #expect(throws: MigrationError.self) {
      try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
    }
    #expect(runs.value == 0)
  }

  @Test("a read-only open of a store with stages still to run is refused with modelMismatch")
  func aReadOnlyOpenWithStagesToRunIsRefused() throws {
    let url = try makeVersion1Store()
    let again = MigrationPlan.Version("1.1", try ManagedObjectModel(PlanCustomerV1Again.self))
    var options = StoreOptions()
    options.isReadOnly = true
    #expect(throws: StoreError.self) {
      try PersistentContainer(
        name: "Customers", migrationPlan: MigrationPlan(versions: [version1, again], stages: [.lightweight]),
        storeURL: url, options: options)
    }
  }

  @Test("a store at no version of the plan is refused with storeVersionNotInPlan, unchanged")
  func aStoreAtNoVersionIsRefused() throws {
    let url = try makeVersion1Store()
    let before = try everything(url)
    let plan = MigrationPlan(versions: [version2, version3], stages: [.lightweight])
    #expect(
      throws: MigrationError.storeVersionNotInPlan(storeHash: version1.model.versionHash, versions: ["2", "3"])
    ) {
      try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
    }
    #expect(try everything(url) == before)
  }

  @Test("a plan without one stage between each pair of versions, or with a repeated identifier, is refused")
  func anInvalidPlanIsRefused() throws {
    let url = try makeVersion1Store()
    let before = try everything(url)
    for plan in [
      MigrationPlan(versions: [version1, version2, version3], stages: [.lightweight]),
      MigrationPlan(versions: [version1, .init("1", version2.model)], stages: [.lightweight]),
      MigrationPlan(versions: [], stages: []),
    ] {
      #expect {
        try PersistentContainer(name: "Customers", migrationPlan: plan, storeURL: url)
      } throws: { error in
        guard case MigrationError.invalidPlan = error else { return false }
        return true
      }
    }
    #expect(try everything(url) == before)
  }
}

/// Processes and a plan: the one that migrates, the others that wait, and the process still
/// on version 1.
@Suite(.serialized) struct MigrationPlanProcessTests {
  private let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"

  @Test("a process still on version 1 is refused at its next write once another process migrated through the plan")
  func aVersion1ProcessIsRefusedAfterAPlanMigration() async throws {
    let url = try makeVersion1Store()
    let old = try PersistentContainer(
      name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
    let context = old.newBackgroundContext()
    try await context.perform { _ = try $0.fetch(FetchRequest<PlanCustomerV1>()) }
    let output = try await offThePool {
      let run = try SpawnedProcess(builtProduct("typedstore-test-writer"), ["plan-open", url.path, "v3", "0"])
      return run.finish()
    }
    #expect(output.contains("saved "), "\(output)")
    let changed = StoreError.modelChanged(stored: version3.model.versionHash, running: version1.model.versionHash)
    await context.perform { context in
      PlanCustomerV1(context: context).name = "Too Late"
      #expect(throws: changed) { try context.save() }
      #expect(throws: changed) { try context.fetch(FetchRequest<PlanCustomerV1>()) }
    }
    let container = try PersistentContainer(name: "Customers", migrationPlan: customerPlan(), storeURL: url)
    #expect(
      try customers(container) == [
        "1 Ada|Lovelace|ada@example.com", "2 Grace|Brewster Hopper|nil", "4 v3||nil",
      ])
  }

  @Test("a process killed while it migrates through the plan leaves version 1 whole, or version 3 whole")
  func aPlanMigrationKilledHalfWayLeavesOneVersionWhole() async throws {
    let trials = soak ? 20 : 3
    let rows = 100_000
    let outcome = try await offThePool {
      var (old, migrated, midWrite) = (0, 0, 0)
      var problems: [String] = []
      for trial in 0..<trials {
        let url = PersistentContainer.testStoreURL(variant: "\(trial)")
        try PersistentContainer.destroyPersistentStore(at: url)
        do {
          let container = try PersistentContainer(
            name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
          try container.viewContext.performAndWait { context in
            _ = try context.execute(
              BatchInsertRequest<PlanCustomerV1>(count: rows) { index, customer in customer.name = "First\(index) Last"
              })
          }
          try container.persistentStore.checkpoint()
        }
        let history = try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt(
          "SELECT count(*) FROM _history_transaction")
        let walBefore = walBytes(url)
        let child = try SpawnedProcess(builtProduct("typedstore-test-writer"), ["plan-open", url.path, "killed", "0"])
        guard child.waitForLine("migrating") else {
          problems.append("trial \(trial): the child did not start")
          continue
        }
        if trial % 2 == 0 {
          // While the custom stage writes: once its pages spill into the log.
          let deadline = Date().addingTimeInterval(20)
          while walBytes(url) < walBefore + 512 * 1024 && Date() < deadline { usleep(500) }
        } else {
          Thread.sleep(forTimeInterval: Double.random(in: 0...3))  // at any moment, or after the commit
        }
        child.kill()
        let wroteUncommitted = walBytes(url) > walBefore
        var noMigration = StoreOptions()
        noMigration.shouldMigrateStoreAutomatically = false
        do {
          let container = try PersistentContainer(
            name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url, options: noMigration)
          let count = try container.viewContext.performAndWait { try $0.count(for: FetchRequest<PlanCustomerV1>()) }
          if count != rows { problems.append("trial \(trial): version 1 has \(count) rows") }
          let after = try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt(
            "SELECT count(*) FROM _history_transaction")
          if after != history {
            problems.append("trial \(trial): history \(String(describing: history)) → \(String(describing: after))")
          }
          old += 1
          if wroteUncommitted { midWrite += 1 }
        } catch StoreError.modelMismatch {
          let container = try PersistentContainer(name: "Customers", migrationPlan: customerPlan(), storeURL: url)
          let split = try container.viewContext.performAndWait { context in
            try context.count(for: FetchRequest<PlanCustomerV3>(predicate: #Predicate { $0.lastName == "Last" }))
          }
          if split < rows { problems.append("trial \(trial): version 3 has \(split) split names") }
          migrated += 1
        }
        let integrity = try SQLiteConnection(path: url.path, mode: .readOnly).scalarText("PRAGMA integrity_check")
        if integrity != "ok" { problems.append("trial \(trial): integrity_check: \(integrity ?? "nil")") }
      }
      return (old, migrated, problems, midWrite)
    }
    print("plan migration kills: \(outcome.0) left at version 1 (\(outcome.3) mid-write), \(outcome.1) at version 3")
    #expect(outcome.2.isEmpty, "\(outcome.2)")
    #expect(outcome.0 + outcome.1 == trials)
    #expect(outcome.3 >= 1, "no kill landed while the stage was writing")
  }

  @Test("eight processes opening a version 1 store with the plan migrate it exactly once and all save")
  func eightProcessesMigrateThroughThePlanOnce() async throws {
    let trials = soak ? 20 : 2
    let problems = try await offThePool {
      var problems: [String] = []
      for trial in 0..<trials {
        let url = try makeVersion1Store(function: "eight-\(trial)")
        let start = Date().timeIntervalSince1970 * 1000 + 300
        let runs = try (0..<8).map { index in
          try SpawnedProcess(
            builtProduct("typedstore-test-writer"),
            ["plan-open", url.path, "writer\(index)", String(format: "%.0f", start)])
        }
        for (index, run) in runs.enumerated() {
          let output = run.finish()
          if run.process.terminationStatus != 0 || !output.contains("saved ") {
            problems.append("trial \(trial) writer\(index): \(output)")
          }
        }
        let container = try PersistentContainer(name: "Customers", migrationPlan: customerPlan(), storeURL: url)
        let all = try customers(container)
        if all.count != 10 { problems.append("trial \(trial): \(all.count) customers, expected 10") }
        if !all.contains("1 Ada|Lovelace|ada@example.com") { problems.append("trial \(trial): \(all)") }
        let store = container.persistentStore
        let migration = try store.fetchHistory(HistoryRequest()).filter {
          $0.author == PersistentStore.migrationTransactionAuthor
        }
        // One stage save (the names split) and one marker: the plan ran once.
        if migration.map(\.changes.isEmpty) != [false, true] {
          problems.append("trial \(trial): migration transactions \(migration.map(\.changes.count))")
        }
        let identifiers = try store.inspect().modelVersions.map(\.versionIdentifier)
        if identifiers != [nil, "2", "3"] { problems.append("trial \(trial): versions \(identifiers)") }
      }
      return problems
    }
    #expect(problems.isEmpty, "\(problems.prefix(10))")
  }
}
