import Foundation
import TypedStore

// TypedStoreTesting: test support for packages that use TypedStore, a library product of its
// own so that the shipped library carries none of it. Depend on it from a test target only:
//
//   .testTarget(name: "NotesTests", dependencies: [
//     "Notes", .product(name: "TypedStoreTesting", package: "TypedStore"),
//   ])
//
// See docs/testing-support.md.

extension PersistentContainer {
  /// A throw-away container for a test: a store file in the temporary directory named after
  /// the calling test's file and function, with any file left by an earlier run removed first.
  ///
  /// ```swift
  /// import Testing
  /// import TypedStore
  /// import TypedStoreTesting
  ///
  /// @Test func savesANote() async throws {
  ///   let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Note.self))
  ///   try await container.performBackgroundTask { context in
  ///     Note(context: context).title = "Draft"
  ///     try context.save()
  ///   }
  /// }
  /// ```
  ///
  /// Each test gets its own file, so tests run in parallel without sharing a store; the file
  /// stays after the test (to look at when it fails) and is replaced by the next run.
  ///
  /// With `TYPEDSTORE_TEST_POSTGRESQL_URL` set to a PostgreSQL server's URL
  /// (`postgresql://user@host/database`), each store is a schema of that server instead, named
  /// after the test in the same way, so the same tests run against PostgreSQL; the process
  /// must link `TypedStorePostgreSQL`.
  ///
  /// - Parameters:
  ///   - model: The model of the store.
  ///   - variant: Distinguishes several stores of one test (or the cases of a parameterized
  ///     test, which share a function name).
  ///   - options: The store's options (history, read-only, busy timeout...).
  ///   - fileID: The calling test's file; leave the default.
  ///   - function: The calling test's function; leave the default.
  /// - Throws: `StoreError.storeInUse` when a container of an earlier test still holds the
  ///   file open (see `PersistentContainer.destroyPersistentStore(at:)`); any error of
  ///   `PersistentContainer.init(name:model:storeURL:options:)`.
  public static func makeTest(
    model: ManagedObjectModel, variant: String = "", options: StoreOptions = StoreOptions(),
    fileID: String = #fileID, function: String = #function
  ) throws -> PersistentContainer {
    let url = testStoreURL(variant: variant, fileID: fileID, function: function)
    try destroyPersistentStore(at: url)
    return try PersistentContainer(name: "Test", model: model, storeURL: url, options: options)
  }

  /// The file ``makeTest(model:variant:options:fileID:function:)`` uses for a test, without
  /// creating it (its folder, `typedstore-tests` in the temporary directory, is created).
  ///
  /// ```swift
  /// @Test func reopensTheStore() throws {
  ///   let url = PersistentContainer.testStoreURL()
  ///   _ = try PersistentContainer.makeTest(model: model)      // the same file
  ///   let reopened = try PersistentContainer(name: "Notes", model: model, storeURL: url)
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - variant: As for `makeTest`: one file per variant.
  ///   - fileID: The calling test's file; leave the default.
  ///   - function: The calling test's function; leave the default.
  public static func testStoreURL(
    variant: String = "", fileID: String = #fileID, function: String = #function
  ) -> URL {
    let raw = "\(fileID)-\(function)\(variant.isEmpty ? "" : "-\(variant)")"
    if let server = ProcessInfo.processInfo.environment["TYPEDSTORE_TEST_POSTGRESQL_URL"], !server.isEmpty,
      let url = URL(string: server + (server.contains("?") ? "&" : "?") + "schema=\(schemaName(for: raw))")
    {
      return url
    }
    let safe = String(raw.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-tests")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("\(safe).sqlite")
  }

  /// A schema name for the test `raw`: its last 28 letters and digits (the function's name),
  /// then a hash of the whole (a store's schema name has at most 48 characters, and two long
  /// names may share their start).
  private static func schemaName(for raw: String) -> String {
    let letters = String(
      raw.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }.suffix(28))
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: the same name in every run
    for byte in raw.utf8 {
      hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return "t_\(letters.lowercased())_\(String(hash, radix: 16))"
  }
}
