import Foundation
import Observation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Composite attributes: structs stored as columns of their owner's table.
enum Composites {
  struct Geo: CompositeAttributeValue, Equatable {
    var latitude: Double = 0
    var longitude: Double = 0
  }

  enum Kind: String, CaseIterable, Comparable, Codable, Sendable {
    case home, work
    static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
  }

  struct Address: CompositeAttributeValue, Equatable {
    var street: String = ""
    var city: String = ""
    var postcode: String? = nil
    var kind: Kind = .home
    var geo: Geo = Geo()
    /// Reads two elements: no element of the composite, though each of its reads is one.
    var label: String { city + street }
    /// The city for a home address: the city itself while `kind` keeps its default.
    var cityAtHome: String { kind == .home ? city : "" }
  }

  final class Customer: ManagedObject {
    @Attribute var name: String = ""
    @Attribute(preservedOnDeletion: true) var address: Address = Address()
    @Attribute(persistentName: "bill") var billing: Address = Address(city: "Nowhere")
    @Attribute var rank: Int = 0
    @Relationship() var orders: Set<Order>
  }

  final class Order: ManagedObject {
    @Attribute var total: Int = 0
    @Relationship(inverse: \Customer.orders) var customer: Customer?
  }

  /// An attribute of a type a composite cannot hold.
  struct Tagged: CompositeAttributeValue {
    var name: String = ""
    var tags: [String] = []
  }

  final class BadElement: ManagedObject {
    @Attribute var tagged: Tagged = Tagged()
  }

  final class NotAStruct: CompositeAttributeValue {}

  final class BadComposite: ManagedObject {
    @Attribute var thing: NotAStruct = NotAStruct()
  }

  static let model = try! ManagedObjectModel(Customer.self, Order.self)
}

@Suite struct CompositeAttributeTests {
  typealias Customer = Composites.Customer
  typealias Address = Composites.Address

  @Test func eachElementIsAnAttributeWithItsOwnColumn() throws {
    let entity = try #require(Composites.model.entity(for: Customer.self))
    #expect(
      entity.attributes.map(\.name) == [
        "name", "address.street", "address.city", "address.postcode", "address.kind", "address.geo.latitude",
        "address.geo.longitude", "billing.street", "billing.city", "billing.postcode", "billing.kind",
        "billing.geo.latitude", "billing.geo.longitude", "rank",
      ])
    let city = try #require(entity.attribute(named: "address.city"))
    #expect(city.columnName == "address_city")
    #expect(city.compositeName == "address")
    #expect(city.isPreservedOnDeletion)
    #expect(entity.attribute(named: "billing.geo.latitude")?.columnName == "bill_geo_latitude")
    #expect(entity.attribute(named: "address.postcode")?.isOptional == true)
    #expect(entity.attribute(named: "address.kind")?.storage == .raw)
    #expect(entity.attribute(named: "rank")?.compositeName == nil)
  }

  @Test func aCompositeRoundTripsThroughTheStore() async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model)
    let address = Address(
      street: "1 Rue", city: "Paris", postcode: "75001", kind: .work,
      geo: Composites.Geo(latitude: 48.85, longitude: 2.35))
    let id = try await container.performBackgroundTask { context in
      let customer = Customer(context: context)
      customer.name = "Ada"
      customer.address = address
      try context.save()
      return customer.managedID
    }
    let (read, billing) = try await container.performBackgroundTask { context in
      let customer = try context.existingObject(with: id)
      return (customer.address, customer.billing)
    }
    #expect(read == address)
    #expect(billing == Address(city: "Nowhere"))
  }
}

extension CompositeAttributeTests {
  /// Four customers in three cities, with orders.
  static func seeded(_ container: PersistentContainer) async throws -> [ManagedID<Customer>] {
    try await container.performBackgroundTask { context in
      let rows: [(String, String, String, String?, Composites.Kind, Double, Int)] = [
        ("Ada", "2 Quai", "Paris", "75004", .home, 48.9, 3),
        ("Bob", "1 Rue", "Paris", nil, .work, 48.8, 1),
        ("Cyd", "9 Lane", "Oslo", "0150", .home, 59.9, 2),
        ("Dee", "5 Road", "Bonn", nil, .work, 50.7, 4),
      ]
      let customers = rows.map { name, street, city, postcode, kind, latitude, rank in
        let customer = Customer(context: context)
        customer.name = name
        customer.rank = rank
        customer.address = Address(
          street: street, city: city, postcode: postcode, kind: kind, geo: Composites.Geo(latitude: latitude))
        let order = Composites.Order(context: context)
        order.total = rank * 10
        order.customer = customer
        return customer
      }
      try context.save()
      return customers.map(\.managedID)
    }
  }

