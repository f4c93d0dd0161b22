import Foundation
import ShopModel
import Spawning
import Testing
import TypedStore
import TypedStoreTesting

/// The classes of the Shop bundle's first version, as an app that shipped it declared them.
enum ShopV1 {
  final class Shopper: ManagedObject {  // not in the file's order: its store's hash is not the file's
    @Attribute var name: String = ""
    @Attribute var email: String? = nil
    @Relationship(deleteRule: .cascade) var baskets: Set<Basket>
  }
  final class Basket: ManagedObject {
    @Attribute var createdAt: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship(inverse: \Shopper.baskets, required: true) var shopper: Shopper?
  }
}

/// A ticket whose status is an enum: the model file says String.
enum TicketModels {
  enum Status: String, Sendable { case open, closed }
  final class TicketV1: ManagedObject {
    override class var entityName: String { "Ticket" }
    @Attribute var status: Status = .open
  }
  final class Ticket: ManagedObject {
    @Attribute var status: Status = .open
    @Attribute var note: String? = nil
  }
  static func bundle() throws -> URL {
    let url = try ModelFiles.temporaryFolder().appendingPathComponent("Tickets.xcdatamodeld")
    for (name, body) in [
      (
        "Tickets",
        #"<entity name="Ticket"><attribute name="status" attributeType="String" defaultValueString="open"/></entity>"#
      ),
      (
        "Tickets 2",
        #"<entity name="Ticket"><attribute name="note" optional="YES" attributeType="String"/>"#
          + #"<attribute name="status" attributeType="String" defaultValueString="open"/></entity>"#
      ),
    ] {
      let version = url.appendingPathComponent("\(name).xcdatamodel")
      try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
      try Data(ModelFiles.model(body).utf8).write(to: version.appendingPathComponent("contents"))
    }
    let marker =
      #"<?xml version="1.0"?><plist version="1.0"><dict><key>_XCCurrentVersionName</key>"#
      + #"<string>Tickets 2.xcdatamodel</string></dict></plist>"#
    try Data(marker.utf8).write(to: url.appendingPathComponent(".xccurrentversion"))
    return url
  }
}

/// A store made with the first version of a three-version bundle migrates to its current
/// version through a plan read from the bundle.
@Suite struct ModelFileMigrationTests {
  static let order = ["Shop", "Shop 2", "Shop 3"]

  /// A store made with version 1's classes (checked against version 1's file): Ada with an
  /// email and a basket (and a change of name in history), Bob with a basket.
  static func makeVersion1Store(variant: String = "", function: String = #function) throws -> URL {
    let file = try XcodeModelBundle(contentsOf: ModelFiles.shop).model(named: "Shop")
    let model = try ManagedObjectModel(xcodeModel: file, classes: [ShopV1.Shopper.self, ShopV1.Basket.self])
    let container = try PersistentContainer.makeTest(model: model, variant: variant, function: function)
    try container.viewContext.performAndWait { context in
      for (name, email) in [("Ada Lovelace", "ada@example.com"), ("Bob", nil)] {
        let shopper = ShopV1.Shopper(context: context)
        shopper.name = name
        shopper.email = email
        ShopV1.Basket(context: context).shopper = shopper
      }
      try context.save()
      try context.fetch(FetchRequest<ShopV1.Shopper>(predicate: #Predicate { $0.name == "Ada Lovelace" })).first?.name =
        "Ada"
      try context.save()
    }
    return container.persistentStore.url
  }

  static func shoppers(_ container: PersistentContainer) throws -> [String] {
    try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<ShopModel.Shopper>(sortBy: [SortDescriptor(\.fullName)])).map {
        "\($0.fullName)|\($0.email ?? "nil")|\($0.loyalty)|\($0.baskets.count)"
      }
    }
  }

