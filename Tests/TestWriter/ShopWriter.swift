import Foundation
import ShopModel
import TypedStore

// The Shop model drawn in Xcode (Tests/Fixtures/ModelFiles/Shop.xcdatamodeld), migrated by a
// plan read from its bundle: `ModelFileMigrationTests` races processes through it.

/// The bundle, found from this file's place in the package.
let shopBundle = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .appendingPathComponent("Fixtures/ModelFiles/Shop.xcdatamodeld")

/// The classes of the bundle's current version.
let shopClasses: [ManagedObject.Type] = [
  Basket.self, BasketItem.self, GiftBasket.self, Product.self, Shopper.self, Tag.self,
]

/// `shop-plan <store> <author> <start, ms since 1970>`: as `openAndSave`, opening the store
/// with the bundle's plan (Shop → Shop 2 → Shop 3) and saving one product named `author`.
func shopPlanOpen(_ arguments: [String]) {
  openAndSave(arguments, command: "shop-plan") { url in
    var options = StoreOptions()
    options.busyTimeout = .seconds(30)
    let plan = try MigrationPlan(bundle: shopBundle, order: ["Shop", "Shop 2", "Shop 3"], classes: shopClasses)
    return try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url, options: options)
  } save: { context, author in
    let product = Product(context: context)
    product.title = author
    try context.save()
    return product.managedID.primaryKey ?? -1
  }
}

/// `shopper-move <store> <email> <city>`: opens the Shop store with the bundle's current
/// version bound to its classes, and sets the city of the shopper with that email (one element
/// of its composite `address`), leaving the other elements as they are.
func shopperMove(_ arguments: [String]) {
  guard arguments.count == 4 else { fail("usage: shopper-move <store> <email> <city>", code: 64) }
  do {
    let model = try ManagedObjectModel(contentsOf: shopBundle, classes: shopClasses)
    let container = try PersistentContainer(
      name: "Shop", model: model, storeURL: storeURL(arguments[1]))
    let email = arguments[2]
    try container.viewContext.performAndWait { context in
      context.transactionAuthor = "mover"
      let shoppers = try context.fetch(FetchRequest<Shopper>(predicate: #Predicate { $0.email == email }))
      guard let shopper = shoppers.first else { fail("no shopper \(email)", code: 66) }
      var address = shopper.address
      address.city = arguments[3]
      shopper.address = address
      try context.save()
    }
    say("moved")
  } catch {
    fail("\(error)", code: 1)
  }
}