  @Test func predicatesSortsAndAggregatesSeeElementsByKeyPath() async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model)
    _ = try await Self.seeded(container)
    try await container.performBackgroundTask { context in
      let paris = try context.fetch(
        FetchRequest<Customer>(
          predicate: #Predicate { $0.address.city == "Paris" }, sortBy: [SortDescriptor(\.address.street)]))
      #expect(paris.map(\.name) == ["Bob", "Ada"])
      let north = try context.fetch(
        FetchRequest<Customer>(
          predicate: #Predicate { $0.address.geo.latitude > 50 && $0.address.postcode == nil },
          sortBy: [SortDescriptor(\.address.geo.latitude, order: .reverse)]))
      #expect(north.map(\.name) == ["Dee"])
      let work = Composites.Kind.work
      let atWork = try context.fetch(FetchRequest<Customer>(predicate: #Predicate { $0.address.kind == work }))
      #expect(Set(atWork.map(\.name)) == ["Bob", "Dee"])
      #expect(try context.aggregate(.max(\.address.geo.latitude), for: FetchRequest<Customer>()) == 59.9)
      let byCity = try context.aggregate(.count, for: FetchRequest<Customer>(), groupedBy: \.address.city)
      #expect(byCity == ["Paris": 2, "Oslo": 1, "Bonn": 1])
      // Through a relationship, by optional chaining.
      let orders = try context.fetch(
        FetchRequest<Composites.Order>(
          predicate: #Predicate { $0.customer?.address.city == "Paris" }, sortBy: [SortDescriptor(\.total)]))
      #expect(orders.map(\.total) == [10, 30])
      let sorted = try context.fetch(
        FetchRequest<Composites.Order>(sortBy: [SortDescriptor(\.customer?.address.city), SortDescriptor(\.total)]))
      #expect(sorted.map(\.total) == [40, 20, 10, 30])
    }
  }

  @Test func keyPathsThatNameNoElementAreRefused() async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model)
    let model = Composites.model
    let entity = try #require(model.entity(for: Customer.self))
    #expect(
      model.attributeSlot(for: \Customer.address.city, on: entity)
        == entity.attributeSlot(named: "address.city").map(Int.init))
    #expect(model.describe(\Customer.address.geo.longitude, on: entity) == "\\Customer.address.geo.longitude")
    #expect(model.resolve(\Customer.address, on: entity) == nil)  // the whole composite
    #expect(model.resolve(\Customer.address.geo, on: entity) == nil)  // a nested composite
    #expect(model.resolve(\Customer.address.label, on: entity) == nil)  // computed: reads city and street
    #expect(model.resolve(\Customer.address.cityAtHome, on: entity) == nil)  // city, unless kind changes
    #expect(model.resolve(\Customer.address.city.count, on: entity) == nil)
    await #expect(throws: PredicateTranslationError.self) {
      try await container.performBackgroundTask { context in
        _ = try context.fetch(FetchRequest<Customer>(predicate: #Predicate { $0.address.label == "Paris1 Rue" }))
      }
    }
  }

  @Test func settingACompositeChangesOnlyTheElementsThatDiffer() async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model)
    let ids = try await Self.seeded(container)
    let start = try container.currentHistoryToken
    try await container.performBackgroundTask { context in
      let ada = try context.existingObject(with: ids[0])
      var moved = ada.address
      moved.street = "3 Quai"
      moved.geo.longitude = 2.4
      ada.address = moved
      #expect(Set(ada.changedValues().keys) == ["address.street", "address.geo.longitude"])
      #expect(ada.committedValues(forKeys: ["address.street"])["address.street"] as? String == "2 Quai")
      let bob = try context.existingObject(with: ids[1])
      bob.address = bob.address  // the same value: a change, as for any attribute
      #expect(bob.isUpdated)
      #expect(Set(bob.changedValues().keys) == ["address.street"])  // its first element
      var back = ada.address
      back.street = "2 Quai"
      ada.address = back  // street back to its saved value: still recorded, as any attribute is
      #expect(Set(ada.changedValues().keys) == ["address.street", "address.geo.longitude"])
      ada.address.city = "Lyon"  // a mutation in place is a set, too
      #expect(Set(ada.changedValues().keys) == ["address.street", "address.geo.longitude", "address.city"])
      try context.save()
    }
    let transactions = try container.fetchHistory(HistoryRequest(after: start))
    let changes = transactions.flatMap(\.changes)
    let ada = try #require(changes.first { $0.objectID(as: Customer.self) == ids[0] })
    #expect(Set(ada.updatedProperties) == ["address.geo.longitude", "address.city"])
    let read = try await container.performBackgroundTask { context in try context.existingObject(with: ids[0]).address }
    #expect(
      read
        == Address(
          street: "2 Quai", city: "Lyon", postcode: "75004", kind: .home, geo: .init(latitude: 48.9, longitude: 2.4)))
  }

  @Test func batchRequestsTombstonesAndTheExportCarryElements() async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model)
    let ids = try await Self.seeded(container)
    try await container.performBackgroundTask { context in
      let request = BatchUpdateRequest<Customer>(
        predicate: #Predicate { $0.address.city == "Paris" }, propertiesToUpdate: [.set(\.address.postcode, "75000")])
      _ = try context.execute(request)
      _ = try context.execute(BatchDeleteRequest<Customer>(predicate: #Predicate { $0.address.city == "Oslo" }))
      let postcodes = try context.fetch(FetchRequest<Customer>(sortBy: [SortDescriptor(\.name)])).map(
        \.address.postcode)
      #expect(postcodes == ["75000", "75000", nil])
    }
    let deleted = try #require(
      try container.fetchHistory(HistoryRequest()).flatMap(\.changes).first { $0.changeType == .delete })
    #expect(deleted.objectID(as: Customer.self) == ids[2])
    let tombstone = try #require(deleted.tombstone)
    #expect(tombstone[\Customer.address.city] == "Oslo")
    #expect(tombstone[\Customer.address.geo.latitude] == 59.9)
    #expect(tombstone[\Customer.address.kind] == .home)
    #expect(tombstone[\Customer.billing.city] == nil)  // not preserved
    #expect(tombstone.values["address.postcode"] == .text("0150"))
    var text = Data()
    _ = try container.persistentStore.exportHistory(HistoryRequest()) { text.append(contentsOf: $0) }
    let exported = try text.split(separator: UInt8(ascii: "\n")).map {
      try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
    }
    let changes = exported.compactMap { $0["changes"] as? [[String: Any]] }.joined()
    let update = try #require(changes.first { $0["kind"] as? String == "update" })
    #expect(update["changedAttributes"] as? [String] == ["address.postcode"])
    let exportedTombstone = try #require(changes.compactMap { $0["tombstone"] as? [String: Any] }.first)
    #expect(exportedTombstone["address.city"] as? String == "Oslo")
    #expect(exportedTombstone["address.geo.latitude"] as? Double == 59.9)
  }
}

