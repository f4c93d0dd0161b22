import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// A version 1 store with three orders (one with nil optionals), one update and one delete in
/// its history, and a consumer's checkpoint; closed when this returns.
private func makeVersion1Store(
  _ extra: [ManagedObject.Type] = [], fileID: String = #fileID, function: String = #function
) throws -> URL {
  let container = try PersistentContainer.makeTest(
    model: ManagedObjectModel([OrderV1.self] + extra), fileID: fileID, function: function)
  try container.viewContext.performAndWait { context in
    for (number, customer) in [(1, "ada"), (2, "grace"), (3, "linus")] {
      let order = OrderV1(context: context)
      order.number = number
      order.customer = customer
      order.total = Double(number) * 10.5
      if number != 2 {
        order.placed = Date(timeIntervalSinceReferenceDate: Double(number) * 1000)
        order.note = "note \(number)"
        order.receipt = Data([UInt8(number), 0xFF])
      }
    }
    try context.save()
    let orders = try context.fetch(FetchRequest<OrderV1>())
    orders.first { $0.number == 1 }?.customer = "ada lovelace"
    try context.save()
  }
  _ = try container.persistentStore.registerHistoryConsumer(
    "indexer", fromBeginning: true, acceptsHorizon: false, lease: .seconds(60))
  return container.persistentStore.url
}

/// Each row of `table`, its columns quoted and joined, ordered by pk.
private func rows(_ url: URL, _ table: String, _ columns: [String]) throws -> [String] {
  let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
  let statement = try connection.statement(
    "SELECT " + columns.map { "quote(\"\($0)\")" }.joined(separator: " || '|' || ") + " FROM \"\(table)\" ORDER BY pk")
  defer { statement.reset() }
  var result: [String] = []
  while try statement.step() { result.append(statement.string(0)) }
  return result
}

private let version1Columns = ["pk", "number", "customer", "total", "placed", "note", "receipt"]

/// Every table's rows and the schema, to compare a store before and after a refused open.
func everything(_ url: URL) throws -> [String: [String]] {
  var all = try storeRows(path: url.path)
  let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
  let statement = try connection.statement("SELECT type || ' ' || name || ' ' || ifnull(sql, '') FROM sqlite_master")
  defer { statement.reset() }
  var schema: [String] = []
  while try statement.step() { schema.append(statement.string(0)) }
  all["sqlite_master"] = schema.sorted()
  return all
}

private func open(_ url: URL, _ types: ManagedObject.Type..., options: StoreOptions = StoreOptions()) throws
  -> PersistentContainer
{
  try PersistentContainer(name: "Orders", model: ManagedObjectModel(types), storeURL: url, options: options)
}

/// Opening must fail with a `MigrationError` and leave every table and row as it was; the
/// store still opens with version 1 afterwards.
private func expectRefusal(
  _ url: URL, _ types: ManagedObject.Type..., sourceLocation: SourceLocation = #_sourceLocation
) throws -> MigrationError? {
  let before = try everything(url)
  let error = #expect(throws: MigrationError.self, sourceLocation: sourceLocation) {
    try PersistentContainer(name: "Orders", model: ManagedObjectModel(types), storeURL: url)
  }
  #expect(try everything(url) == before, sourceLocation: sourceLocation)
  let reopened = try open(url, OrderV1.self)
  #expect(try reopened.viewContext.performAndWait { try $0.count(for: FetchRequest<OrderV1>()) } == 3)
  return error
}

@Suite struct MigrationTests {
  // MARK: - Attributes

