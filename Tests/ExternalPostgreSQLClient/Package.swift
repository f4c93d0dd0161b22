// swift-tools-version:6.0
// A package outside TypedStore that opens a PostgreSQL store, as an application would: it
// depends on the TypedStorePostgreSQL product and names nothing of it; only the store's URL
// differs from a file's. CI builds and runs it against a throwaway server (see .ci/run).
import PackageDescription

let package = Package(
  name: "ExternalPostgreSQLClient",
  dependencies: [.package(name: "TypedStore", path: "../..")],
  targets: [
    .executableTarget(
      name: "ExternalPostgreSQLClient",
      dependencies: [
        .product(name: "TypedStore", package: "TypedStore"),
        .product(name: "TypedStorePostgreSQL", package: "TypedStore"),
      ])
  ],
  swiftLanguageModes: [.v6]
)
