import Foundation

extension MigrationPlan {
  /// A plan through the versions of a `.xcdatamodeld` bundle, in the order given (a bundle
  /// records none), with a stage between each pair (`.lightweight` each, by default). The
  /// last version is the model the store is opened with, bound to `classes` and checked
  /// against its file; the earlier ones are read from the bundle without classes, with their
  /// defaults and renaming identifiers (`elementID`), so each step is inferred as between
  /// class models; an attribute the classes declare as an enum (stored raw) is taken as raw in
  /// the earlier versions too. A store made by classes of an earlier version is at that version when it
  /// stores alike (`ModelSchema.storesAlike`): the file lists properties in another order.
  ///
  /// ```swift
  /// let plan = try MigrationPlan(
  ///   bundle: URL(filePath: "Shop.xcdatamodeld"), order: ["Shop", "Shop 2", "Shop 3"],
  ///   classes: [Shopper.self, Basket.self, GiftBasket.self, BasketItem.self, Product.self, Tag.self])
  /// let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: storeURL)
  /// ```
  ///
  /// A custom stage's `willMigrate` gets a context of a version read from the file: it has no
  /// classes, so it cannot fetch objects; `didMigrate` of the last stage has the classes.
  ///
  /// - Parameters:
  ///   - bundle: the `.xcdatamodeld` bundle.
  ///   - order: every version to go through, oldest first, by name (`Shop 2`); the last must be
  ///     the bundle's current version.
  ///   - classes: the classes of the last version.
  ///   - stages: one stage between each pair; nil for `.lightweight` everywhere.
  /// - Throws: ``ModelFileError`` for a version that cannot be read or classes that differ
  ///   from the last version; ``MigrationError/invalidPlan(reason:)`` for an order that does
  ///   not end at the current version.
  public init(
    bundle: URL, order: [String], classes: [ManagedObject.Type], stages: [MigrationStage]? = nil
  ) throws {
    let versionsBundle = try XcodeModelBundle(contentsOf: bundle)
    guard let last = order.last else { throw MigrationError.invalidPlan(reason: "it has no versions") }
    guard last == versionsBundle.currentVersionName else {
      throw MigrationError.invalidPlan(
        reason: "its last version is \(last), and the bundle's current version is "
          + (versionsBundle.currentVersionName ?? "not named (no .xccurrentversion)"))
    }
    let current = try ManagedObjectModel(xcodeModel: versionsBundle.model(named: last), classes: classes)
    var versions: [Version] = []
    for name in order.dropLast() {
      // An attribute the classes store raw (an enum) was stored raw by earlier versions too.
      versions.append(
        Version(name, try ManagedObjectModel(xcodeModel: versionsBundle.model(named: name), storageLike: current)))
    }
    versions.append(Version(last, current))
    self.init(versions: versions, stages: stages ?? Array(repeating: .lightweight, count: max(order.count - 1, 0)))
  }
}
