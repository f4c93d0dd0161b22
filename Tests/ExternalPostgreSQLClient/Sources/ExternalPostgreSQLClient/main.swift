import Foundation
import Synchronization
import TypedStore

// The two-entity model of DESIGN.md, as an application's package writes it: the code a store
// file would run, with a postgresql:// URL (TYPEDSTORE_POSTGRESQL_URL, a server's) for the file.

enum Status: String, Codable, Sendable { case draft, published }

final class Folder: ManagedObject {
  @Attribute var name: String = ""
}

final class Note: ManagedObject {
  @Attribute var title: String = ""
  @Attribute var status: Status = .draft
}

/// Stops the client with a message when a check fails.
func require(_ condition: Bool, _ message: String) {
  guard condition else {
    print("ExternalPostgreSQLClient: \(message)")
    exit(1)
  }
}

guard let server = ProcessInfo.processInfo.environment["TYPEDSTORE_POSTGRESQL_URL"] else {
  print("ExternalPostgreSQLClient: set TYPEDSTORE_POSTGRESQL_URL to a server's postgresql:// URL")
  exit(64)
}
let separator = server.contains("?") ? "&" : "?"
guard let url = URL(string: server + separator + "schema=external_\(getpid())") else {
  print("ExternalPostgreSQLClient: \(server) is not a URL")
  exit(64)
}
let model = try ManagedObjectModel(Folder.self, Note.self)
let container = try PersistentContainer(name: "Notes", model: model, storeURL: url)
// Another host would open the same URL: here, a second container of this process.
let other = try PersistentContainer(name: "Notes", model: model, storeURL: url)
require(other.persistentStore.identifier == container.persistentStore.identifier, "two stores")

let heard = Mutex<[StoreChanges]>([])
let observation = other.addStoreChangesObserver { changes in heard.withLock { $0.append(changes) } }

// Save from a background context and hand the typed ID out.
let id: ManagedID<Note> = try await container.performBackgroundTask { context in
  context.transactionAuthor = "importer"
  let note = Note(context: context)
  note.title = "cafe\u{301} draft"  // "café", decomposed
  try context.save()
  return note.managedID
}

// The other container hears the commit and reads the note, by its ID and by Swift's string
// semantics ("café" precomposed equals it decomposed).
let deadline = Date().addingTimeInterval(10)
while heard.withLock({ $0.isEmpty }) && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
let changes = heard.withLock { $0 }
require(changes.count == 1 && changes[0].insertedIDs.count == 1, "heard \(changes.count) commits")
require(changes[0].author == "importer", "the author: \(changes[0].author ?? "none")")
let found = try await other.viewContext.perform { context in
  let byID: Note = try context.existingObject(with: id)
  let draft = Status.draft
  let matching = try context.fetch(
    FetchRequest<Note>(predicate: #Predicate { $0.title == "café draft" && $0.status == draft }))
  return (byID.title, matching.map(\.managedID))
}
require(found.1 == [id], "the predicate found \(found.1)")
print("ExternalPostgreSQLClient: heard and resolved \(id) -> \(found.0)")

// A store of another model is refused when it is not to be migrated, as a file is.
var noMigration = StoreOptions()
noMigration.shouldMigrateStoreAutomatically = false
do {
  _ = try PersistentContainer(
    name: "Notes", model: ManagedObjectModel(Folder.self), storeURL: url, options: noMigration)
  require(false, "another model was not refused")
} catch StoreError.modelMismatch {
  print("ExternalPostgreSQLClient: another model refused")
}
_ = observation