  @Test func aVersion1StoreMigratesThroughTheBundlesVersions() throws {
    let url = try Self.makeVersion1Store()
    let plan = try MigrationPlan(bundle: ModelFiles.shop, order: Self.order, classes: ModelFiles.shopClasses)
    #expect(plan.versions.map(\.identifier) == Self.order)
    let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url)
    #expect(try Self.shoppers(container) == ["Ada|ada@example.com|0|1", "Bob|nil|0|1"])
    try container.viewContext.performAndWait { context in
      let tea = ShopModel.Product(context: context)
      tea.title = "Tea"
      let item = ShopModel.BasketItem(context: context)
      item.product = tea
      let basket = try #require(try context.fetch(FetchRequest<ShopModel.Basket>()).first)
      basket.items = [item]
      try context.save()
    }
    let identifiers = try container.persistentStore.inspect().modelVersions.map(\.versionIdentifier)
    #expect(identifiers == [nil, "Shop 2", "Shop 3"])
    // Version 1's history names the renamed attribute by its new name.
    let changes = try container.persistentStore.fetchHistory(HistoryRequest()).flatMap(\.changes)
    #expect(changes.contains { $0.objectID.entityName == "Shopper" && $0.updatedProperties == ["fullName"] })
  }

  @Test func aStoreAtTheFilesOrderOfTheLastVersionIsStampedOnce() throws {
    let url = try Self.makeVersion1Store()
    // A tool migrates it to the file's model, which lists properties in the file's order.
    _ = try PersistentStore(url: url, model: ManagedObjectModel(contentsOf: ModelFiles.shop))
    let plan = try MigrationPlan(bundle: ModelFiles.shop, order: Self.order, classes: ModelFiles.shopClasses)
    func markers() throws -> Int {
      try PersistentStore(
        url: url, model: ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses)
      )
      .fetchHistory(HistoryRequest()).filter { $0.author == PersistentStore.migrationTransactionAuthor }.count
    }
    do { _ = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url) }
    let first = try markers()
    do { _ = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url) }
    #expect(try markers() == first, "a second open migrated again")
    let metadata = try PersistentStore.metadataForPersistentStore(at: url)
    #expect(metadata.modelHash == plan.versions.last?.model.versionHash)
    var readOnly = StoreOptions()
    readOnly.isReadOnly = true
    _ = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url, options: readOnly)
  }

  @Test func anEnumTheFileCallsAStringMigratesThroughThePlan() throws {
    let bundle = try TicketModels.bundle()
    let first = try XcodeModelBundle(contentsOf: bundle).model(named: "Tickets")
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(xcodeModel: first, classes: [TicketModels.TicketV1.self]))
    try container.viewContext.performAndWait { context in
      TicketModels.TicketV1(context: context).status = .closed
      try context.save()
    }
    let url = container.persistentStore.url
    let plan = try MigrationPlan(bundle: bundle, order: ["Tickets", "Tickets 2"], classes: [TicketModels.Ticket.self])
    let migrated = try PersistentContainer(name: "Tickets", migrationPlan: plan, storeURL: url)
    let statuses = try migrated.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<TicketModels.Ticket>()).map(\.status)
    }
    #expect(statuses == [.closed])
  }

  @Test func aPlanMustEndAtTheCurrentVersion() throws {
    #expect(throws: MigrationError.self) {
      try MigrationPlan(bundle: ModelFiles.shop, order: ["Shop", "Shop 2"], classes: ModelFiles.shopClasses)
    }
    #expect(throws: ModelFileError.self) {
      try MigrationPlan(bundle: ModelFiles.shop, order: ["Shop", "Shop 9", "Shop 3"], classes: ModelFiles.shopClasses)
    }
  }

  @Test func classesThatDifferFromTheLastVersionAreRefusedBeforeTheStoreIsTouched() throws {
    let url = try Self.makeVersion1Store()
    let before = try Data(contentsOf: url)
    var caught: (any Error)?
    do {
      _ = try MigrationPlan(
        bundle: ModelFiles.shop, order: Self.order, classes: [ShopV1.Shopper.self, ShopV1.Basket.self])
    } catch { caught = error }
    let error = try #require(caught as? ModelFileError)
    guard case .mismatches(let mismatches) = error.reason else {
      Issue.record("\(error)")
      return
    }
    #expect(mismatches.contains { $0.kind == .missingEntity && $0.entity == "Tag" })
    #expect(try Data(contentsOf: url) == before)
  }

  @Test("four processes opening a version 1 store with the bundle's plan migrate it once and all save")
  func fourProcessesMigrateThroughTheBundleOnce() async throws {
    let url = try Self.makeVersion1Store()
    let problems = try await offThePool {
      var problems: [String] = []
      let start = Date().timeIntervalSince1970 * 1000 + 300
      let runs = try (0..<4).map { index in
        try SpawnedProcess(
          builtProduct("typedstore-test-writer"),
          ["shop-plan", url.path, "writer\(index)", String(format: "%.0f", start)])
      }
      for (index, run) in runs.enumerated() {
        let output = run.finish()
        if run.process.terminationStatus != 0 || !output.contains("saved ") {
          problems.append("writer\(index): \(output)")
        }
      }
      return problems
    }
    #expect(problems.isEmpty, "\(problems)")
    let plan = try MigrationPlan(bundle: ModelFiles.shop, order: Self.order, classes: ModelFiles.shopClasses)
    let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url)
    #expect(try Self.shoppers(container) == ["Ada|ada@example.com|0|1", "Bob|nil|0|1"])
    let titles = try container.viewContext.performAndWait { context in
      try context.fetch(FetchRequest<ShopModel.Product>()).map(\.title).sorted()
    }
    #expect(titles == ["writer0", "writer1", "writer2", "writer3"])
    let markers = try container.persistentStore.fetchHistory(HistoryRequest()).filter {
      $0.author == PersistentStore.migrationTransactionAuthor
    }
    #expect(markers.count == 1, "the plan ran \(markers.count) times")
  }
}
