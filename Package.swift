// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "TypedStore",
  products: [
    .library(name: "TypedStore", targets: ["TypedStore"]),
    .executable(name: "typedstore", targets: ["typedstore"]),
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
    .target(
      name: "TypedStore",
      dependencies: ["CSQLite"]
    ),
    .executableTarget(
      name: "typedstore",
      dependencies: ["TypedStore", "CZlib"],
      path: "Tools/typedstore"
    ),
    .testTarget(
      name: "TypedStoreTests",
      dependencies: ["TypedStore"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
