// swift-tools-version:6.0
// A package outside TypedStore that depends on it by path, as an application would.
// CI builds and runs it (see .ci/run).
import PackageDescription

let package = Package(
  name: "ExternalClient",
  dependencies: [.package(name: "TypedStore", path: "../..")],
  targets: [
    .executableTarget(
      name: "ExternalClient",
      dependencies: [
        .product(name: "TypedStore", package: "TypedStore"),
        // The test support, as a user's test target depends on it.
        .product(name: "TypedStoreTesting", package: "TypedStore"),
      ])
  ],
  swiftLanguageModes: [.v6]
)
