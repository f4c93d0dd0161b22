import Foundation
import ShopModel
import Testing
import TypedStore
import TypedStoreTesting

/// Classes that differ from `ModelFileBindingTests.driftModel` in every way a mismatch can.
enum Drift {
  class Animal: ManagedObject {
    @Attribute var legs: Int = 4
  }
  final class Pet: ManagedObject {  // the file's Pet is an Animal
    @Attribute var name: String = ""
    @Relationship(inverse: \Person.pets, required: true) var owner: Person?  // optional in the file
  }
  final class House: ManagedObject {  // the file's entity is Dwelling
    @Relationship(inverse: \Person.home) var occupants: Set<Person>  // residents in the file
  }
  final class Extra: ManagedObject {  // not in the file
    @Attribute var x: Int = 0
  }
  final class Person: ManagedObject {
    @Attribute var name: Int = 0  // a String in the file
    @Attribute var nick: String = ""  // optional in the file
    @Attribute var age: Int = 2  // 1 in the file
    @Attribute(persistentName: "kode") var code: String = ""
    @Attribute var email: String? = nil  // unique in the file
    @Attribute var city: String? = nil  // indexed in the file
    @Attribute var scratch: String? = nil  // transient in the file
    @Attribute var prefs: String? = nil  // transformable in the file
    @Attribute var note: String? = nil  // preserved in the file
    @Attribute var score: Int = 0  // 0...10 in the file
    @Attribute var extra: String? = nil  // not in the file, which has `gone`
    @Relationship() var pets: Set<Pet>  // ordered and cascading in the file
    @Relationship() var home: House?  // to a Dwelling, whose `residents` is its inverse, in the file
    @Relationship(inverse: \Person.buddyOf) var buddy: Person?  // to-many in the file
    @Relationship() var buddyOf: Set<Person>
  }
  /// One unique attribute, declared two ways.
  final class Flagged: ManagedObject {
    override class var entityName: String { "Member" }
    @Attribute(unique: true) var email: String = ""
  }
  final class Constrained: ManagedObject {
    override class var entityName: String { "Member" }
    override class var uniquenessConstraints: [UniquenessConstraint] { [UniquenessConstraint(\Constrained.email)] }
    @Attribute var email: String = ""
  }
}

@Suite struct ModelFileBindingTests {
  static let driftModel = ModelFiles.model(
    """
    <entity name="Animal" representedClassName="Animal">
        <attribute name="legs" attributeType="Integer 64" defaultValueString="4" usesScalarValueType="YES"/>
    </entity>
    <entity name="Pet" representedClassName="Pet" parentEntity="Animal">
        <attribute name="name" attributeType="String" defaultValueString=""/>
        <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Person" inverseName="pets"/>
    </entity>
    <entity name="Dwelling" representedClassName="House">
        <relationship name="residents" optional="YES" toMany="YES" destinationEntity="Person" inverseName="home"/>
    </entity>
    <entity name="Lost" representedClassName="Lost">
        <attribute name="x" optional="YES" attributeType="String"/>
    </entity>
    <entity name="Person" representedClassName="Person">
        <attribute name="age" attributeType="Integer 64" defaultValueString="1" usesScalarValueType="YES" \
    elementID="years"/>
        <attribute name="city" optional="YES" attributeType="String" indexed="YES"/>
        <attribute name="code" attributeType="String" defaultValueString=""/>
        <attribute name="email" optional="YES" attributeType="String"/>
        <attribute name="gone" optional="YES" attributeType="String"/>
        <attribute name="name" attributeType="String" defaultValueString=""/>
        <attribute name="nick" optional="YES" attributeType="String"/>
        <attribute name="note" optional="YES" attributeType="String" preserveAfterDeletion="YES"/>
        <attribute name="prefs" optional="YES" attributeType="Transformable" customClassName="[String]"/>
        <attribute name="scratch" optional="YES" attributeType="String" transient="YES"/>
        <attribute name="score" attributeType="Integer 64" minValueString="0" maxValueString="10" defaultValueString="0"/>
        <relationship name="buddy" optional="YES" toMany="YES" destinationEntity="Person" inverseName="buddyOf"/>
        <relationship name="buddyOf" optional="YES" toMany="YES" destinationEntity="Person" inverseName="buddy"/>
        <relationship name="home" optional="YES" maxCount="1" destinationEntity="Dwelling" inverseName="residents"/>
        <relationship name="pets" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" \
    destinationEntity="Pet" inverseName="owner"/>
        <uniquenessConstraints><uniquenessConstraint><constraint value="email"/></uniquenessConstraint></uniquenessConstraints>
    </entity>
    """)