/// Composites whose elements share types, with computed properties that forward to one.
enum CompositeShapes {
  struct Flags: CompositeAttributeValue {
    struct Inner: CompositeAttributeValue {
      var archived = false
    }
    var a = false
    var b = false
    var inner = Inner()
    var archived: Bool { inner.archived }
  }

  struct Frame: CompositeAttributeValue {
    var x = 0.0
    var y = 0.0
    var width = 0.0
    var height = 0.0
    var area: Double { width * height }
  }

  final class Widget: ManagedObject {
    @Attribute var flags: Flags = Flags()
    @Attribute var frame: Frame = Frame()
  }

  final class UniqueAddress: ManagedObject {
    override class var uniquenessConstraints: [UniquenessConstraint] { [UniquenessConstraint(\UniqueAddress.address)] }
    @Attribute var address: Composites.Address = Composites.Address()
  }

  final class UniqueCity: ManagedObject {
    override class var uniquenessConstraints: [UniquenessConstraint] {
      [UniquenessConstraint(\UniqueCity.address.city)]
    }
    @Attribute var address: Composites.Address = Composites.Address()
  }

  final class Watched: ManagedObject, Observable {
    @Attribute var address: Composites.Address = Composites.Address()
  }
}

/// Versions of a customer's model whose address gains elements and is renamed.
enum CompositeVersions {
  struct AddressV1: CompositeAttributeValue {
    var street: String = ""
    var city: String = ""
  }

  struct AddressV2: CompositeAttributeValue {
    var street: String = ""
    var city: String = ""
    var country: String = "FR"
    var geo: Composites.Geo = Composites.Geo()
  }

  final class CustomerV1: ManagedObject {
    override class var entityName: String { "Customer" }
    @Attribute var name: String = ""
    @Attribute var address: AddressV1 = AddressV1()
  }

