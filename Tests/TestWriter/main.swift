import Foundation
import TypedStore

// A second process for the multi-process tests: opens a store and saves one event per
// transaction. Usage: typedstore-test-writer <store path> <author> <count>

final class Event: ManagedObject {
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[3]) else {
  FileHandle.standardError.write(Data("usage: typedstore-test-writer <store path> <author> <count>\n".utf8))
  exit(64)
}
let author = arguments[2]
do {
  let container = try PersistentContainer(
    name: "Events", model: ManagedObjectModel(Event.self), storeURL: URL(fileURLWithPath: arguments[1]))
  let context = container.newBackgroundContext()
  for sequence in 0..<count {
    try context.performAndWait { context in
      context.transactionAuthor = author
      let event = Event(context: context)
      event.source = author
      event.sequence = sequence
      try context.save()
    }
  }
  print("\(author): saved \(count)")
} catch {
  FileHandle.standardError.write(Data("typedstore-test-writer: \(error)\n".utf8))
  exit(1)
}
