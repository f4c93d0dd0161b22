// swift-tools-version:6.0
// A package outside TypedStore that depends on it by path, as an application would.
// CI builds and runs it on a store file and on PostgreSQL (see .ci/run).
import PackageDescription

let package = Package(
  name: "ExternalClient",
  dependencies: [.package(name: "TypedStore", path: "../..")],
  targets: [
    .executableTarget(
      name: "ExternalClient",
      dependencies: [
        .product(name: "TypedStore", package: "TypedStore"),
        // Linked only: with TYPEDSTORE_POSTGRESQL_URL set, the same code opens postgresql://
        // stores (CI runs it both ways).
        .product(name: "TypedStorePostgreSQL", package: "TypedStore"),
        // The test support, as a user's test target depends on it.
        .product(name: "TypedStoreTesting", package: "TypedStore"),
      ])
  ],
  swiftLanguageModes: [.v6]
)
