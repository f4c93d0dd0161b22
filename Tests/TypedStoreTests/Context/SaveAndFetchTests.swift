import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

@Suite struct SaveAndFetchTests {
  @Test func savedObjectsAreFetchedBackInOrder() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await container.performBackgroundTask { context in
      let notes = ["b", "a", "c"].map { title in
        let note = Note(context: context)
        note.title = title
        return note
      }
      #expect(notes.allSatisfy { $0.managedID.isTemporaryID })
      try context.save()
      let pending = context.hasChanges
      #expect(!pending)
      return notes.map(\.managedID)
    }
    #expect(ids.allSatisfy { !$0.isTemporaryID })
    let titles = try await container.viewContext.perform { context in
      try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    }
    #expect(titles == ["a", "b", "c"])
  }
}
