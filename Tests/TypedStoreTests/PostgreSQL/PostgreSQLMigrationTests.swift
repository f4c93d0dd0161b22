import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// `CatalogueV2` with an optional `Int` more on `Book`, which the moved e-books leave: its
/// column is NULL in their rows and in the others', as a typed NULL on PostgreSQL.
enum CatalogueV2Edition {
  class Item: ManagedObject {
    override class var entityName: String { "Item" }
    @Attribute var name: String = ""
  }

  final class Book: Item {
    override class var entityName: String { "Book" }
    @Attribute var pages: Int = 0
    @Attribute var edition: Int? = nil
  }

  class Media: Item {
    override class var entityName: String { "Media" }
    @Attribute var format: String = "cd"
    @Attribute var rating: Int? = 3
  }

  final class Ebook: Media {
    override class var entityName: String { "Ebook" }
    @Attribute var size: Int = 0
  }
}

/// Migrations on PostgreSQL, compared with the same migrations of a store file: the same
/// models (`MigrationModels.swift`, `RelationshipMigrationTests.swift`), the same rows, the same
/// refusals, the same history after; a plan with a custom stage; other processes refused once
/// the store has moved on, and racing processes that migrate it once.
@Suite struct PostgreSQLMigrationTests {
  /// A new store location of each engine: a file, and a schema on the tests' server.
  private static func locations(_ name: String) throws -> (file: URL, postgreSQL: URL, schema: String) {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-pg-migration")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let file = folder.appendingPathComponent("\(name)-\(schema).sqlite")
    return (file, URL(string: server.url + (server.url.contains("?") ? "&" : "?") + "schema=\(schema)")!, schema)
  }

