import Foundation
import TypedStore

// The demo's model: what its writers write and its merger merges. The store keeps it, so
// every other command reads the demo's store without these classes.

final class Folder: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .cascade) var notes: Set<Note>
}

final class Note: ManagedObject {
  @Attribute var title: String = ""
  @Attribute var done: Bool = false
  @Attribute var revision: Int = 0
  @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
  @Relationship(inverse: \Folder.notes) var folder: Folder?
}

/// Opening the demo's store, for each of its processes.
enum DemoStore {
  static func model() throws(Failure) -> ManagedObjectModel {
    try perform("the demo model") { try ManagedObjectModel(Folder.self, Note.self) }
  }

  static func container(_ path: String) throws(Failure) -> PersistentContainer {
    let model = try model()
    return try perform("cannot open the demo store \(path)") {
      try PersistentContainer(name: "Demo", model: model, storeURL: URL(fileURLWithPath: path))
    }
  }
}
