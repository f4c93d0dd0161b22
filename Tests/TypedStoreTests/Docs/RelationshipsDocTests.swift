import Foundation
import Testing
import TypedStore
import TypedStoreTesting

/// docs/relationships.md's model, as written there (in a namespace: the fixtures already have
/// a Folder and a Note), and its examples run.
enum RelationshipsDoc {
  final class Folder: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(deleteRule: .cascade) var notes: Set<Note>
  }

  final class Note: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: \Folder.notes, deleteRule: .nullify) var folder: Folder?
    @Relationship() var tags: Set<Tag>
    @Relationship(deleteRule: .cascade) var attachments: [Attachment]  // ordered
  }

  final class Tag: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: \Note.tags) var notes: Set<Note>  // many-to-many
  }

  final class Attachment: ManagedObject {
    @Attribute var path: String = ""
    @Relationship(inverse: \Note.attachments) var note: Note?
  }
}

@Suite struct RelationshipsDocTests {
  @Test func theRelationshipsPageExamplesRunAsWritten() async throws {
    typealias Folder = RelationshipsDoc.Folder
    typealias Note = RelationshipsDoc.Note
    let model = try ManagedObjectModel(
      RelationshipsDoc.Folder.self, RelationshipsDoc.Note.self, RelationshipsDoc.Tag.self,
      RelationshipsDoc.Attachment.self)
    let container = try PersistentContainer.makeTest(model: model)
    let inboxID = try await container.newBackgroundContext().perform { context in
      let inbox = Folder(context: context)
      inbox.name = "Inbox"
      let (note, a, b) = (Note(context: context), Note(context: context), Note(context: context))
      note.folder = inbox
      #expect(inbox.notes.contains(note))
      inbox.notes.remove(note)
      #expect(note.folder == nil)
      inbox.notes = [a, b]
      #expect(a.folder === inbox && b.folder === inbox)
      inbox.$notes.insert(note)
      let file = RelationshipsDoc.Attachment(context: context)
      note.$attachments.append(file)
      note.$attachments.insert(file, at: 0)
      #expect(note.attachments == [file] && file.note === note)
      try context.save()
      return inbox.managedID
    }
    try await container.newBackgroundContext().perform { context in
      var request = FetchRequest<Folder>()
      request.relationshipKeyPathsForPrefetching = [\.notes]
      let folders = try context.fetch(request)
      #expect(folders.first?.notes.count == 3)
      let inbox = try context.existingObject(with: inboxID)
      let inInbox = try context.fetch(FetchRequest<Note>(predicate: #Predicate { $0.folder?.name == "Inbox" }))
      #expect(inInbox.count == 3)
      context.delete(inbox)  // cascade: the notes and their attachments go too
      try context.save()
      #expect(try context.count(for: FetchRequest<Note>()) == 0)
      #expect(try context.count(for: FetchRequest<RelationshipsDoc.Attachment>()) == 0)
    }
  }
}