  private static func cleanUp(_ location: (file: URL, postgreSQL: URL, schema: String)) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: location.file.path + suffix) }
    guard let server = try? PostgreSQLTestServer.server(), let admin = try? PostgreSQLConnection(url: server.url)
    else { return }
    _ = try? admin.execute("DROP SCHEMA \(location.schema) CASCADE")
  }

  /// Every object of `T` (its subentities too) with its primary key and attributes' stored values.
  static func rows<T: ManagedObject>(_ type: T.Type, _ context: ModelContext) throws -> [String] {
    let model = context.persistentStore.model
    return try context.fetch(FetchRequest<T>()).map { object in
      let entity = model.entity(for: Swift.type(of: object))
      let values = (entity?.attributes ?? []).map { attribute in
        "\(attribute.name)=\((try? attribute.accessor.encode(object)).map { "\($0)" } ?? "?")"
      }
      return "\(entity?.name ?? "?") \(object.managedID.primaryKey ?? -1): \(values.joined(separator: " "))"
    }.sorted()
  }

  /// The store's history as a list: each transaction's author and changes (kind, entity, key,
  /// updated properties, tombstone values).
  static func history(_ store: PersistentStore) throws -> [String] {
    try store.fetchHistory(HistoryRequest()).map { transaction in
      let changes = transaction.changes.map { change in
        let tombstone = change.tombstone.map { $0.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } }
        return "\(change.changeType) \(change.objectID.entityName) \(change.objectID.primaryKey ?? -1) "
          + "\(change.updatedProperties) \(tombstone ?? [])"
      }
      return "\(transaction.transactionNumber) \(transaction.author ?? "-"): \(changes)"
    }
  }

  /// At `url`: a store of `from` filled by `fill`, then opened with `to`; what `dump` reads
  /// after, with the history and the model versions, or the refusal (and the rows as they were).
  private static func migrate(
    at url: URL, from: ManagedObjectModel, fill: (ModelContext) throws -> Void, to: ManagedObjectModel,
    dump: (ModelContext) throws -> [String], before: (ModelContext) throws -> [String]
  ) throws -> [String] {
    do {
      let old = try PersistentContainer(name: "Migrating", model: from, storeURL: url)
      let context = old.newModelContext()
      context.transactionAuthor = "filler"
      try fill(context)
      if context.hasChanges { try context.save() }
    }
    do {
      let migrated = try PersistentContainer(name: "Migrating", model: to, storeURL: url)
      let versions = try migrated.persistentStore.inspect().modelVersions.map { $0.versionHash.prefix(8) }
      return try dump(migrated.newModelContext()) + history(migrated.persistentStore) + ["versions \(versions)"]
    } catch {
      // The store is as it was: it opens with its own model, with the same rows.
      let reopened = try PersistentContainer(name: "Migrating", model: from, storeURL: url)
      let text = "\(error)".replacingOccurrences(of: url.absoluteString, with: "<store>")
        .replacingOccurrences(of: url.path, with: "<store>")
      return ["refused: \(text)"] + (try before(reopened.newModelContext()))
    }
  }

  /// Three orders, one changed, one deleted.
  private static func fillOrders(_ context: ModelContext) throws {
    for (number, customer, note) in [(1, "ada", nil), (2, "grace", "gift" as String?), (3, "ada", "x")] {
      let order = OrderV1(context: context)
      order.number = number
      order.customer = customer
      order.total = Double(number) * 1.5
      order.note = note
      order.placed = number == 2 ? nil : Date(timeIntervalSinceReferenceDate: Double(number) * 1000.25)
      order.receipt = number == 3 ? Data([0, 1, 0xFE]) : nil
    }
    try context.save()
    let orders = try context.fetch(FetchRequest<OrderV1>(sortBy: [SortDescriptor(\.number)]))
    orders[1].customer = "grace hopper"
    try context.save()
    context.delete(orders[2])
    try context.save()
  }

  @Test func inferredMigrationsOfAttributesAndEntitiesAnswerAsOnAStoreFile() throws {
    let targets: [(String, ManagedObjectModel, (ModelContext) throws -> [String])] = [
      ("add optional", try ManagedObjectModel(OrderAddOptional.self), { try Self.rows(OrderAddOptional.self, $0) }),
      ("add default", try ManagedObjectModel(OrderAddDefault.self), { try Self.rows(OrderAddDefault.self, $0) }),
      ("add UUID", try ManagedObjectModel(OrderAddUUID.self), { try Self.rows(OrderAddUUID.self, $0) }),
      ("remove", try ManagedObjectModel(OrderRemove.self), { try Self.rows(OrderRemove.self, $0) }),
      ("rename", try ManagedObjectModel(OrderRename.self), { try Self.rows(OrderRename.self, $0) }),
      ("optional", try ManagedObjectModel(OrderToOptional.self), { try Self.rows(OrderToOptional.self, $0) }),
      ("required", try ManagedObjectModel(OrderToRequired.self), { try Self.rows(OrderToRequired.self, $0) }),
      ("required now", try ManagedObjectModel(OrderToRequiredNow.self), { try Self.rows(OrderToRequiredNow.self, $0) }),
      ("type change", try ManagedObjectModel(OrderTypeChange.self), { try Self.rows(OrderTypeChange.self, $0) }),
      ("unique", try ManagedObjectModel(OrderUnique.self), { try Self.rows(OrderUnique.self, $0) }),
      ("entity rename", try ManagedObjectModel(PurchaseV2.self), { try Self.rows(PurchaseV2.self, $0) }),
    ]
    let from = try ManagedObjectModel(OrderV1.self)
    var refusals = 0
    for (name, to, dump) in targets {
      let location = try Self.locations("orders")
      defer { Self.cleanUp(location) }
      let results = try [location.file, location.postgreSQL].map { url in
        try Self.migrate(
          at: url, from: from, fill: Self.fillOrders, to: to, dump: dump, before: { try Self.rows(OrderV1.self, $0) })
      }
      #expect(results[1] == results[0], "\(name): PostgreSQL \(results[1]) file \(results[0])")
      if results[0].first?.hasPrefix("refused") == true { refusals += 1 }
    }
    #expect(refusals == 3, "a UUID added, a type changed and a new unique index over clashing values are refused")
  }

  /// Two shelves, three books, three readers: links in a key column and in a join table.
  private static func fillShelves(_ context: ModelContext) throws {
    typealias V1 = ShelvesV1
    let first = V1.Shelf(context: context)
    first.name = "first"
    V1.Shelf(context: context).name = "second"
    var books: [V1.Book] = []
    for title in ["c", "b", "a"] {
      let book = V1.Book(context: context)
      book.title = title
      books.append(book)
    }
    books[0].shelf = first
    books[1].shelf = first
    for (index, name) in ["ann", "bob", "cy"].enumerated() {
      let reader = V1.Reader(context: context)
      reader.name = name
      reader.books = [books[index]]
    }
    try context.save()
  }

  @Test func relationshipsMadeOrderedOrManyToManyKeepTheirLinksAsOnAStoreFile() throws {
    typealias V1 = ShelvesV1
    typealias Ordered = ShelvesOrdered
    typealias Reshaped = ShelvesReshaped
    let from = try ManagedObjectModel(V1.Shelf.self, V1.Book.self, V1.Reader.self)
    let before: (ModelContext) throws -> [String] = { try Self.rows(V1.Book.self, $0) }
    let ordered: (ModelContext) throws -> [String] = { context in
      try context.fetch(FetchRequest<Ordered.Shelf>(sortBy: [SortDescriptor(\.name)])).map {
        "\($0.name): \($0.books.map(\.title))"
      }
        + context.fetch(FetchRequest<Ordered.Reader>(sortBy: [SortDescriptor(\.name)])).map {
          "\($0.name): \($0.books.map(\.title))"
        }
    }
    let reshaped: (ModelContext) throws -> [String] = { context in
      try context.fetch(FetchRequest<Reshaped.Book>(sortBy: [SortDescriptor(\.title)])).map {
        "\($0.title): \($0.shelves.map(\.name).sorted())"
      }
        + context.fetch(FetchRequest<Reshaped.Reader>(sortBy: [SortDescriptor(\.name)])).map {
          "\($0.name): \($0.book?.title ?? "-")"
        }
    }
    let targets: [(ManagedObjectModel, (ModelContext) throws -> [String])] = [
      (try ManagedObjectModel(Ordered.Shelf.self, Ordered.Book.self, Ordered.Reader.self), ordered),
      (try ManagedObjectModel(Reshaped.Shelf.self, Reshaped.Book.self, Reshaped.Reader.self), reshaped),
    ]
    for (to, dump) in targets {
      let location = try Self.locations("shelves")
      defer { Self.cleanUp(location) }
      let results = try [location.file, location.postgreSQL].map { url in
        try Self.migrate(at: url, from: from, fill: Self.fillShelves, to: to, dump: dump, before: before)
      }
      #expect(results[1] == results[0], "PostgreSQL \(results[1]) file \(results[0])")
      #expect(results[0].first?.hasPrefix("refused") == false, "\(results[0])")
    }
  }

  /// An e-book moved from under `Book` to under `Media`, in the same table: its rows lose
  /// `pages` and gain `format`'s default, by a `CASE` over entity codes with typed values.
  @Test(arguments: [false, true])
  func anEntityMovedWithinItsHierarchyAnswersAsOnAStoreFile(addingAnOptional: Bool) throws {
    typealias V1 = CatalogueV1
    typealias V2 = CatalogueV2
    typealias Edition = CatalogueV2Edition
    let from = try ManagedObjectModel(V1.Item.self, V1.Book.self, V1.Ebook.self, V1.Media.self)
    let to =
      addingAnOptional
      ? try ManagedObjectModel(Edition.Item.self, Edition.Book.self, Edition.Ebook.self, Edition.Media.self)
      : try ManagedObjectModel(V2.Item.self, V2.Book.self, V2.Ebook.self, V2.Media.self)
    let location = try Self.locations("catalogue")
    defer { Self.cleanUp(location) }
    let results = try [location.file, location.postgreSQL].map { url in
      try Self.migrate(
        at: url, from: from,
        fill: { context in
          let book = V1.Book(context: context)
          book.name = "paper"
          book.pages = 300
          let ebook = V1.Ebook(context: context)
          ebook.name = "digital"
          ebook.pages = 200
          ebook.size = 5
          let media = V1.Media(context: context)
          media.name = "album"
          media.format = "vinyl"
        }, to: to,
        dump: { addingAnOptional ? try Self.rows(Edition.Item.self, $0) : try Self.rows(V2.Item.self, $0) },
        before: { try Self.rows(V1.Item.self, $0) })
    }
    #expect(results[1] == results[0], "PostgreSQL \(results[1]) file \(results[0])")
    #expect(results[0].contains { $0.hasPrefix("Ebook") && $0.contains("format=text(\"cd\")") }, "\(results[0])")
    #expect(!addingAnOptional || results[0].contains { $0.hasPrefix("Book") && $0.contains("edition=null") })
  }

  /// Version 1 of the staged plan's customers, saved through a container of `url`.
  private static func fillCustomers(_ context: ModelContext) throws {
    for (name, email) in [("Ada Lovelace", "ada@example.com"), ("Grace Hopper", nil), ("Linus", "l@example.com")] {
      let customer = PlanCustomerV1(context: context)
      customer.name = name
      customer.email = email
    }
    try context.save()
  }

  private static func customerPlan() throws -> MigrationPlan {
    MigrationPlan(
      versions: [
        .init("1", try ManagedObjectModel(PlanCustomerV1.self)),
        .init("2", try ManagedObjectModel(PlanCustomerV2.self)),
        .init("3", try ManagedObjectModel(PlanCustomerV3.self)),
      ],
      stages: [
        .custom(didMigrate: { context in
          for customer in try context.fetch(FetchRequest<PlanCustomerV2>()) {
            let parts = customer.name.split(separator: " ", maxSplits: 1)
            customer.firstName = parts.first.map(String.init) ?? ""
            customer.lastName = parts.count > 1 ? String(parts[1]) : ""
          }
        }),
        .lightweight,
      ])
  }

  /// A plan whose custom stage fills new attributes runs in the open's one transaction, as on
  /// a file; a container of the old model in this process is refused from then on, for reads
  /// and saves, and its change stream ends; a stage that throws leaves the store as it was.
  @Test func aPlanWithACustomStageMigratesAndTheOldModelIsRefusedAfter() async throws {
    let location = try Self.locations("plan")
    defer { Self.cleanUp(location) }
    let url = location.postgreSQL
    let old = try PersistentContainer(name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
    try Self.fillCustomers(old.newModelContext())
    let oldContext = old.newModelContext()
    #expect(try oldContext.count(for: FetchRequest<PlanCustomerV1>()) == 3)
    let stream = old.storeChanges()

    // A stage that throws: nothing of the migration stays.
    struct Refused: Error {}
    let failing = MigrationPlan(
      versions: try Self.customerPlan().versions,
      stages: [.custom(didMigrate: { _ in throw Refused() }), .lightweight])
    #expect(throws: Refused.self) {
      _ = try PersistentContainer(name: "Customers", migrationPlan: failing, storeURL: url)
    }
    #expect(try oldContext.count(for: FetchRequest<PlanCustomerV1>()) == 3)

    let migrated = try PersistentContainer(name: "Customers", migrationPlan: Self.customerPlan(), storeURL: url)
    let names = try migrated.newModelContext().fetch(FetchRequest<PlanCustomerV3>(sortBy: [SortDescriptor(\.lastName)]))
      .map { "\($0.firstName)|\($0.lastName)|\($0.email ?? "nil")" }
    #expect(names == ["Linus||l@example.com", "Grace|Hopper|nil", "Ada|Lovelace|ada@example.com"])
    let versions = try migrated.persistentStore.inspect().modelVersions.map(\.versionIdentifier)
    #expect(versions == [nil, "2", "3"])
    let migration = try migrated.persistentStore.fetchHistory(HistoryRequest()).filter {
      $0.author == PersistentStore.migrationTransactionAuthor
    }
    #expect(migration.map(\.changes.isEmpty) == [false, true], "the stage's save, then the marker")

    // Its change stream ends, its listener having read the migration's transaction.
    let ended = Task {
      for await _ in stream {}
      return true
    }
    #expect(await eventually(seconds: 20) { old.persistentStore.modelStamp.change != nil })
    #expect(await ended.value)

    // The old model's container: refused for reads and saves, typed, with nothing written.
    #expect(throws: StoreError.self) { _ = try oldContext.count(for: FetchRequest<PlanCustomerV1>()) }
    let saver = old.newModelContext()
    PlanCustomerV1(context: saver).name = "late"
    let refusal = #expect(throws: StoreError.self) { try saver.save() }
    guard case .modelChanged(let stored, let running)? = refusal else {
      Issue.record("\(String(describing: refusal))")
      return
    }
    #expect(stored == migrated.persistentStore.model.versionHash && running != stored)
    #expect(try migrated.newModelContext().count(for: FetchRequest<PlanCustomerV3>()) == 3)
    // Opening again with the plan finds nothing to do.
    let again = try PersistentContainer(name: "Customers", migrationPlan: Self.customerPlan(), storeURL: url)
    #expect(try again.persistentStore.inspect().modelVersions.count == 3)
  }

  /// Eight processes open a version 1 store with the plan at once, over TCP: one migrates, the
  /// others open what it made, and every one saves.
  @Test func racingProcessesMigrateThroughThePlanOnce() async throws {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let location = (
      file: FileManager.default.temporaryDirectory.appendingPathComponent("unused-\(schema)"),
      postgreSQL: URL(string: server.tcpURL + (server.tcpURL.contains("?") ? "&" : "?") + "schema=\(schema)")!,
      schema: schema
    )
    defer { Self.cleanUp(location) }
    let url = location.postgreSQL
    try Self.fillCustomers(
      PersistentContainer(name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
        .newModelContext())
    let start = Date().timeIntervalSince1970 * 1000 + 500
    let outputs = try await offThePool {
      let runs = try (0..<8).map { index in
        try SpawnedProcess(
          builtProduct("typedstore-test-writer"),
          ["plan-open", url.absoluteString, "writer\(index)", String(format: "%.0f", start)])
      }
      return runs.map { ($0.finish(), $0.process.terminationStatus) }
    }
    #expect(outputs.allSatisfy { $0.1 == 0 && $0.0.contains("saved ") }, "\(outputs)")
    let container = try PersistentContainer(name: "Customers", migrationPlan: Self.customerPlan(), storeURL: url)
    #expect(try container.newModelContext().count(for: FetchRequest<PlanCustomerV3>()) == 11)
    let migration = try container.persistentStore.fetchHistory(HistoryRequest()).filter {
      $0.author == PersistentStore.migrationTransactionAuthor
    }
    #expect(migration.map(\.changes.isEmpty) == [false, true], "the plan ran once")
  }

  /// A process SIGKILLed while it migrates through the plan (after its custom stage saved, or
  /// at any moment) leaves version 1 whole or version 3 whole: PostgreSQL rolls back the
  /// transaction of a connection that went. `TYPEDSTORE_SOAK=1` runs 20 trials.
  @Test func aProcessKilledWhileItMigratesLeavesOneVersionWhole() async throws {
    let soak = ProcessInfo.processInfo.environment["TYPEDSTORE_SOAK"] == "1"
    let trials = soak ? 20 : 4
    let outcomes = try await offThePool {
      var outcomes: [String] = []
      for trial in 0..<trials {
        let location = try Self.locations("killed")
        defer { Self.cleanUp(location) }
        let url = location.postgreSQL
        let old = try PersistentContainer(
          name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url)
        _ = try old.newModelContext().execute(
          BatchInsertRequest<PlanCustomerV1>(count: 2000) { index, customer in customer.name = "First\(index) Last" })
        let history = try old.persistentStore.currentHistoryToken()
        let pausing = trial % 2 == 0
        let child = try SpawnedProcess(
          builtProduct("typedstore-test-writer"), ["plan-open", url.absoluteString, "killed", "0"],
          environment: pausing ? ["TYPEDSTORE_TEST_STAGE_PAUSE_MS": "30000"] : [:])
        guard child.waitForLine(pausing ? "staged" : "migrating") else {
          outcomes.append("trial \(trial): the child did not get there: \(child.transcript.all)")
          continue
        }
        if !pausing { Thread.sleep(forTimeInterval: Double.random(in: 0...0.5)) }
        child.kill()
        var noMigration = StoreOptions()
        noMigration.shouldMigrateStoreAutomatically = false
        do {
          let version1 = try PersistentContainer(
            name: "Customers", model: ManagedObjectModel(PlanCustomerV1.self), storeURL: url, options: noMigration)
          let count = try version1.newModelContext().count(for: FetchRequest<PlanCustomerV1>())
          let after = try version1.persistentStore.currentHistoryToken()
          outcomes.append(count == 2000 && after == history ? "version 1" : "trial \(trial): \(count) rows, \(after)")
        } catch StoreError.modelMismatch {
          let version3 = try PersistentContainer(name: "Customers", migrationPlan: Self.customerPlan(), storeURL: url)
          let split = try version3.newModelContext().count(
            for: FetchRequest<PlanCustomerV3>(predicate: #Predicate { $0.lastName == "Last" }))
          outcomes.append(split == 2000 && !pausing ? "version 3" : "trial \(trial): version 3, \(split) split")
        }
        // Either way the plan takes it to version 3 now.
        let reopened = try PersistentContainer(name: "Customers", migrationPlan: Self.customerPlan(), storeURL: url)
        let count = try reopened.newModelContext().count(for: FetchRequest<PlanCustomerV3>())
        if count < 2000 { outcomes.append("trial \(trial): \(count) rows after the plan") }
      }
      return outcomes
    }
    print("PostgreSQL migration kills: \(outcomes)")
    #expect(outcomes.allSatisfy { $0 == "version 1" || $0 == "version 3" }, "\(outcomes)")
    #expect(outcomes.filter { $0 == "version 1" }.count >= trials / 2, "every kill after the stage leaves version 1")
  }

  /// A read of an old-model process under way when a migration begins ends on the tables it
  /// began with: the migration waits for it (the `_metadata` lock), and the process's next
  /// read is refused as the store moved on.
  @Test func aReadUnderWayEndsBeforeAMigrationChangesItsTables() async throws {
    let location = try Self.locations("reading")
    defer { Self.cleanUp(location) }
    let (url, schema) = (location.postgreSQL, location.schema)
    let version1 = try ManagedObjectModel(PlanCustomerV1.self)
    try Self.fillCustomers(PersistentContainer(name: "Customers", model: version1, storeURL: url).newModelContext())
    let serverURL = try PostgreSQLTestServer.server().url
    let started = DispatchSemaphore(value: 0)
    async let read = offThePool { () throws -> (counts: [Int64], ended: ContinuousClock.Instant) in
      let reader = try PostgreSQLConnection(url: serverURL)
      try reader.use(schema: schema)
      reader.expectedModel = PostgreSQLConnection.ExpectedModel(hash: version1.versionHash) { _ in }
      let counts = try reader.readTransaction {
        let before = try reader.scalarInt("SELECT count(*) FROM \"Customer\"") ?? -1
        started.signal()
        Thread.sleep(forTimeInterval: 0.5)
        // `name` is version 1's column, which the migration drops with the table's rebuild.
        let after = try reader.scalarInt("SELECT count(*) FROM \"Customer\" WHERE \"name\" <> ''") ?? -1
        return [before, after]
      }
      let ended = ContinuousClock.now
      #expect(throws: StoreError.self) { try reader.readTransaction {} }
      return (counts, ended)
    }
    started.wait()
    let migrated = try await offThePool { () throws -> ContinuousClock.Instant in
      _ = try PersistentContainer(name: "Customers", migrationPlan: Self.customerPlan(), storeURL: url)
      return ContinuousClock.now
    }
    let (counts, ended) = try await read
    #expect(counts == [3, 3], "the read saw version 1's rows throughout")
    #expect(migrated > ended, "the migration committed after the read ended")
  }
}
