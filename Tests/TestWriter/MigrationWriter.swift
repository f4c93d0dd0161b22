import Foundation
import TypedStore

/// Version 2 of the writer's `Event`: a required attribute with a default, so opening a
/// version 1 store rebuilds its table (the slow path, for the tests that kill or race it).
final class EventVersion2: ManagedObject {
  override class var entityName: String { "Event" }
  @Attribute var source: String = ""
  @Attribute var sequence: Int = 0
  @Attribute var priority: Int = 5
}

/// `migrate-open <store> <author> <start, ms since 1970>`: as `openAndSave`, opening the store
/// with version 2 (migrating it if no one has) and saving one event.
func migrateOpen(_ arguments: [String]) {
  openAndSave(arguments, command: "migrate-open") { url in
    try PersistentContainer(name: "Events", model: ManagedObjectModel(EventVersion2.self), storeURL: url)
  } save: { context, author in
    let event = EventVersion2(context: context)
    event.source = author
    event.priority = 9
    try context.save()
    return event.managedID.primaryKey ?? -1
  }
}

/// A migrating process: waits until the start time (`arguments[3]`, ms since 1970), prints
/// "migrating", opens the store at `arguments[1]` with `open` (migrating it if no one has),
/// prints "opened", saves with `save` as the author `arguments[2]` and prints "saved <primary
/// key>". Prints "open failed: <error>" (exit 2) or "save failed: <error>" (exit 3).
func openAndSave(
  _ arguments: [String], command: String, open: (URL) throws -> PersistentContainer,
  save: @Sendable (isolated ManagedObjectContext, String) throws -> Int64
) {
  guard arguments.count == 4, let start = Double(arguments[3]) else {
    fail("usage: \(command) <store> <author> <start ms>", code: 64)
  }
  let wait = start / 1000 - Date().timeIntervalSince1970
  if wait > 0 { Thread.sleep(forTimeInterval: wait) }
  say("migrating")
  let container: PersistentContainer
  do {
    // A path, or a store URL of another engine (`postgresql://…`).
    container = try open(storeURL(arguments[1]))
  } catch {
    say("open failed: \(error)")
    exit(2)
  }
  say("opened")
  let author = arguments[2]
  do {
    let key = try container.newBackgroundContext().performAndWait { context in
      context.transactionAuthor = author
      return try save(context, author)
    }
    say("saved \(key)")
  } catch {
    say("save failed: \(error)")
    exit(3)
  }
}