  @Test func anAddedOptionalAttributeIsAddedInPlaceWithNilInEveryRow() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(OrderAddOptional.self))
    #expect(report.canMigrate && report.steps.count == 1)
    #expect(!report.steps[0].operations.contains { $0.kind == .rebuildTable }, "\(report)")
    let container = try open(url, OrderAddOptional.self)
    #expect(try rows(url, "Order", version1Columns) == before)
    #expect(try rows(url, "Order", ["trackingNumber"]) == ["NULL", "NULL", "NULL"])
    try container.viewContext.performAndWait { context in
      let order = try #require(try context.fetch(FetchRequest<OrderAddOptional>()).first { $0.number == 3 })
      #expect(order.trackingNumber == nil && order.customer == "linus" && order.note == "note 3")
      order.trackingNumber = "1Z999"
      try context.save()
    }
    #expect(try rows(url, "Order", ["trackingNumber"]) == ["NULL", "NULL", "'1Z999'"])
  }

  @Test func anAddedRequiredAttributeGetsItsDefaultInEveryRow() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let container = try open(url, OrderAddDefault.self)
    #expect(try rows(url, "Order", version1Columns) == before)
    #expect(try rows(url, "Order", ["priority"]) == ["3", "3", "3"])
    let priorities = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<OrderAddDefault>()).map(\.priority)
    }
    #expect(priorities == [3, 3, 3])
  }

  @Test func anAddedAttributeWhoseDefaultDiffersPerObjectIsRefused() throws {
    let url = try makeVersion1Store()
    let error = try expectRefusal(url, OrderAddUUID.self)
    guard case .notInferable(let entity, let attribute, _, let stage) = error else {
      Issue.record("expected notInferable, got \(String(describing: error))")
      return
    }
    #expect(entity == "Order" && attribute == "token" && stage == .custom)
    #expect(error?.description.contains("needs a custom stage") == true)
    #expect(error?.description.contains("Nothing was changed") == true)
  }

  @Test func aRemovedAttributeRebuildsTheTableAndKeepsTheOtherColumns() throws {
    let url = try makeVersion1Store()
    let kept = ["pk", "number", "customer", "total", "placed", "note"]
    let before = try rows(url, "Order", kept)
    _ = try open(url, OrderRemove.self)
    #expect(try rows(url, "Order", kept) == before)
    let columns = try storeRows(path: url.path)["Order"]?.first ?? ""
    #expect(!columns.contains("X'01FF'"))
  }

  @Test func aRenamedAttributeKeepsItsValuesAndHistoryFollowsTheName() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let container = try open(url, OrderRename.self)
    #expect(try rows(url, "Order", ["pk", "number", "client", "total", "placed", "note", "receipt"]) == before)
    let history = try container.persistentStore.fetchHistory(HistoryRequest())
    let updated = history.flatMap(\.changes).filter { $0.changeType == .update }
    #expect(updated.map(\.updatedProperties) == [["client"]])
  }

  @Test func aRequiredAttributeBecomesOptional() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let container = try open(url, OrderToOptional.self)
    #expect(try rows(url, "Order", version1Columns) == before)
    try container.viewContext.performAndWait { context in
      let order = try #require(try context.fetch(FetchRequest<OrderToOptional>()).first)
      order.customer = nil
      try context.save()
    }
    #expect(try rows(url, "Order", ["customer"]).first == "NULL")
  }

  @Test func anOptionalAttributeBecomesRequiredAndNilRowsGetTheDefault() throws {
    let url = try makeVersion1Store()
    let others = ["pk", "number", "customer", "total", "placed", "receipt"]
    let before = try rows(url, "Order", others)
    _ = try open(url, OrderToRequired.self)
    #expect(try rows(url, "Order", others) == before)
    #expect(try rows(url, "Order", ["note"]) == ["'note 1'", "'none'", "'note 3'"])
  }

  @Test func anOptionalAttributeBecomingRequiredWithoutAConstantDefaultIsRefused() throws {
    let url = try makeVersion1Store()
    let error = try expectRefusal(url, OrderToRequiredNow.self)
    guard case .notInferable("Order", "placed", let change, .custom) = error else {
      Issue.record("expected notInferable for Order.placed, got \(String(describing: error))")
      return
    }
    #expect(change.contains("1 rows are nil"))
  }

  @Test func aTypeChangeIsRefusedNamingTheAttributeAndTheStage() throws {
    let url = try makeVersion1Store()
    let error = try expectRefusal(url, OrderTypeChange.self)
    guard case .notInferable("Order", "number", let change, .custom) = error else {
      Issue.record("expected notInferable for Order.number, got \(String(describing: error))")
      return
    }
    #expect(change.contains("integer64") && change.contains("string"))
  }

  @Test func aRenamedAttributesTombstoneKeysFollowTheRename() throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: ManagedObjectModel(TicketV1.self))
      try container.viewContext.performAndWait { context in
        let ticket = TicketV1(context: context)
        ticket.code = "T-1"
        try context.save()
        context.delete(ticket)
        try context.save()
      }
      url = container.persistentStore.url
    }
    let container = try open(url, TicketV2.self)
    let tombstones = try storeRows(path: url.path)["_history_change"]?.filter { $0.contains("T-1") } ?? []
    #expect(tombstones.count == 1 && tombstones[0].contains("\"reference\"") && !tombstones[0].contains("\"code\""))
    let deleted = try container.persistentStore.fetchHistory(HistoryRequest()).flatMap(\.changes)
      .filter { $0.changeType == .delete }
    #expect(deleted.count == 1 && deleted[0].tombstone != nil)
  }

  // MARK: - Indexes and uniqueness

  @Test func anAddedUniqueConstraintThatRowsBreakIsRefusedNamingThem() throws {
    let url = try makeVersion1Store()
    do {
      let container = try open(url, OrderV1.self)
      try container.viewContext.performAndWait { context in
        let order = OrderV1(context: context)
        order.number = 4
        order.customer = "grace"
        try context.save()
      }
    }
    let error = try expectRefusalOfFour(url)
    guard case .uniquenessViolation("Order", ["customer"], let collisions) = error else {
      Issue.record("expected uniquenessViolation, got \(String(describing: error))")
      return
    }
    #expect(collisions == [MigrationError.Collision(values: ["'grace'"], primaryKeys: [2, 4])])
  }

  private func expectRefusalOfFour(_ url: URL) throws -> MigrationError? {
    let before = try everything(url)
    let error = #expect(throws: MigrationError.self) { try open(url, OrderUnique.self) }
    #expect(try everything(url) == before)
    return error
  }

  @Test func addedIndexesAreMadeWhenNoRowsCollide() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    _ = try open(url, OrderUnique.self)
    #expect(try rows(url, "Order", version1Columns) == before)
    let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
    #expect(
      try connection.scalarText(
        "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'index' "
          + "AND tbl_name = 'Order' ORDER BY name)") == "_index_Order_number _unique_Order_customer")
  }

  // MARK: - Entities

  @Test func anAddedEntityMovesTheEntityCodesAndRowsKeepTheirEntity() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let container = try open(url, Invoice.self, OrderV1.self)
    #expect(try rows(url, "Order", version1Columns) == before)
    #expect(try rows(url, "Order", ["_entity"]) == ["2", "2", "2"])
    #expect(try storeRows(path: url.path)["_entities"] == ["1|'Invoice'", "2|'Order'"])
    let count = try container.viewContext.performAndWait { context in
      let invoice = Invoice(context: context)
      invoice.amount = 1
      try context.save()
      return try context.count(for: FetchRequest<OrderV1>())
    }
    #expect(count == 3)
  }

  @Test func aRemovedEntityDropsItsTable() throws {
    let url = try makeVersion1Store([Invoice.self])
    _ = try open(url, OrderV1.self)
    let all = try storeRows(path: url.path)
    #expect(all["Invoice"] == nil)
    #expect(all["_entities"] == ["1|'Order'"])
    #expect(all["_primary_key"]?.contains { $0.contains("Invoice") } == false)
  }

  @Test func aRenamedEntityKeepsItsRowsAndItsHistoryResolvesToTheNewName() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let container = try open(url, PurchaseV2.self)
    #expect(try rows(url, "Purchase", version1Columns) == before)
    let history = try container.persistentStore.fetchHistory(HistoryRequest())
    let ids = history.flatMap(\.changes).compactMap { $0.objectID(as: PurchaseV2.self) }
    #expect(ids.count == 4)  // three inserts and an update
    let customer = try container.viewContext.performAndWait { context in
      try context.existingObject(with: try #require(ids.last)).customer
    }
    #expect(customer == "ada lovelace")
  }

  @Test func anAddedSubentitySharesItsRootsTableAndOldRowsKeepTheirEntity() throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: ManagedObjectModel(DocumentV1.self))
      try container.viewContext.performAndWait { context in
        for title in ["a", "b"] { DocumentV1(context: context).title = title }
        try context.save()
      }
      url = container.persistentStore.url
    }
    let container = try open(url, DocumentV2.self, Memo.self)
    let counts = try container.viewContext.performAndWait { context in
      let memo = Memo(context: context)
      memo.title = "c"
      try context.save()
      return [try context.count(for: FetchRequest<DocumentV2>()), try context.count(for: FetchRequest<Memo>())]
    }
    #expect(counts == [3, 1])
    #expect(try rows(url, "Document", ["title", "color"]) == ["'a'|NULL", "'b'|NULL", "'c'|'red'"])
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  // MARK: - Relationships

  @Test func anAddedEntityWithAToOneToAnExistingEntityCanBeLinked() throws {
    let url = try makeVersion1Store()
    let before = try rows(url, "Order", version1Columns)
    let container = try open(url, OrderWithRefunds.self, Refund.self)
    #expect(try rows(url, "Order", version1Columns) == before)
    let refunds = try container.viewContext.performAndWait { context in
      let order = try #require(try context.fetch(FetchRequest<OrderWithRefunds>()).first)
      let refund = Refund(context: context)
      refund.amount = 2
      refund.order = order
      try context.save()
      return order.refunds.count
    }
    #expect(refunds == 1)
  }

  @Test func anAddedManyToManyMakesItsJoinTable() throws {
    let url = try makeVersion1Store()
    let container = try open(url, OrderWithLabels.self, Label.self)
    let labels = try container.viewContext.performAndWait { context in
      let order = try #require(try context.fetch(FetchRequest<OrderWithLabels>()).first)
      let label = Label(context: context)
      label.name = "urgent"
      order.labels.insert(label)
      try context.save()
      return order.labels.count
    }
    #expect(labels == 1)
    #expect(try storeRows(path: url.path).keys.contains { $0.hasPrefix("_join_") })
  }

  @Test func renamedRelationshipsKeepTheirLinks() throws {
    let url = try makeVersion1Store()
    do {
      let container = try open(url, OrderWithLabels.self, Label.self)
      try container.viewContext.performAndWait { context in
        let order = try #require(try context.fetch(FetchRequest<OrderWithLabels>()).first)
        let label = Label(context: context)
        label.name = "urgent"
        order.labels.insert(label)
        try context.save()
      }
    }
    let container = try open(url, OrderWithRenamedLabels.self, LabelRenamed.self)
    let linked = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<LabelRenamed>()).first?.purchases.count
    }
    #expect(linked == 1)
    let tables = try storeRows(path: url.path).keys
    #expect(tables.contains("_join_Label_purchases") && !tables.contains("_join_Label_orders"))
  }

  /// Saves a refund of each order's number, linked to it.
  private func refundEveryOrder(_ container: PersistentContainer) throws {
    try container.viewContext.performAndWait { context in
      for order in try context.fetch(FetchRequest<OrderWithRefunds>()) {
        let refund = Refund(context: context)
        refund.amount = Double(order.number)
        refund.order = order
      }
      try context.save()
    }
  }

  @Test func aStoreWithLinksKeepsThemWhenAnotherChangeMigratesIt() throws {
    let url = try makeVersion1Store()
    do {
      let container = try open(url, OrderWithRefunds.self, Refund.self)
      try refundEveryOrder(container)
    }
    let links = try rows(url, "Refund", ["pk", "amount", "order"])
    // A new entity sorting first moves every code; the key columns and their index stay.
    let container = try open(url, Invoice.self, OrderWithRefunds.self, Refund.self)
    #expect(try rows(url, "Refund", ["pk", "amount", "order"]) == links)
    let numbers = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<Refund>()).compactMap { $0.order?.number }.sorted()
    }
    #expect(numbers == [1, 2, 3])
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  @Test func aModelReadFromJSONWithRelationshipsMigratesAsItsClassesWould() throws {
    let url = try makeVersion1Store()
    let model = try ManagedObjectModel(OrderWithRefunds.self, Refund.self)
    let fromJSON = try ManagedObjectModel(schema: model.schema, json: model.jsonRepresentation)
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: fromJSON)
    #expect(report.canMigrate, "\(report)")
    #expect(report.steps.flatMap(\.operations).contains { $0.kind == .addRelationship })
    _ = try PersistentStore(url: url, model: fromJSON)
    // The classes find the store at their version, its key column and index in place.
    let container = try open(url, OrderWithRefunds.self, Refund.self)
    try refundEveryOrder(container)
    let numbers = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<Refund>()).compactMap { $0.order?.number }.sorted()
    }
    #expect(numbers == [1, 2, 3])
    #expect(try container.persistentStore.checkConsistency().passed)
  }

  @Test func aRenamedToOneKeepsItsKeyColumnsValues() throws {
    let url = try makeVersion1Store()
    do {
      let container = try open(url, OrderWithRefunds.self, Refund.self)
      try container.viewContext.performAndWait { context in
        let order = try #require(try context.fetch(FetchRequest<OrderWithRefunds>()).first { $0.number == 2 })
        let refund = Refund(context: context)
        refund.amount = 5
        refund.order = order
        try context.save()
      }
    }
    let container = try open(url, OrderWithRenamedRefunds.self, RefundRenamed.self)
    let number = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<RefundRenamed>()).first?.purchase?.number
    }
    #expect(number == 2)
    #expect(try rows(url, "Refund", ["purchase"]) == ["2"])
  }

  // MARK: - Switches, dry run, the record

  @Test func withInferenceOffAnyChangeNeedsAPlan() throws {
    let url = try makeVersion1Store()
    var options = StoreOptions()
    options.shouldInferMappingModelAutomatically = false
    let before = try everything(url)
    let error = #expect(throws: MigrationError.self) { try open(url, OrderAddOptional.self, options: options) }
    guard case .migrationPlanRequired = error else {
      Issue.record("expected migrationPlanRequired, got \(String(describing: error))")
      return
    }
    options = StoreOptions()
    options.shouldMigrateStoreAutomatically = false
    #expect(throws: StoreError.self) { try open(url, OrderAddOptional.self, options: options) }
    #expect(try everything(url) == before)
  }

  @Test func aDryRunDescribesEveryStepAndChangesNothing() throws {
    let url = try makeVersion1Store()
    let before = try everything(url)
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(OrderAddDefault.self))
    #expect(try everything(url) == before)
    #expect(report.canMigrate && report.isMigrationNeeded)
    let operations = report.steps.flatMap(\.operations)
    #expect(operations.contains { $0.kind == .addAttribute && $0.property == "priority" && $0.rowsAffected == 3 })
    #expect(operations.contains { $0.kind == .rebuildTable && $0.entity == "Order" && $0.rowsAffected == 3 })
    let decoded = try JSONDecoder().decode(MigrationReport.self, from: JSONEncoder().encode(report))
    #expect(decoded == report)
    let refused = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(OrderTypeChange.self))
    #expect(!refused.canMigrate && refused.description.contains("refused"))
  }

  @Test func aMigrationKeepsUUIDHistoryTokensAndCheckpointsAndRecordsItself() throws {
    let url = try makeVersion1Store()
    let old = try open(url, OrderV1.self)
    let token = try old.persistentStore.currentHistoryToken()
    let identifier = old.persistentStore.identifier
    let before = try storeRows(path: url.path)
    let container = try open(url, OrderAddDefault.self)
    let after = try storeRows(path: url.path)
    #expect(container.persistentStore.identifier == identifier)
    #expect(after["_history_consumer"] == before["_history_consumer"])
    #expect(after["_history_change"] == before["_history_change"])
    let transactions = try #require(after["_history_transaction"])
    #expect(Array(transactions.prefix(before["_history_transaction"]?.count ?? 0)) == before["_history_transaction"])
    let since = try container.persistentStore.fetchHistory(HistoryRequest(after: token))
    #expect(since.count == 1)
    #expect(since.first?.author == PersistentStore.migrationTransactionAuthor && since.first?.changes.isEmpty == true)
    let versions = try #require(after["_model_versions"])
    #expect(versions.count == 2)
    #expect(versions[1].contains(try ManagedObjectModel(OrderAddDefault.self).versionHash))
    let metadata = try container.persistentStore.metadata()
    #expect(metadata["model_hash"] == container.persistentStore.model.versionHash)
  }

  @Test func anOlderModelTheStoreWasMigratedPastIsRefusedAndChangesNothing() throws {
    let url = try makeVersion1Store()
    _ = try open(url, OrderAddOptional.self)
    let before = try everything(url)
    let error = #expect(throws: MigrationError.self) { try open(url, OrderV1.self) }
    guard case .olderModel = error else {
      Issue.record("expected olderModel, got \(String(describing: error))")
      return
    }
    #expect(try everything(url) == before)
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: ManagedObjectModel(OrderV1.self))
    #expect(!report.canMigrate)
  }

  @Test func aStoreMigratesThroughThreeVersionsKeepingHistoryAndConsistency() throws {
    let url = try makeVersion1Store()
    let token = try open(url, OrderV1.self).persistentStore.currentHistoryToken()
    let before = try rows(url, "Order", version1Columns)
    for types in [[OrderAddOptional.self], [OrderWithRefunds.self, Refund.self]] as [[ManagedObject.Type]] {
      let container = try PersistentContainer(name: "Orders", model: ManagedObjectModel(types), storeURL: url)
      let report = try container.persistentStore.checkConsistency()
      #expect(report.passed, "\(report.problems)")
    }
    #expect(try rows(url, "Order", version1Columns) == before)
    let container = try open(url, OrderWithRefunds.self, Refund.self)
    let since = try container.persistentStore.fetchHistory(HistoryRequest(after: token))
    #expect(
      since.map(\.author) == [PersistentStore.migrationTransactionAuthor, PersistentStore.migrationTransactionAuthor])
    #expect(try storeRows(path: url.path)["_model_versions"]?.count == 3)
  }

  @Test func aHistoryMergerReadingAcrossAMigrationSeesTheMarkerAndAdvancesPastIt() async throws {
    let url = try makeVersion1Store()
    var options = HistoryMerger.Options()
    options.startsAt = .beginning
    do {
      let container = try open(url, OrderV1.self)
      let merger = try HistoryMerger(
        container: container, consumer: "archiver", contexts: [container.viewContext], options: options)
      try await merger.start()
      await merger.stop()
    }
    let container = try open(url, OrderAddDefault.self)
    let merger = try HistoryMerger(container: container, consumer: "archiver", options: options)
    let seen = Recorder<String>()
    merger.addHook { event in
      seen.add(
        "\(event.transaction.transactionNumber) \(event.transaction.author ?? "-") \(event.transaction.changes.count)")
    }
    try await merger.start()  // returns once caught up
    await merger.stop()
    #expect(seen.all == ["3 \(PersistentStore.migrationTransactionAuthor) 0"])
    let checkpoint = try container.persistentStore.historyConsumers().first { $0.name == "archiver" }?.checkpoint
    #expect(checkpoint?.transactionNumber == 3)
  }

  @Test func everyMigrationMovesTheSchemaCookie() throws {
    let url = try makeVersion1Store()
    func cookie() throws -> Int64? {
      try SQLiteConnection(path: url.path, mode: .readOnly).scalarInt("PRAGMA schema_version")
    }
    let before = try cookie()
    _ = try open(url, OrderAddOptional.self)
    let after = try cookie()
    #expect(before != nil && after != nil && after != before)
  }
}
