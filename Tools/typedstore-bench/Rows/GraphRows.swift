import CSQLite
import Foundation
import TypedStore

// The object-graph rows: prefetching a to-many, and a cascade delete across rows no context
// loaded, each against the raw C API doing the same queries (and, for the prefetch, wiring
// plain Swift objects the same way).

final class BenchFolder: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(deleteRule: .cascade) var notes: Set<BenchNote>
}

final class BenchNote: ManagedObject {
  @Attribute var title: String = ""
  @Relationship(inverse: \BenchFolder.notes) var folder: BenchFolder?
}

/// What the raw side makes of a folder row and its notes.
private final class RawFolder {
  let pk: Int64
  let name: String
  var notes: [RawNote] = []
  init(pk: Int64, name: String) {
    self.pk = pk
    self.name = name
  }
}

private final class RawNote {
  let title: String
  unowned let folder: RawFolder
  init(title: String, folder: RawFolder) {
    self.title = title
    self.folder = folder
  }
}

extension Bench {
  /// A graph store (history on) and a raw database with the same rows: `folders` folders of
  /// `notesPerFolder` notes each.
  fileprivate func graphStores(_ name: String, folders: Int, notesPerFolder: Int) throws -> (
    PersistentContainer, RawDatabase
  ) {
    let url = directory.appendingPathComponent("\(uniqueName(name)).sqlite")
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    let container = try PersistentContainer(
      name: name, model: ManagedObjectModel(BenchFolder.self, BenchNote.self), storeURL: url)
    try container.newBackgroundContext().performAndWait { context in
      for f in 0..<folders {
        let folder = BenchFolder(context: context)
        folder.name = "folder \(f)"
        for n in 0..<notesPerFolder {
          let note = BenchNote(context: context)
          note.title = "note \(f).\(n)"
          folder.$notes.insert(note)
        }
      }
      try context.save()
    }
    try container.persistentStore.checkpoint()
    let raw = try freshRaw(name + "-raw")
    try raw.execute(
      """
      CREATE TABLE folder (pk INTEGER PRIMARY KEY, name TEXT NOT NULL);
      CREATE TABLE note (pk INTEGER PRIMARY KEY, title TEXT NOT NULL, folder INTEGER);
      CREATE INDEX note_folder ON note(folder);
      BEGIN;
      """)
    let insertFolder = try raw.prepare("INSERT INTO folder (pk, name) VALUES (?, ?)")
    let insertNote = try raw.prepare("INSERT INTO note (title, folder) VALUES (?, ?)")
    defer {
      sqlite3_finalize(insertFolder)
      sqlite3_finalize(insertNote)
    }
    for f in 0..<folders {
      sqlite3_bind_int64(insertFolder, 1, Int64(f + 1))
      sqlite3_bind_text(insertFolder, 2, "folder \(f)", -1, transientDestructor)
      sqlite3_step(insertFolder)
      sqlite3_reset(insertFolder)
      for n in 0..<notesPerFolder {
        sqlite3_bind_text(insertNote, 1, "note \(f).\(n)", -1, transientDestructor)
        sqlite3_bind_int64(insertNote, 2, Int64(f + 1))
        sqlite3_step(insertNote)
        sqlite3_reset(insertNote)
      }
    }
    try raw.execute("COMMIT")
    try raw.checkpoint()
    return (container, raw)
  }
}

private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// The raw prefetch: the folders, then all their notes in one query, wired to their folders.
/// Returns (folders, notes, total title length) to compare with TypedStore's.
private func rawPrefetch(_ raw: RawDatabase) throws -> [Int] {
  let folderStatement = try raw.prepare("SELECT pk, name FROM folder")
  defer { sqlite3_finalize(folderStatement) }
  var folders: [RawFolder] = []
  var byKey: [Int64: RawFolder] = [:]
  while sqlite3_step(folderStatement) == SQLITE_ROW {
    let folder = RawFolder(
      pk: sqlite3_column_int64(folderStatement, 0), name: String(cString: sqlite3_column_text(folderStatement, 1)))
    folders.append(folder)
    byKey[folder.pk] = folder
  }
  let keys = "[" + folders.map { String($0.pk) }.joined(separator: ",") + "]"
  let noteStatement = try raw.prepare(
    "SELECT pk, title, folder FROM note WHERE folder IN (SELECT value FROM json_each(?)) ORDER BY folder, pk")
  defer { sqlite3_finalize(noteStatement) }
  sqlite3_bind_text(noteStatement, 1, keys, -1, transientDestructor)
  while sqlite3_step(noteStatement) == SQLITE_ROW {
    guard let folder = byKey[sqlite3_column_int64(noteStatement, 2)] else { continue }
    folder.notes.append(RawNote(title: String(cString: sqlite3_column_text(noteStatement, 1)), folder: folder))
  }
  // The result is read as TypedStore's is: by walking the graph once it is built.
  var notes = 0
  var length = 0
  for folder in folders {
    for note in folder.notes {
      notes += 1
      length += note.title.utf8.count
    }
  }
  return [folders.count, notes, length]
}

extension Bench {
  func graphRows() async throws {
    try await prefetchRow()
    try await cascadeDeleteRow()
  }

  private func prefetchRow() async throws {
    let folders = max(1, n / 10)
    let prefetchName = "fetch \(folders) folders and prefetch their \(n) notes"
    if selected(prefetchName) {
      let (container, raw) = try graphStores("prefetch", folders: folders, notesPerFolder: 10)
      let expected = try rawPrefetch(raw)
      try await run(prefetchName, goal: 1.5) {
        try time { try verify("prefetch raw", try rawPrefetch(raw), expected) }
      } typed: {
        try time {
          let counts = try container.newBackgroundContext().performAndWait { context in
            var request = FetchRequest<BenchFolder>()
            request.relationshipKeyPathsForPrefetching = [\.notes]
            let fetched = try context.fetch(request)
            var notes = 0
            var length = 0
            for folder in fetched {
              for note in folder.notes {
                notes += 1
                length += note.title.utf8.count
              }
            }
            return [fetched.count, notes, length]
          }
          try verify("prefetch", counts, expected)
        }
      }
    }

  }

  private func cascadeDeleteRow() async throws {
    let cascadeName = "cascade delete of a folder with \(n) notes, history on"
    if selected(cascadeName) {
      try await run(cascadeName, goal: 1.5) {
        let (_, raw) = try graphStores("cascade", folders: 1, notesPerFolder: n)
        return try time {
          try raw.execute("BEGIN; DELETE FROM note WHERE folder = 1; DELETE FROM folder WHERE pk = 1; COMMIT;")
        }
      } typed: {
        let (container, _) = try graphStores("cascade", folders: 1, notesPerFolder: n)
        let context = container.newBackgroundContext()
        let folder = try context.performAndWait { context in
          try context.fetch(FetchRequest<BenchFolder>()).count
        }
        try verify("cascade setup", folder, 1)
        let ms = try time {
          try context.performAndWait { context in
            for folder in try context.fetch(FetchRequest<BenchFolder>()) { context.delete(folder) }
            try context.save()
          }
        }
        let left = try context.performAndWait { context in try context.count(for: FetchRequest<BenchNote>()) }
        try verify("cascade", left, 0)
        return ms
      }
    }
  }
}
