import Foundation
import TypedStore

// The two-entity model of DESIGN.md, attributes only (relationships arrive later).

enum Status: String, Codable, Sendable { case draft, published }
struct Options: Codable, Sendable { var pinned = false }

final class Folder: ManagedObject {
  @Attribute var name: String = ""
}

final class Note: ManagedObject {
  @Attribute var title: String = ""
  @Attribute(persistentName: "created") var createdAt: Date? = nil
  @Attribute var status: Status = .draft
  @Attribute(.codable) var options: Options? = nil
  @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
}

let url = FileManager.default.temporaryDirectory.appendingPathComponent("external-client.sqlite")
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }

let container = try PersistentContainer(
  name: "Notes", model: ManagedObjectModel(Folder.self, Note.self), storeURL: url)

// Save from a background context and hand the typed ID out.
let id: ManagedID<Note> = try await container.performBackgroundTask { context in
  context.transactionAuthor = "importer"
  let note = Note(context: context)
  note.title = "Draft"
  note.createdAt = Date()
  try context.save()
  return note.managedID
}

// Resolve it in another context: the result is a Note, no cast.
let title = try await container.viewContext.perform { context in
  let note: Note = try context.existingObject(with: id)
  return note.title
}
guard title == "Draft" else {
  print("ExternalClient: expected 'Draft', got '\(title)'")
  exit(1)
}
print("ExternalClient: resolved \(id) -> \(title)")