  final class CustomerV2: ManagedObject {
    override class var entityName: String { "Customer" }
    @Attribute var name: String = ""
    @Attribute(originalName: "address") var home: AddressV2 = AddressV2()
  }
}

extension CompositeAttributeTests {
  @Test func aStructACompositeCannotHoldIsRefusedByName() throws {
    let element = #expect(throws: ModelError.self) { try ManagedObjectModel(Composites.BadElement.self) }
    #expect(element?.property == "tagged")
    #expect("\(element!)".contains("tagged.tags"), "\(element!)")
    #expect("\(element!)".contains("Array<String>"), "\(element!)")
    let notStruct = #expect(throws: ModelError.self) { try ManagedObjectModel(Composites.BadComposite.self) }
    #expect("\(notStruct!)".contains("a composite must be a struct"), "\(notStruct!)")
  }

  @Test func aMigrationAddsElementsAndRenamesTheComposite() throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let v1 = try PersistentContainer(
      name: "Customers", model: ManagedObjectModel(CompositeVersions.CustomerV1.self), storeURL: url)
    try v1.viewContext.performAndWait { context in
      let customer = CompositeVersions.CustomerV1(context: context)
      customer.name = "Ada"
      customer.address = CompositeVersions.AddressV1(street: "1 Rue", city: "Paris")
      try context.save()
    }
    let model = try ManagedObjectModel(CompositeVersions.CustomerV2.self)
    let report = try PersistentStore.migrationReport(forStoreAt: url, to: model)
    #expect(report.canMigrate, "\(report)")
    let v2 = try PersistentContainer(name: "Customers", model: model, storeURL: url)
    let home = try v2.viewContext.performAndWait { context in
      try #require(try context.fetch(FetchRequest<CompositeVersions.CustomerV2>()).first).home
    }
    #expect(home.street == "1 Rue" && home.city == "Paris" && home.country == "FR" && home.geo == Composites.Geo())
  }

  @Test(arguments: [MergePolicy.objectTrump, .storeTrump])
  func propertyMergePoliciesMergeElementByElement(_ policy: MergePolicy) async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model, variant: "\(policy)")
    let ids = try await Self.seeded(container)
    let mine = container.newBackgroundContext()
    let stale = try await mine.perform { context in try context.existingObject(with: ids[0]).address }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[0]).address.city = "Lyon"
      try context.save()
    }
    try await mine.perform { context in
      context.mergePolicy = policy
      var edited = stale  // read before the other save: its city is the old one
      edited.street = "7 Quai"
      try context.existingObject(with: ids[0]).address = edited
      try context.save()
    }
    let saved = try await container.performBackgroundTask { context in try context.existingObject(with: ids[0]).address
    }
    #expect(saved.street == "7 Quai" && saved.city == "Lyon")
  }

  @Test func elementsOfOneTypeAndForwardingPropertiesResolveAsTheyAre() throws {
    let model = try ManagedObjectModel(CompositeShapes.Widget.self)
    let entity = try #require(model.entity(for: CompositeShapes.Widget.self))
    func name(_ keyPath: AnyKeyPath) -> String? {
      model.resolve(keyPath, on: entity).flatMap { resolved in
        if case .attribute(let slot) = resolved.target { entity.storedAttributes[slot].name } else { nil }
      }
    }
    #expect(name(\CompositeShapes.Widget.flags.a) == "flags.a")
    #expect(name(\CompositeShapes.Widget.flags.b) == "flags.b")
    #expect(name(\CompositeShapes.Widget.flags.inner.archived) == "flags.inner.archived")
    #expect(name(\CompositeShapes.Widget.flags.archived) == nil)  // forwards to inner.archived
    #expect(name(\CompositeShapes.Widget.frame.x) == "frame.x")
    #expect(name(\CompositeShapes.Widget.frame.y) == "frame.y")
    #expect(name(\CompositeShapes.Widget.frame.width) == "frame.width")
    #expect(name(\CompositeShapes.Widget.frame.height) == "frame.height")
    #expect(name(\CompositeShapes.Widget.frame.area) == nil)
  }

  @Test func aUniquenessConstraintOnACompositeIsRefused() {
    for type in [CompositeShapes.UniqueAddress.self, CompositeShapes.UniqueCity.self] as [ManagedObject.Type] {
      let error = #expect(throws: ModelError.self) { try ManagedObjectModel(type) }
      #expect(error?.property == "address")
      #expect("\(error!)".contains("a composite attribute or its elements cannot be constrained"), "\(error!)")
    }
  }

  @Test(arguments: [false, true])
  func changesAreTheSameWhetherTheObjectIsObservedOrNot(_ observed: Bool) async throws {
    let container = try PersistentContainer.makeTest(
      model: ManagedObjectModel(CompositeShapes.Watched.self), variant: "\(observed)")
    let id = try await container.performBackgroundTask { context in
      let watched = CompositeShapes.Watched(context: context)
      watched.address.city = "Paris"
      try context.save()
      return watched.managedID
    }
    let mine = container.newBackgroundContext()
    try await mine.perform { context in
      let watched = try context.existingObject(with: id)
      if observed {
        withObservationTracking {
          _ = watched.address
        } onChange: {
        }
      }
      watched.address.city = "Lyon"  // not saved
    }
    try await container.performBackgroundTask { context in
      let watched = try context.existingObject(with: id)
      watched.address.city = "Lyon"
      watched.address.street = "1 Rue"
      try context.save()
    }
    let (changed, isUpdated, street) = try await mine.perform { context in
      let watched = try context.existingObject(with: id)
      context.refresh(watched, mergeChanges: true)
      return (Set(watched.changedValues().keys), watched.isUpdated, watched.address.street)
    }
    #expect(street == "1 Rue")
    #expect(changed == ["address.city"] && isUpdated)
  }

  @Test func aRefreshThatMergesKeepsOnlyTheEditedElements() async throws {
    let container = try PersistentContainer.makeTest(model: Composites.model)
    let ids = try await Self.seeded(container)
    let mine = container.newBackgroundContext()
    try await mine.perform { context in
      var address = try context.existingObject(with: ids[1]).address
      address.postcode = "75002"
      try context.existingObject(with: ids[1]).address = address
    }
    try await container.performBackgroundTask { context in
      try context.existingObject(with: ids[1]).address.street = "4 Rue"
      try context.save()
    }
    let merged = try await mine.perform { context in
      let bob = try context.existingObject(with: ids[1])
      context.refresh(bob, mergeChanges: true)
      return (bob.address, Set(bob.changedValues().keys))
    }
    #expect(merged.0.street == "4 Rue" && merged.0.postcode == "75002")
    #expect(merged.1 == ["address.postcode"])
  }
}

