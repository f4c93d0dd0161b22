import Foundation
import Testing
import TypedStore

/// Reading Xcode model files: bundles, versions, every element Xcode writes, and the errors
/// for what cannot be read or honoured (docs/apple-models.md).
@Suite struct ModelFileReadingTests {
  @Test func aBundleOpensAtTheVersionItsMarkerNames() throws {
    let bundle = try XcodeModelBundle(contentsOf: ModelFiles.shop)
    #expect(bundle.versionNames == ["Shop", "Shop 2", "Shop 3"])
    #expect(bundle.currentVersionName == "Shop 3")
    let file = try XcodeModel(contentsOf: ModelFiles.shop)
    #expect(file.name == "Shop 3")
    #expect(file.versionIdentifier == "3")
    #expect(file.entities.map(\.name) == ["Basket", "BasketItem", "GiftBasket", "Product", "Shopper", "Tag"])
    let model = try ManagedObjectModel(contentsOf: ModelFiles.shop)
    #expect(model.entities.map(\.name) == ["Basket", "BasketItem", "Product", "Shopper", "Tag", "GiftBasket"])
  }

  @Test func theCurrentVersionNeedNotBeTheNewest() throws {
    let copy = try ModelFiles.shopCopy()
    let marker = copy.appendingPathComponent(".xccurrentversion")
    let text = try String(contentsOf: marker, encoding: .utf8).replacingOccurrences(of: "Shop 3", with: "Shop 2")
    try Data(text.utf8).write(to: marker)
    #expect(try XcodeModel(contentsOf: copy).name == "Shop 2")
    #expect(try ManagedObjectModel(contentsOf: copy).entity(named: "Tag") == nil)
  }

  @Test func withoutAMarkerTheOnlyVersionIsCurrentAndSeveralAreAnError() throws {
    let copy = try ModelFiles.shopCopy()
    try FileManager.default.removeItem(at: copy.appendingPathComponent(".xccurrentversion"))
    let error = try #require(ModelFiles.readingError(copy))
    #expect(error.reason == .noCurrentVersion(["Shop", "Shop 2", "Shop 3"]))
    #expect(error.file == copy.path)
    for name in ["Shop 2", "Shop 3"] {
      try FileManager.default.removeItem(at: copy.appendingPathComponent("\(name).xcdatamodel"))
    }
    #expect(try XcodeModel(contentsOf: copy).name == "Shop")
  }

  @Test func aMarkerNamingNoVersionIsAnError() throws {
    let copy = try ModelFiles.shopCopy()
    let marker = copy.appendingPathComponent(".xccurrentversion")
    let text = try String(contentsOf: marker, encoding: .utf8).replacingOccurrences(of: "Shop 3", with: "Shop 9")
    try Data(text.utf8).write(to: marker)
    let error = try #require(ModelFiles.readingError(copy))
    #expect(error.reason == .missingVersion("Shop 9"))
    #expect(error.file == marker.path)
  }

