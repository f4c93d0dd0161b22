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
}