  @Test func theGeneratedClassesBindToTheirFileWithNoMismatch() throws {
    let model = try ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses)
    let file = try XcodeModel(contentsOf: ModelFiles.shop)
    #expect(try file.mismatches(against: model).isEmpty)
    #expect(try file.schema().storesAlike(model.schema))
    #expect(model.entity(for: ShopModel.Shopper.self)?.attribute(named: "fullName")?.originalName == "name")
  }

  @Test func theGeneratorWritesTheCommittedClasses() throws {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("ShopModel")
    let sources =
      try XcodeModel(contentsOf: ModelFiles.shop).swiftSources(public: true)
      + XcodeModel(contentsOf: ModelFiles.catalog).swiftSources(public: true)
    let committed = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
    #expect(Set(sources.map(\.fileName)) == Set(committed))
    for source in sources {
      let text = try String(contentsOf: folder.appendingPathComponent(source.fileName), encoding: .utf8)
      #expect(source.text == text, "\(source.fileName) differs from what the generator writes now")
    }
  }

  @Test func aGeneratedClassOfEveryAttributeTypeBindsStoresAndQueries() throws {
    let model = try ManagedObjectModel(contentsOf: ModelFiles.catalog, classes: [ShopModel.Specimen.self])
    let container = try PersistentContainer.makeTest(model: model)
    let identifier = UUID()
    try container.viewContext.performAndWait { context in
      let specimen = ShopModel.Specimen(context: context)
      #expect(specimen.active && specimen.code == 7 && specimen.mass == 1.5 && specimen.ratio == 0.5)
      #expect(specimen.price == Decimal(string: "19.99") && specimen.label == "unnamed \"specimen\"")
      specimen.identifier = identifier
      specimen.bytes = Data([1, 2, 3])
      specimen.found = Date(timeIntervalSinceReferenceDate: 86_400)
      specimen.link = URL(string: "https://example.com/a")
      specimen.tags = ["fossil", "jurassic"]
      specimen.serial = 1 << 40
      let cheap = ShopModel.Specimen(context: context)
      cheap.price = Decimal(string: "0.10") ?? 0
      try context.save()
    }
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      let found = try context.fetch(
        FetchRequest<ShopModel.Specimen>(predicate: #Predicate { $0.price > 1 }, sortBy: [SortDescriptor(\.serial)]))
      let specimen = try #require(found.first)
      #expect(found.count == 1 && specimen.identifier == identifier && specimen.bytes == Data([1, 2, 3]))
      #expect(specimen.found == Date(timeIntervalSinceReferenceDate: 86_400))
      #expect(specimen.tags == ["fossil", "jurassic"])
      #expect(specimen.link?.absoluteString == "https://example.com/a" && specimen.serial == 1 << 40)
      let ratio = ShopModel.Specimen(context: context)
      ratio.ratio = 1.5  // the file's maximum is 1
      #expect(throws: StoreError.self) { try context.save() }
    }
  }

  @Test func aUniqueAttributeAndAConstraintOfOneStoreAlike() throws {
    let flagged = try ManagedObjectModel(Drift.Flagged.self)
    let constrained = try ManagedObjectModel(Drift.Constrained.self)
    #expect(flagged.versionHash != constrained.versionHash)
    #expect(flagged.schema.storesAlike(constrained.schema))
  }

  @Test func aRelationshipThatIsItsOwnInverseIsReadGeneratedAndBound() throws {
    let url = try ModelFiles.version(
      ModelFiles.model(
        """
        <entity name="Neighbour" representedClassName="Neighbour">
        <attribute name="name" attributeType="String" defaultValueString=""/>
        <relationship name="friends" optional="YES" toMany="YES" destinationEntity="Neighbour" inverseName="friends"/>
        </entity>
        """))
    let file = try XcodeModel(contentsOf: url)
    let source = try #require(try file.swiftSources().first?.text)
    #expect(source.contains("@Relationship(inverse: .itself) var friends: Set<Neighbour>"))
    // OwnInverseTests' Neighbour is that class.
    #expect(try file.mismatches(against: ManagedObjectModel(Neighbour.self)).isEmpty)
    #expect(try file.schema().storesAlike(ManagedObjectModel(Neighbour.self).schema))
  }

  @Test func keywordsAreQuotedInGeneratedCode() throws {
    let url = try ModelFiles.version(
      ModelFiles.model(
        #"<entity name="Rule"><attribute name="default" optional="YES" attributeType="String"/></entity>"#))
    let source = try #require(try XcodeModel(contentsOf: url).swiftSources().first)
    #expect(source.text.contains("@Attribute var `default`: String? = nil"))
  }

  @Test func everyKindOfMismatchIsReportedAtOnce() throws {
    let url = try ModelFiles.version(Self.driftModel)
    let classes: [ManagedObject.Type] = [
      Drift.Animal.self, Drift.Pet.self, Drift.House.self, Drift.Extra.self, Drift.Person.self,
    ]
    var caught: ModelFileError?
    do { _ = try ManagedObjectModel(contentsOf: url, classes: classes) } catch { caught = error as? ModelFileError }
    let error = try #require(caught)
    guard case .mismatches(let mismatches) = error.reason else {
      Issue.record("not a mismatch: \(error)")
      return
    }
    #expect(Set(mismatches.map(\.kind)) == Set(ModelMismatch.Kind.allCases))
    let described = Set(mismatches.map(\.description))
    for expected in [
      "Person.name: attributeType: String in the file, Integer 64 in the class",
      "Person.age: defaultValue: 1 in the file, 2 in the class",
      "Person.code: storageName: column code in the file, column kode (persistentName:) in the class",
      "Person.score: bounds: 0...10 in the file, no bounds in the class",
      "Person.pets: deleteRule: cascade in the file, nullify in the class",
      "Person.pets: ordered: ordered to-many in the file, to-many in the class",
      "Person.home: destination: Dwelling in the file, House in the class",
      "Person.buddy: cardinality: to-many in the file, to-one in the class",
      "Pet.owner: counts: optional, no counts in the file, required in the class",
      "Pet: parentEntity: Animal in the file, no parent in the class",
      "Lost: missingEntity: entity of class Lost in the file, no class in the class",
      "Person.scratch: transient: transient in the file, stored (@Attribute) in the class",
      "Person.age: renamingIdentifier: renamed from years in the file, no originalName in the class",
    ] {
      #expect(described.contains(expected), "missing: \(expected)")
    }
    #expect("\(error)".contains("\(mismatches.count) places"))
  }

  @Test func aBoundModelStoresFetchesAndQueries() throws {
    let model = try ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses)
    let container = try PersistentContainer.makeTest(model: model)
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      let ada = ShopModel.Shopper(context: context)
      ada.fullName = "Ada"
      ada.email = "ada@example.com"
      ada.loyalty = 4
      let bob = ShopModel.Shopper(context: context)
      bob.fullName = "Bob"
      let gift = ShopModel.GiftBasket(context: context)
      gift.shopper = ada
      let tea = ShopModel.Product(context: context)
      tea.title = "Tea"
      tea.price = Decimal(string: "3.50") ?? 0
      let green = ShopModel.Tag(context: context)
      green.name = "green"
      tea.tags = [green]
      let item = ShopModel.BasketItem(context: context)
      item.product = tea
      item.quantity = 2
      gift.items = [item]
      try context.save()
    }
    try context.performAndWait { context in
      let loyal = try context.fetch(
        FetchRequest<ShopModel.Shopper>(predicate: #Predicate { $0.loyalty >= 3 }, sortBy: [SortDescriptor(\.fullName)])
      )
      #expect(loyal.map(\.fullName) == ["Ada"])
      let gifts = try context.fetch(FetchRequest<ShopModel.GiftBasket>())
      #expect(gifts.first?.message == "With love")
      #expect(gifts.first?.items.first?.product?.tags.first?.name == "green")
      #expect(try context.count(for: FetchRequest<ShopModel.Basket>()) == 1)
    }
    // The file's rules hold: loyalty is 0...5, an email is unique, a basket needs its shopper.
    context.performAndWait { context in
      let shopper = ShopModel.Shopper(context: context)
      shopper.loyalty = 6
      #expect(throws: StoreError.self) { try context.save() }
      context.rollback()
      let twin = ShopModel.Shopper(context: context)
      twin.email = "ada@example.com"
      #expect(throws: StoreError.self) { try context.save() }
      context.rollback()
      _ = ShopModel.Basket(context: context)
      #expect(throws: StoreError.self) { try context.save() }
      context.rollback()
    }
  }
}