  @Test func everythingTheShopModelSaysIsRead() throws {
    let file = try XcodeModel(contentsOf: ModelFiles.shop)
    let shopper = try #require(file.entities.first { $0.name == "Shopper" })
    #expect(shopper.userInfo == ["owner": "accounts & billing"])
    #expect(shopper.uniquenessConstraints == [["email"]])
    let fullName = try #require(shopper.attributes.first { $0.name == "fullName" })
    #expect(fullName.renamingIdentifier == "name")
    let loyalty = try #require(shopper.attributes.first { $0.name == "loyalty" })
    #expect(loyalty.attributeType == .integer16 && loyalty.minimum == "0" && loyalty.maximum == "5")
    let cache = try #require(shopper.attributes.first { $0.name == "cache" })
    #expect(cache.isTransient && cache.attributeType == nil && cache.typeName == nil)
    let gift = try #require(file.entities.first { $0.name == "GiftBasket" })
    #expect(
      gift.parentEntity == "Basket" && gift.representedClassName == ".GiftBasket" && gift.className == "GiftBasket")
    let product = try #require(file.entities.first { $0.name == "Product" })
    #expect(product.className == "Product")
    #expect(product.attributes.first { $0.name == "title" }?.isIndexed == true)
    let items = try #require(file.entities.first { $0.name == "Basket" }?.relationships.first { $0.name == "items" })
    #expect(items.kind == .ordered && items.deleteRule == .cascade && items.destination == "BasketItem")
    let shopperLink = try #require(
      file.entities.first { $0.name == "Basket" }?.relationships.first { $0.name == "shopper" })
    #expect(shopperLink.kind == .toOne && shopperLink.isRequired)
    #expect(file.entities.first { $0.name == "BasketItem" }?.uniquenessConstraints == [["basket", "product"]])
    #expect(file.fetchRequestTemplates == [.init(name: "LoyalShoppers", entity: "Shopper", predicate: "loyalty >= 3")])
    #expect(file.configurations["Default"]?.count == 6)
    #expect(file.ignored.contains { $0.hasPrefix("configuration Default") })
  }

  @Test func theSchemaIsLaidOutAsClassesLayItOut() throws {
    let schema = try XcodeModel(contentsOf: ModelFiles.shop).schema()
    let basket = try #require(schema.entities.first { $0.name == "Basket" })
    #expect(basket.relationships?.first { $0.name == "shopper" }?.column == "shopper")
    #expect(basket.relationships?.first { $0.name == "shopper" }?.required == true)
    let item = try #require(schema.entities.first { $0.name == "BasketItem" })
    #expect(item.relationships?.first { $0.name == "basket" }?.orderColumn == "_basket_order")
    #expect(item.uniquenessConstraints == [["basket", "product"]])
    let product = try #require(schema.entities.first { $0.name == "Product" })
    #expect(product.relationships?.first { $0.name == "tags" }?.joinTable == "_join_Product_tags")
    #expect(product.attributes.first { $0.name == "title" }?.indexed == true)
    let shopper = try #require(schema.entities.first { $0.name == "Shopper" })
    #expect(
      shopper.attributes.map(\.name) == [
        "address.city", "address.geo.latitude", "address.geo.longitude", "address.postcode", "address.street", "email",
        "fullName", "joined", "loyalty",
      ])  // not the transient; the composite as its elements
    #expect(shopper.attributes.first { $0.name == "address.geo.latitude" }?.column == "address_geo_latitude")
    #expect(shopper.attributes.first { $0.name == "address.city" }?.preservedOnDeletion == true)
    #expect(shopper.attributes.first { $0.name == "email" }?.unique == true)
    #expect(shopper.attributes.first { $0.name == "loyalty" }?.bounds == "0...5")
    #expect(schema.entities.first { $0.name == "GiftBasket" }?.table == "Basket")
  }

  @Test func everyAttributeTypeMapsToItsStoredType() throws {
    let file = try XcodeModel(contentsOf: ModelFiles.catalog)
    #expect(file.name == "Catalog")
    let attributes = try #require(file.entities.first?.attributes)
    var types: [String: AttributeType] = [:]
    for attribute in attributes { types[attribute.name] = attribute.attributeType }
    #expect(
      types == [
        "active": .boolean, "bytes": .binaryData, "code": .integer16, "count": .integer32, "found": .date,
        "identifier": .uuid, "label": .string, "link": .uri, "mass": .double, "price": .decimal, "ratio": .float,
        "scratch": .string, "serial": .integer64, "tags": .codable,
      ])
    #expect(attributes.first { $0.name == "serial" }?.isIndexed == true)  // the older compoundIndexes form
    #expect(attributes.first { $0.name == "count" }?.isIndexed == true)
    #expect(attributes.first { $0.name == "label" }?.defaultValue == "unnamed \"specimen\"")
    #expect(attributes.first { $0.name == "label" }?.isPreservedOnDeletion == true)
    #expect(file.entities.first?.userInfo == ["table": "specimens"])
    #expect(file.ignored.contains { $0.contains("allowsExternalBinaryDataStorage") })
    let schema = try file.schema()
    #expect(schema.entities.first?.attributes.first { $0.name == "tags" }?.storage == .codable)
    #expect(schema.entities.first?.attributes.first { $0.name == "ratio" }?.bounds == "0.0...1.0")
  }

  @Test func aModelSavedByXcode3IsRefusedByName() throws {
    let error = try #require(ModelFiles.readingError(ModelFiles.legacy))
    #expect(error.reason == .preXcode4Format)
    #expect(error.file.hasSuffix("Legacy.xcdatamodel"))
    #expect("\(error)".contains("Xcode 3"))
  }

  @Test func aFolderThatIsNoModelIsRefused() throws {
    let folder = try ModelFiles.temporaryFolder()
    #expect(ModelFiles.readingError(folder)?.reason == .notAModel)
    #expect(ModelFiles.readingError(folder.appendingPathComponent("Missing.xcdatamodeld"))?.reason == .notAModel)
  }
}
