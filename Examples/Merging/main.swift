// Two processes, one store: `writer` commits, `merger` merges what it commits into live
// objects. Run the merger, then the writer, against the same file:
//
//   swift run typedstore-merging-example merger /tmp/notes.sqlite 3 &
//   swift run typedstore-merging-example writer /tmp/notes.sqlite
//
// (docs/merging.md shows this file; the tests build it and run both processes.)
import Foundation
import TypedStore

final class Note: ManagedObject {
  @Attribute var title: String = ""
  @Attribute var done: Bool = false
}

/// The merging process keeps its live objects in a model actor.
actor Board: ModelActor {
  nonisolated let modelExecutor: ModelExecutor
  let modelContext: ModelContext
  private var notes: [Note] = []

  init(container: PersistentContainer) {
    let context = container.newModelContext(name: "board")
    modelExecutor = context.executor
    modelContext = context
  }

  /// Fetches the notes: picks up inserted ones (a merge refreshes and deletes objects the
  /// context holds; it never adds any). Rows it holds already keep their objects.
  func fetchNotes() throws {
    notes = try modelContext.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
  }

  func summary() -> String {
    notes.filter { !$0.isDeleted }.map { $0.done ? "\($0.title) (done)" : $0.title }.joined(separator: ", ")
  }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, ["writer", "merger"].contains(arguments[1]) else {
  print("usage: typedstore-merging-example writer|merger <store> [transactions to wait for]")
  exit(64)
}
let container = try PersistentContainer(
  name: "Notes", model: ManagedObjectModel(Note.self), storeURL: URL(fileURLWithPath: arguments[2]))

if arguments[1] == "writer" {
  try await container.performBackgroundTask { context in
    context.transactionAuthor = "writer"
    let milk = Note(context: context)
    milk.title = "milk"
    let eggs = Note(context: context)
    eggs.title = "eggs"
    try context.save()  // transaction: two inserts
    milk.done = true
    try context.save()  // transaction: an update
    context.delete(eggs)
    try context.save()  // transaction: a delete
  }
  print("writer: committed 3 transactions")
} else {
  let expected = arguments.count > 3 ? Int(arguments[3]) ?? Int.max : Int.max
  let board = Board(container: container)
  try await board.fetchNotes()

  // A durable consumer: its checkpoint lives in the store, so a restart goes on where it
  // stopped and never misses a transaction.
  var options = HistoryMerger.Options()
  options.startsAt = .beginning
  let merger = try HistoryMerger(container: container, consumer: "board", modelActors: [board], options: options)
  let (seen, seenOne) = AsyncStream.makeStream(of: Int64.self)
  merger.addHook { event in
    // Typed views of the transaction; its number is the key for idempotent side effects.
    print(
      "merger: transaction \(event.transaction.transactionNumber) by \(event.transaction.author ?? "-"):",
      "\(event.inserted(Note.self).count) inserted, \(event.updated(Note.self).count) updated,",
      "\(event.deleted(Note.self).count) deleted")
    seenOne.yield(event.transaction.transactionNumber)
  }
  try await merger.start()
  print("merger: ready")

  var count = 0
  for await _ in seen {
    try await board.fetchNotes()  // the objects it already holds were merged, not refetched
    count += 1
    if count == expected { break }
  }
  await merger.stop()  // after the last merge; writes the checkpoint
  print("merger: board is \(await board.summary())")
}
