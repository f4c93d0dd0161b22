import Foundation

/// A `.xcdatamodeld` bundle: the versions of a model drawn in Xcode, one `.xcdatamodel`
/// folder each, and the current one that `.xccurrentversion` names.
///
/// ```swift
/// let bundle = try XcodeModelBundle(contentsOf: URL(filePath: "Shop.xcdatamodeld"))
/// print(bundle.versionNames, bundle.currentVersionName ?? "-")   // ["Shop", "Shop 2"] Shop 2
/// let first = try bundle.model(named: "Shop")
/// ```
public struct XcodeModelBundle: Sendable {
  /// The bundle's location.
  public let url: URL
  /// The versions' names (folder names without `.xcdatamodel`), in name order with numbers
  /// compared as numbers (`Shop 2` before `Shop 10`). A bundle records no order of its own:
  /// a migration takes the order from its caller.
  public let versionNames: [String]
  /// The version `.xccurrentversion` names, or the only version when there is no such file.
  public let currentVersionName: String?

  /// Reads the bundle's list of versions and which is current.
  ///
  /// ```swift
  /// let bundle = try XcodeModelBundle(contentsOf: url)
  /// ```
  ///
  /// - Throws: ``ModelFileError`` for a folder with no versions, or a `.xccurrentversion`
  ///   that is malformed or names a version the bundle does not have.
  public init(contentsOf url: URL) throws(ModelFileError) {
    self.url = url
    let names: [String]
    do {
      names = try FileManager.default.contentsOfDirectory(atPath: url.path)
    } catch {
      throw ModelFileError(file: url.path, reason: .notAModel)
    }
    versionNames = names.filter { $0.hasSuffix(".xcdatamodel") }.map { String($0.dropLast(".xcdatamodel".count)) }
      .sorted { $0.compare($1, options: .numeric) == .orderedAscending }
    guard !versionNames.isEmpty else { throw ModelFileError(file: url.path, reason: .notAModel) }
    let marker = url.appendingPathComponent(".xccurrentversion")
    if let data = FileManager.default.contents(atPath: marker.path) {
      let named = try Self.currentVersion(in: data, file: marker.path)
      let name = named.hasSuffix(".xcdatamodel") ? String(named.dropLast(".xcdatamodel".count)) : named
      guard versionNames.contains(name) else {
        throw ModelFileError(file: marker.path, reason: .missingVersion(name))
      }
      currentVersionName = name
    } else {
      currentVersionName = versionNames.count == 1 ? versionNames.first : nil
    }
  }

  /// The version named `name` (a folder name without `.xcdatamodel`).
  ///
  /// ```swift
  /// let first = try bundle.model(named: "Shop")
  /// ```
  ///
  /// - Throws: ``ModelFileError`` for a name the bundle does not have, or a version that
  ///   cannot be read.
  public func model(named name: String) throws(ModelFileError) -> XcodeModel {
    guard versionNames.contains(name) else { throw ModelFileError(file: url.path, reason: .missingVersion(name)) }
    return try XcodeModel(versionAt: url.appendingPathComponent(name + ".xcdatamodel"))
  }

  /// The current version.
  ///
  /// ```swift
  /// let current = try bundle.currentModel()
  /// ```
  ///
  /// - Throws: ``ModelFileError/Reason/noCurrentVersion(_:)`` when the bundle has several
  ///   versions and no `.xccurrentversion`, or the version's own errors.
  public func currentModel() throws(ModelFileError) -> XcodeModel {
    guard let currentVersionName else {
      throw ModelFileError(file: url.path, reason: .noCurrentVersion(versionNames))
    }
    return try model(named: currentVersionName)
  }

  /// `_XCCurrentVersionName` from the property list `.xccurrentversion`.
  private static func currentVersion(in data: Data, file: String) throws(ModelFileError) -> String {
    let root: XMLNode
    do { root = try XMLReader.read(data) } catch {
      throw ModelFileError(file: file, line: error.line, reason: .malformedXML(error.message))
    }
    let entries = root.children(named: "dict").first?.children ?? []
    for (index, entry) in entries.enumerated()
    where entry.name == "key" && entry.text == "_XCCurrentVersionName" && index + 1 < entries.count {
      let value = entries[index + 1]
      guard value.name == "string", !value.text.isEmpty else { break }
      return value.text
    }
    throw ModelFileError(
      file: file, line: root.line, reason: .malformedXML("the property list has no _XCCurrentVersionName string"))
  }
}
