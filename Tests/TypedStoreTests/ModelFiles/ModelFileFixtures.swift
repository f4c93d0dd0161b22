import Foundation
import ShopModel
import Testing
import TypedStore

/// The model files the project keeps in Tests/Fixtures/ModelFiles, in the layout Xcode writes,
/// and helpers to write malformed ones.
enum ModelFiles {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/ModelFiles")
  static let shop = root.appendingPathComponent("Shop.xcdatamodeld")
  static let catalog = root.appendingPathComponent("Catalog.xcdatamodel")
  static let legacy = root.appendingPathComponent("Legacy.xcdatamodeld")

  /// The classes `typedstore model generate --public` wrote for Shop 3 (Tests/ShopModel).
  static let shopClasses: [ManagedObject.Type] = [
    ShopModel.Basket.self, ShopModel.BasketItem.self, ShopModel.GiftBasket.self, ShopModel.Product.self,
    ShopModel.Shopper.self, ShopModel.Tag.self,
  ]

  /// A new folder in the temporary directory.
  static func temporaryFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-model-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }

  /// A lone `.xcdatamodel` folder whose `contents` is `xml`.
  static func version(_ xml: String, name: String = "Model") throws -> URL {
    let url = try temporaryFolder().appendingPathComponent("\(name).xcdatamodel")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    try Data(xml.utf8).write(to: url.appendingPathComponent("contents"))
    return url
  }

  /// A `contents` document with `body` inside `<model>`.
  static func model(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="23231" \
    systemVersion="24A335" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
    \(body)
    </model>

    """
  }

  /// A copy of the Shop bundle in a temporary folder, to change.
  static func shopCopy() throws -> URL {
    let copy = try temporaryFolder().appendingPathComponent("Shop.xcdatamodeld")
    try FileManager.default.copyItem(at: shop, to: copy)
    return copy
  }

  /// The error reading `url` throws, or nil.
  static func readingError(_ url: URL) -> ModelFileError? {
    do {
      _ = try ManagedObjectModel(contentsOf: url)
      return nil
    } catch {
      return error as? ModelFileError
    }
  }
}
