import Foundation
import Testing
import TypedStore
import TypedStoreTesting

/// The examples of docs/testing-support.md, as a user's test target writes them.
@Suite struct TestingSupportDocTests {
  @Test func savesANote() async throws {
    let container = try PersistentContainer.makeTest(model: ManagedObjectModel(Folder.self, Note.self))
    try await container.performBackgroundTask { context in
      Note(context: context).title = "Draft"
      try context.save()
    }
    let count = try await container.viewContext.perform { context in
      try context.count(for: FetchRequest<Note>())
    }
    #expect(count == 1)
  }

  @Test func testStoreURLNamesTheFileMakeTestOpened() throws {
    let model = try ManagedObjectModel(Folder.self, Note.self)
    let first = try PersistentContainer.makeTest(model: model, variant: "first")
    let url = PersistentContainer.testStoreURL(variant: "first")
    #expect(first.persistentStore.url.lastPathComponent == url.lastPathComponent)
  }

  /// With `TYPEDSTORE_TEST_POSTGRESQL_URL` set (`Tools/test-postgresql.sh`), each store is a
  /// schema of that server: one per test and variant, where `testStoreURL` says.
  @Test(.enabled(if: testsRunOnPostgreSQL)) func withAServerInTheEnvironmentEachStoreIsASchemaOfIt() async throws {
    let model = try ManagedObjectModel(Folder.self, Note.self)
    let first = try PersistentContainer.makeTest(model: model, variant: "first")
    let second = try PersistentContainer.makeTest(model: model, variant: "second")
    #expect(first.persistentStore.url.scheme == "postgresql")
    #expect(first.persistentStore.url == PersistentContainer.testStoreURL(variant: "first"))
    #expect(first.persistentStore.url != second.persistentStore.url)
    try await first.performBackgroundTask { context in
      Note(context: context).title = "Draft"
      try context.save()
    }
    #expect(try second.newModelContext().count(for: FetchRequest<Note>()) == 0)
    #expect(try first.newModelContext().count(for: FetchRequest<Note>()) == 1)
  }
}