extension CompositeAttributeTests {
  /// A model file's composite bound to a class's struct, element by element.
  static func customerFile(elements: String) throws -> URL {
    try ModelFiles.version(
      ModelFiles.model(
        """
        <entity name="Customer" representedClassName="CustomerV1">
        <attribute name="address" optional="YES" attributeType="Composite" composite="Place"/>
        <attribute name="name" attributeType="String" defaultValueString=""/></entity>
        <composite name="Place">\(elements)</composite>
        """))
  }

  @Test func aFilesCompositeBindsToAStructElementByElement() throws {
    let street = #"<attribute name="street" attributeType="String" defaultValueString=""/>"#
    let city = #"<attribute name="city" attributeType="String" defaultValueString=""/>"#
    let country = #"<attribute name="country" attributeType="String" defaultValueString="FR"/>"#
    let matching = try Self.customerFile(elements: street + city)
    let model = try ManagedObjectModel(contentsOf: matching, classes: [CompositeVersions.CustomerV1.self])
    #expect(model.entity(named: "Customer")?.attribute(named: "address.city")?.columnName == "address_city")
    let drifted = try Self.customerFile(elements: street + city + country)
    let error = #expect(throws: ModelFileError.self) {
      try ManagedObjectModel(contentsOf: drifted, classes: [CompositeVersions.CustomerV1.self])
    }
    guard case .mismatches(let mismatches)? = error?.reason else {
      Issue.record("not a mismatch: \(String(describing: error))")
      return
    }
    #expect(
      mismatches.map(\.description) == [
        "Customer.address.country: missingProperty: attribute in the file, no @Attribute in the class"
      ])
  }
}

extension CompositeAttributeTests {
  @Test func aPredicateIntoACompositeIsResolvedOncePerKeyPathWritten() throws {
    let model = try ManagedObjectModel(Customer.self, Composites.Order.self)
    let predicate = #Predicate<Customer> { $0.address.geo.latitude > 50 && $0.address.city == "Oslo" }
    _ = try PredicateTranslator<Customer>.translate(predicate, model: model)
    let first = model.resolvedKeyPaths.withLock { ($0.entries.count, $0.joined.count) }
    #expect(first.1 == 2)
    for _ in 0..<3 { _ = try PredicateTranslator<Customer>.translate(predicate, model: model) }
    #expect(model.resolvedKeyPaths.withLock { ($0.entries.count, $0.joined.count) } == first)
  }
}
