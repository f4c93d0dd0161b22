// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "TypedStore",
  products: [
    .library(name: "TypedStore", targets: ["TypedStore"]),
    // Test support for packages that use TypedStore (a store per test): for test targets.
    .library(name: "TypedStoreTesting", targets: ["TypedStoreTesting"]),
    // PostgreSQL stores (a preview, docs/postgresql.md): linking it lets a container open a
    // postgresql:// store URL. It links libpq; TypedStore alone never does.
    .library(name: "TypedStorePostgreSQL", targets: ["TypedStorePostgreSQL"]),
    .executable(name: "typedstore", targets: ["typedstore"]),
    .executable(name: "typedstore-bench", targets: ["typedstore-bench"]),
  ],
  targets: [
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),
    .systemLibrary(
      name: "CZlib",
      pkgConfig: "zlib",
      providers: [.apt(["zlib1g-dev"])]
    ),
    // libpq, for the PostgreSQL engine (issue 27, a preview): only what links
    // TypedStorePostgreSQL needs it; TypedStore alone never does.
    .systemLibrary(
      name: "CLibPQ",
      pkgConfig: "libpq",
      providers: [.apt(["libpq-dev"])]
    ),
    .target(
      name: "TypedStore",
      dependencies: ["CSQLite"]
    ),
    .target(
      name: "TypedStoreTesting",
      dependencies: ["TypedStore"]
    ),
    // The PostgreSQL engine (issue 27): a store in a schema, its connections, write
    // transactions, history and wake-ups, found by a container for postgresql:// URLs.
    .target(
      name: "TypedStorePostgreSQL",
      dependencies: ["TypedStore", "CLibPQ"]
    ),
    // The command-line parser of the tool: small, ours, shaped like swift-argument-parser.
    .target(
      name: "ArgumentParsing",
      path: "Tools/ArgumentParsing"
    ),
    // Child processes without Foundation's Process.run(), which crashes at random on Linux
    // (Tools/Spawning/POSIXProcess.swift says why): for the tools and the tests.
    .target(
      name: "Spawning",
      path: "Tools/Spawning"
    ),
    .executableTarget(
      name: "typedstore",
      // TypedStorePostgreSQL: every command that reads a store opens a postgresql:// URL too.
      dependencies: ["TypedStore", "TypedStorePostgreSQL", "ArgumentParsing", "Spawning", "CZlib"],
      path: "Tools/typedstore"
    ),
    .executableTarget(
      name: "typedstore-bench",
      dependencies: ["TypedStore", "TypedStorePostgreSQL", "ArgumentParsing", "Spawning", "CSQLite", "CLibPQ"],
      path: "Tools/typedstore-bench"
    ),
    // A second process for the multi-process tests.
    .executableTarget(
      name: "typedstore-test-writer",
      dependencies: ["TypedStore", "ShopModel", "CSQLite", "TypedStorePostgreSQL"],
      path: "Tests/TestWriter"
    ),
    // docs/merging.md's two-process example, built and run by the tests.
    .executableTarget(
      name: "typedstore-merging-example",
      dependencies: ["TypedStore"],
      path: "Examples/Merging"
    ),
    // docs/merging.md's order service: exactly-once effects, an outbox, SIGTERM; the tests
    // kill it and start it again.
    .executableTarget(
      name: "typedstore-order-service",
      dependencies: ["TypedStore"],
      path: "Examples/OrderService"
    ),
    // The classes `typedstore model generate --public` writes for Tests/Fixtures/ModelFiles/
    // Shop.xcdatamodeld and Catalog.xcdatamodel, compiled as written; the tests generate them
    // again and compare.
    .target(
      name: "ShopModel",
      dependencies: ["TypedStore"],
      path: "Tests/ShopModel"
    ),
    .testTarget(
      name: "TypedStoreTests",
      dependencies: [
        "TypedStore", "TypedStoreTesting", "ArgumentParsing", "Spawning", "typedstore", "typedstore-test-writer",
        "typedstore-bench", "typedstore-merging-example", "typedstore-order-service", "ShopModel",
        "TypedStorePostgreSQL",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
