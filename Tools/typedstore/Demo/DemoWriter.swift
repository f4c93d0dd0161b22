import ArgumentParsing
import Foundation
import TypedStore

/// `typedstore demo-writer`: one of the demo's writer processes. For `--seconds`, inserts,
/// updates and deletes its own notes in a folder of its own, a save at a time, and now and
/// then a batch update; prints a `WriterReport`.
enum DemoWriter {
  private struct Counts {
    var commits = 0
    var inserted = 0
    var updated = 0
    var deleted = 0
  }

  static func run(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let name = try usage { try command.required("--name") }
    let seconds = try usage { try command.integer("--seconds", in: 1...3600) } ?? 3
    let context = try DemoStore.container(path).newModelContext(name: name)
    context.transactionAuthor = name
    var counts = Counts()
    let deadline = Date().addingTimeInterval(Double(seconds))
    try perform("\(name) failed") {
      let folder = Folder(context: context)
      folder.name = name
      try context.save()
      counts.commits += 1
      counts.inserted += 1
      var mine: [Note] = []
      var generator = SystemRandomNumberGenerator()
      while Date() < deadline {
        try commitOneChange(to: &mine, in: folder, context: context, counts: &counts, generator: &generator)
        counts.commits += 1
        usleep(UInt32.random(in: 500...3000, using: &generator))
      }
    }
    let report = WriterReport(
      pid: getpid(), commits: counts.commits, inserted: counts.inserted, updated: counts.updated,
      deleted: counts.deleted)
    print(try DemoReport.line(report))
  }

  /// One transaction: new notes (always while it has fewer than 10), an update, a delete, or
  /// a batch update of five notes.
  private static func commitOneChange(
    to mine: inout [Note], in folder: Folder, context: ModelContext, counts: inout Counts,
    generator: inout SystemRandomNumberGenerator
  ) throws {
    let name = folder.name
    let roll = Double.random(in: 0..<1, using: &generator)
    if mine.count < 10 || roll < 0.45 {
      for _ in 0..<Int.random(in: 1...3, using: &generator) {
        let note = Note(context: context)
        note.title = "\(name) note \(counts.inserted)"
        note.folder = folder
        mine.append(note)
        counts.inserted += 1
      }
      try context.save()
    } else if roll < 0.8 {
      let note = mine[Int.random(in: 0..<mine.count, using: &generator)]
      note.revision += 1
      note.done.toggle()
      try context.save()
      counts.updated += 1
    } else if roll < 0.95 {
      let note = mine.remove(at: Int.random(in: 0..<mine.count, using: &generator))
      context.delete(note)
      try context.save()
      counts.deleted += 1
    } else {
      // A batch request: set-based, recorded in history like a save.
      let ids = mine.prefix(5).map(\.managedID)
      var update = BatchUpdateRequest<Note>(objectIDs: Array(ids), propertiesToUpdate: [.set(\.done, true)])
      update.author = name
      let result = try context.execute(update)
      for note in mine.prefix(5) { context.refresh(note, mergeChanges: false) }
      counts.updated += result.count
    }
  }
}
