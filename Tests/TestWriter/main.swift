import Foundation
import TypedStore

// A second process for the multi-process tests.
//
//   typedstore-test-writer <store> <author> <count>
//       opens the store and saves one event per transaction, <count> times.
//   typedstore-test-writer race <store> <author> <count> <start, ms since 1970>
//       waits until the start time, opens (or creates) the store and saves <count> events,
//       one per transaction, printing "saved <sequence> <primary key>" as each save returns:
//       what the test may hold the store to. Prints "open failed: <error>" and exits 2 when
//       the store cannot be opened.
//   typedstore-test-writer hold <store> <count>
//       saves <count> events, one per transaction, prints "ready" and keeps the store open
//       until killed: the WAL then holds those commits, not yet checkpointed.
//   typedstore-test-writer set <store> <primary key> <sequence>
//   typedstore-test-writer delete <store> <primary key>
//       changes or deletes one event, in one transaction.
//   typedstore-test-writer open <store> [read-only]
//       opens the store, counts its events and tries to save one; prints what happened.
//   Any of these after "as-user <uid>" runs as that user (the tests run as root, which may
//   write any file).

final class Event: ManagedObject {
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
}

func fail(_ message: String, code: Int32) -> Never {
  FileHandle.standardError.write(Data("typedstore-test-writer: \(message)\n".utf8))
  exit(code)
}

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func openContainer(_ path: String, readOnly: Bool = false) throws -> PersistentContainer {
  var options = StoreOptions()
  options.isReadOnly = readOnly
  return try PersistentContainer(
    name: "Events", model: ManagedObjectModel(Event.self), storeURL: URL(fileURLWithPath: path), options: options)
}

func save(_ context: ManagedObjectContext, author: String, sequence: Int) throws -> Int64 {
  try context.performAndWait { context in
    context.transactionAuthor = author
    let event = Event(context: context)
    event.source = author
    event.sequence = sequence
    try context.save()
    return event.managedID.primaryKey ?? -1
  }
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "as-user", arguments.count > 1, let uid = UInt32(arguments[1]) {
  guard setgid(uid) == 0, setuid(uid) == 0 else { fail("cannot become user \(uid)", code: 70) }
  arguments.removeFirst(2)
}

switch arguments.first {
case "race":
  guard arguments.count == 5, let count = Int(arguments[3]), let start = Double(arguments[4]) else {
    fail("usage: race <store> <author> <count> <start ms>", code: 64)
  }
  let wait = start / 1000 - Date().timeIntervalSince1970
  if wait > 0 { Thread.sleep(forTimeInterval: wait) }
  let container: PersistentContainer
  do {
    container = try openContainer(arguments[1])
  } catch {
    say("open failed: \(error)")
    exit(2)
  }
  let context = container.newBackgroundContext()
  do {
    for sequence in 0..<count {
      let key = try save(context, author: arguments[2], sequence: sequence)
      say("saved \(sequence) \(key)")
    }
  } catch {
    say("save failed: \(error)")
    exit(3)
  }

case "hold":
  guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: hold <store> <count>", code: 64) }
  do {
    let container = try openContainer(arguments[1])
    let context = container.newBackgroundContext()
    for sequence in 0..<count { _ = try save(context, author: "holder", sequence: sequence) }
    say("ready")
    while true { Thread.sleep(forTimeInterval: 60) }
  } catch {
    fail("\(error)", code: 1)
  }

case "set", "delete":
  guard arguments.count >= 3, let key = Int64(arguments[2]) else { fail("usage: set|delete <store> <pk> …", code: 64) }
  let value = arguments.count > 3 ? Int(arguments[3]) ?? 0 : 0
  let isDelete = arguments[0] == "delete"
  do {
    let container = try openContainer(arguments[1])
    let storeID = container.persistentStore.identifier
    try container.newBackgroundContext().performAndWait { context in
      context.transactionAuthor = "changer"
      let id = try ManagedID<Event>(validating: URL(string: "typedstore://\(storeID.uuidString)/Event/p\(key)")!)
      let event = try context.existingObject(with: id)
      if isDelete { context.delete(event) } else { event.sequence = value }
      try context.save()
    }
    say("done")
  } catch {
    fail("\(error)", code: 1)
  }

case "open":
  guard arguments.count >= 2 else { fail("usage: open <store> [read-only]", code: 64) }
  do {
    let container = try openContainer(arguments[1], readOnly: arguments.dropFirst(2).first == "read-only")
    let count = try container.viewContext.performAndWait { context in try context.count(for: FetchRequest<Event>()) }
    say("opened: \(count) events, \(try container.fetchHistory(HistoryRequest()).count) transactions")
    do {
      _ = try save(container.newBackgroundContext(), author: "probe", sequence: 0)
      say("saved")
    } catch {
      say("save failed: \(error)")
    }
  } catch {
    say("open failed: \(error)")
  }

default:
  guard arguments.count == 3, let count = Int(arguments[2]) else {
    fail("usage: typedstore-test-writer <store path> <author> <count>", code: 64)
  }
  do {
    let container = try openContainer(arguments[0])
    let context = container.newBackgroundContext()
    for sequence in 0..<count { _ = try save(context, author: arguments[1], sequence: sequence) }
    print("\(arguments[1]): saved \(count)")
  } catch {
    fail("\(error)", code: 1)
  }
}
