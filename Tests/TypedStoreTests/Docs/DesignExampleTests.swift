import Foundation
import Testing
import TypedStore
import TypedStoreTesting

/// The model of ../shared/DESIGN.md ("A model, as a user writes it"), with the one change Swift
/// requires: `Folder.notes` does not name its inverse, because two property wrappers whose
/// arguments name each other's key paths are a circular reference (`Note.folder` names it, as
/// in SwiftData). Everything else is as written there.
enum DesignExample {
  final class Folder: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(deleteRule: .cascade) var notes: Set<Note>
  }

  final class Note: ManagedObject {
    @Attribute var title: String = ""
    @Attribute(persistentName: "created") var createdAt: Date? = nil
    @Attribute var status: Status = .draft  // RawRepresentable, stored raw
    @Attribute(.codable) var options: Options? = nil  // Codable, stored as JSON
    @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
    @Relationship(inverse: \Folder.notes, deleteRule: .nullify) var folder: Folder?
  }
}

@Suite struct DesignExampleTests {
  @Test func theDesignModelAndItsQueryRunAsWritten() async throws {
    typealias Folder = DesignExample.Folder
    typealias Note = DesignExample.Note
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    let container = try PersistentContainer(
      name: "Notes", model: ManagedObjectModel(Folder.self, Note.self),
      storeURL: url)  // WAL, history on, by default

    let saved = try await container.performBackgroundTask { context in
      context.transactionAuthor = "importer"
      let note = Note(context: context)
      note.title = "Draft"
      try context.save()
      let id: ManagedID<Note> = note.managedID  // typed, Sendable, Hashable
      return id
    }

    // Two more drafts in an inbox (one older), one elsewhere, and a note with another title.
    try await container.performBackgroundTask { context in
      let inbox = Folder(context: context)
      inbox.name = "Inbox"
      let archive = Folder(context: context)
      archive.name = "Archive"
      for (title, folder, day) in [
        ("Draft", inbox, 1.0), ("Draft", inbox, 2.0), ("Draft", archive, 3.0), ("Done", inbox, 4.0),
      ] {
        let note = Note(context: context)
        note.title = title
        note.folder = folder
        note.createdAt = Date(timeIntervalSince1970: day * 86_400)
      }
      try context.existingObject(with: saved).folder = archive
      try context.save()
    }

    try await container.newBackgroundContext().perform { context in
      let drafts = try context.fetch(
        FetchRequest<Note>(
          predicate: #Predicate { $0.title == "Draft" && $0.folder?.name == "Inbox" },
          sortBy: [SortDescriptor(\.createdAt, order: .reverse)]))
      #expect(drafts.map { $0.createdAt?.timeIntervalSince1970 } == [2 * 86_400, 86_400])
      #expect(drafts.allSatisfy { $0.folder?.name == "Inbox" })

      // The cascade from a folder deletes its notes, with their history.
      let inbox = try #require(
        try context.fetch(FetchRequest<Folder>(predicate: #Predicate { $0.name == "Inbox" })).first)
      context.delete(inbox)
      try context.save()
      #expect(try context.count(for: FetchRequest<Note>()) == 2)
    }
    let history = try container.fetchHistory(HistoryRequest())
    let deletes = history.last?.changes.filter { $0.changeType == .delete } ?? []
    #expect(deletes.count == 4)  // the folder and its three notes
  }
}
