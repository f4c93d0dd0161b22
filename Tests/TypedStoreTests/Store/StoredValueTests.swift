import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct StoredValueTests {
  @Test(arguments: ["double", "optionalDouble", "float", "date"])
  func nanIsRefusedAtSaveNamingTheEntityAndAttributeAndNothingIsWritten(attribute: String) async throws {
    let container = try PersistentContainer.makeTest(model: allTypesModel, variant: attribute)
    let before = try container.currentHistoryToken
    let error = await container.newBackgroundContext().perform { context in
      let object = AllTypes(context: context)
      switch attribute {
      case "double": object.double = .nan
      case "optionalDouble": object.optionalDouble = .nan
      case "float": object.float = .nan
      default: object.date = Date(timeIntervalSinceReferenceDate: .nan)
      }
      let error = #expect(throws: StoreError.self) { try context.save() }
      #expect(context.hasChanges == true)
      return error
    }
    guard case .invalidValue(let entity, let name, _) = error else {
      Issue.record("expected invalidValue, got \(String(describing: error))")
      return
    }
    #expect(entity == "AllTypes")
    #expect(name == attribute)
    #expect(try container.currentHistoryToken == before)
  }

  @Test func nanIsRefusedByBatchRequestsToo() async throws {
    let container = try PersistentContainer.makeTest(model: allTypesModel)
    try await container.newBackgroundContext().perform { context in
      #expect(throws: StoreError.self) {
        try context.execute(BatchInsertRequest<AllTypes>(count: 2) { _, object in object.double = .nan })
      }
      _ = try context.execute(BatchInsertRequest<AllTypes>(count: 2) { _, _ in })
      #expect(throws: StoreError.self) {
        try context.execute(BatchUpdateRequest<AllTypes>(propertiesToUpdate: [.set(\.optionalDouble, .nan)]))
      }
      #expect(try context.count(for: FetchRequest<AllTypes>()) == 2)
    }
    #expect(try container.fetchHistory(HistoryRequest()).count == 1)
  }

  @Test func infinitiesAreStoredFaithfullyAndNegativeZeroReadsBackAsZero() async throws {
    let container = try PersistentContainer.makeTest(model: allTypesModel)
    let id = try await container.newBackgroundContext().perform { context in
      let object = AllTypes(context: context)
      object.double = -.infinity
      object.optionalDouble = .infinity
      object.float = -0.0
      object.optionalFloat = -0.0
      try context.save()
      return object.managedID
    }
    let values = try await container.newBackgroundContext().perform { context in
      let object = try context.existingObject(with: id)
      return [object.double, object.optionalDouble ?? 1, Double(object.float), Double(object.optionalFloat ?? 1)]
    }
    #expect(values[0] == -.infinity)
    #expect(values[1] == .infinity)
    // SQLite keeps a REAL with no fraction as an integer, so -0.0 comes back as 0.0 (equal
    // in Swift, but with the sign lost): documented in docs/model.md.
    #expect(values[2] == 0 && values[2].sign == .plus)
    #expect(values[3] == 0 && values[3].sign == .plus)
  }
}

@Suite struct StorePathTests {
  @Test func aDirectoryIsReportedAsADirectory() throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-a-directory.sqlite")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    #expect(throws: StoreError.isADirectory(path: url.path)) {
      try PersistentContainer(name: "Test", model: notesModel, storeURL: url)
    }
    #expect(throws: StoreError.isADirectory(path: url.path)) { try PersistentContainer.destroyPersistentStore(at: url) }
    #expect(FileManager.default.fileExists(atPath: url.path))
  }

  @Test func destroyingAStoreThisProcessHasOpenThrowsAndDeletesNothing() async throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: notesModel)
      url = container.persistentStore.url
      _ = try await saveNotes(["kept"], in: container)
      #expect(throws: StoreError.storeInUse(path: url.path)) { try PersistentContainer.destroyPersistentStore(at: url) }
      #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
      let titles = try await container.newBackgroundContext().perform { context in
        try context.fetch(FetchRequest<Note>()).map(\.title)
      }
      #expect(titles == ["kept"])
    }
    // Released: its connections are closed, and the store can go.
    try PersistentContainer.destroyPersistentStore(at: url)
    #expect(!FileManager.default.fileExists(atPath: url.path))
  }

  @Test func destroyingAStoreAnotherProcessHasOpenThrows() throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let holder = try SpawnedProcess(builtProduct("typedstore-test-writer"), ["hold", url.path, "2"])
    #expect(holder.waitForLine("ready"))
    #expect(throws: StoreError.storeInUse(path: url.path)) { try PersistentContainer.destroyPersistentStore(at: url) }
    holder.kill()
    try PersistentContainer.destroyPersistentStore(at: url)
    #expect(!FileManager.default.fileExists(atPath: url.path))
    #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
  }
}
