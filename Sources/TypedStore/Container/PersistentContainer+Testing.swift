import Foundation

extension PersistentContainer {
  /// A throw-away container for a test: a store file in the temporary directory named after
  /// the calling test's file and function, with any file left by an earlier run removed first.
  ///
  /// ```swift
  /// @Test func savesANote() async throws {
  ///   let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Note.self))
  /// }
  /// ```
  ///
  /// - Parameter variant: distinguishes several stores of one test (or the cases of a
  ///   parameterized test, which share a function name).
  public static func makeTest(
    model: ManagedObjectModel, variant: String = "", options: StoreOptions = StoreOptions(),
    fileID: String = #fileID, function: String = #function
  ) throws -> PersistentContainer {
    let url = testStoreURL(variant: variant, fileID: fileID, function: function)
    try destroyPersistentStore(at: url)
    return try PersistentContainer(name: "Test", model: model, storeURL: url, options: options)
  }

  /// The file `makeTest` uses for a test, without creating it.
  public static func testStoreURL(
    variant: String = "", fileID: String = #fileID, function: String = #function
  ) -> URL {
    let raw = "\(fileID)-\(function)\(variant.isEmpty ? "" : "-\(variant)")"
    let safe = String(raw.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-tests")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("\(safe).sqlite")
  }
}
