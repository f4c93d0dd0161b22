import Foundation
import Spawning
import Testing

/// README.md's package manifests are manifests SwiftPM accepts: each ```swift block that starts
/// with `// swift-tools-version` is written into a scratch package (its URL dependency turned
/// into a path to this checkout, under a folder named `TypedStore` so that the identity is the
/// one a URL gives), with a file for each target, and SwiftPM must load its package graph,
/// which fails on a package or product name TypedStore does not have.
@Suite struct ReadmeManifestTests {
  static func manifests() throws -> [String] {
    let readme = try String(contentsOf: DocCodeBlockTests.root.appendingPathComponent("README.md"), encoding: .utf8)
    return DocCodeBlockTests.swiftBlocks(in: readme).map(\.code).filter { $0.hasPrefix("// swift-tools-version") }
  }

  @Test func theReadmeShowsAManifest() throws {
    let manifests = try Self.manifests()
    #expect(manifests.count == 1)
    #expect(manifests.allSatisfy { $0.contains(".product(name: \"TypedStoreTesting\", package: \"TypedStore\")") })
  }

  @Test(arguments: try manifests())
  func theManifestLoads(_ manifest: String) throws {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("readme-manifest-\(getpid())")
    try? FileManager.default.removeItem(at: scratch)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let package = scratch.appendingPathComponent("App")
    try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(
      at: scratch.appendingPathComponent("TypedStore"), withDestinationURL: DocCodeBlockTests.root)
    let local = manifest.replacingOccurrences(
      of: #"\.package\(url: "[^"]*", from: "[^"]*"\)"#, with: #".package(path: "../TypedStore")"#,
      options: .regularExpression)
    #expect(local != manifest, "the manifest depends on TypedStore by URL")
    try local.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
    for target in ["Sources/OrderService", "Tests/OrderServiceTests"] {
      let folder = package.appendingPathComponent(target)
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      try "".write(to: folder.appendingPathComponent("File.swift"), atomically: true, encoding: .utf8)
    }
    let process = POSIXProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["swift", "package", "--package-path", package.path, "show-dependencies", "--format", "json"]
    let run = try runCollectingOutput(process, seconds: 300)
    #expect(run.status == 0, "SwiftPM refused the manifest:\n\(run.stderr)")
    #expect(run.stdout.contains("\"typedstore\""))
  }
}
