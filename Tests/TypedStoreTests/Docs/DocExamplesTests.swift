import Foundation
import Testing
import TypedStore
import TypedStoreTesting

// The examples of README.md and docs/, compiled and run. The model declarations of
// docs/model.md are the fixtures in Fixtures.swift (Folder, Note, Checklist, Status, Options).

// docs/container-and-contexts.md, "Model actors": the example is `NoteImporter` in
// Context/ContextTests.swift.

@Suite struct DocExamplesTests {
  @Test func readmeExample() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let container = try PersistentContainer(
      name: "Notes", model: ManagedObjectModel(Folder.self, Note.self, Checklist.self), storeURL: url)

    let id: ManagedID<Note> = try await container.performBackgroundTask { context in
      let note = Note(context: context)
      note.title = "Draft"
      try context.save()
      return note.managedID
    }

    let title = try await container.viewContext.perform { context in
      try context.existingObject(with: id).title  // a Note: no cast
    }
    #expect(title == "Draft")
  }

  @Test func containerAndContextsExamples() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)

    try await container.performBackgroundTask { context in
      context.transactionAuthor = "importer"
      let note = Note(context: context)
      note.title = "Draft"
      try context.save()
    }

    let count = try await container.viewContext.perform { context in
      try context.count(for: FetchRequest<Note>())
    }
    #expect(count == 1)

    let context = container.newBackgroundContext()
    let titles = try context.performAndWait { context in
      try context.fetch(FetchRequest<Note>()).map(\.title)
    }
    #expect(titles == ["Draft"])

    let (notes, total, ids) = try await context.perform { context in
      var request = FetchRequest<Note>(sortBy: [SortDescriptor(\.createdAt, order: .reverse)])
      request.fetchLimit = 20
      let notes = try context.fetch(request)
      let total = try context.count(for: FetchRequest<Note>())
      let ids = try context.fetchObjectIDs(for: request)
      return (notes.count, total, ids)
    }
    #expect(notes == 1 && total == 1 && ids.count == 1)

    let imported = try await NoteImporter(container: container).importTitles(["a", "b"])
    #expect(imported.count == 2)
  }

  @Test func typedIDExamples() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let id = try await container.performBackgroundTask { context in
      let note = Note(context: context)
      let id: ManagedID<Note> = note.managedID
      #expect(id.isTemporaryID)
      try context.save()
      let again: Note = try context.existingObject(with: note.managedID)  // no cast
      #expect(again === note)
      return note.managedID
    }
    let uri = id.uriRepresentation
    #expect(try ManagedID<Note>(validating: uri) == id)
    let any: AnyManagedID = id.untyped
    #expect(any.typed(as: Note.self) == id)
    #expect(any.typed(as: Folder.self) == nil)
  }

  @Test func modelExamples() throws {
    let model = try ManagedObjectModel(Folder.self, Note.self, Checklist.self)
    #expect(model.entity(for: Checklist.self)?.superentityName == "Note")
    let json = String(decoding: model.jsonRepresentation, as: UTF8.self)
    #expect(json.contains("\"column\":\"created\""))
    let schema = try JSONDecoder().decode(ModelSchema.self, from: model.jsonRepresentation)
    #expect(schema.entities.count == 3)
  }

  @Test func queriesExamples() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await container.performBackgroundTask { context in
      for (title, status) in [
        ("a draft", Status.draft), ("draft two", .published), ("2026 plan", .draft), ("", .draft),
      ] {
        let note = Note(context: context)
        note.title = title
        note.status = status
      }
      try context.save()
      let published = Status.published
      let drafts = try context.fetch(
        FetchRequest<Note>(
          predicate: #Predicate { $0.title.contains("draft") && $0.status != published },
          sortBy: [SortDescriptor(\.createdAt, order: .reverse)]))
      #expect(drafts.map(\.title) == ["a draft"])
      let count = try context.count(for: FetchRequest<Note>(predicate: #Predicate { $0.createdAt == nil }))
      #expect(count == 4)
      let ids = try context.fetchObjectIDs(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "" }))
      #expect(ids.count == 1)
      var request = FetchRequest<Note>()
      try request.setPredicate(#Predicate { $0.title.starts(with: "2026") })
      #expect(try context.fetch(request).map(\.title) == ["2026 plan"])
      var exported: [String] = []
      for note in try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]), batchSize: 2) {
        exported.append(note.title)
      }
      #expect(exported == ["", "2026 plan", "a draft", "draft two"])
      let publishedOnly = FetchRequest<Note>(predicate: #Predicate { $0.status == published })
      #expect(try context.aggregate(.count, for: publishedOnly) == 1)
      #expect(try context.aggregate(.max(\.createdAt), for: publishedOnly) == nil)
      let perStatus = try context.aggregate(.count, for: FetchRequest<Note>(), groupedBy: \.status)
      #expect(perStatus == [.draft: 3, .published: 1])
    }
  }
}
