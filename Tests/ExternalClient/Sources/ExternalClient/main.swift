import Foundation
import TypedStore
import TypedStoreTesting

// The two-entity model of DESIGN.md, attributes only, as an application's package writes it.

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
  /// Computed: a key path to it names no attribute, though it reads one.
  var shout: String { title.uppercased() }
}

/// Where this client's store `name` lives: a new file in the temporary folder or, when
/// TYPEDSTORE_POSTGRESQL_URL names a PostgreSQL server, a new schema of it. Only the location
/// differs: everything below runs the same on both.
func storeLocation(_ name: String) -> URL {
  guard let server = ProcessInfo.processInfo.environment["TYPEDSTORE_POSTGRESQL_URL"] else {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).sqlite")
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    return url
  }
  let schema = name.replacingOccurrences(of: "-", with: "_") + "_\(getpid())"
  guard let url = URL(string: server + (server.contains("?") ? "&" : "?") + "schema=\(schema)") else {
    print("ExternalClient: TYPEDSTORE_POSTGRESQL_URL is not a URL: \(server)")
    exit(64)
  }
  return url
}

let url = storeLocation("external-client")

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

/// Stops the client with a message when a check fails.
func require(_ condition: Bool, _ message: String) {
  guard condition else {
    print("ExternalClient: \(message)")
    exit(1)
  }
}

// A computed property is refused in a predicate and a sort, with errors that name it.
let refusals = try await container.viewContext.perform { context -> [String] in
  var errors: [String] = []
  do {
    _ = try context.fetch(FetchRequest<Note>(predicate: #Predicate { $0.shout == "DRAFT" }))
  } catch let error as PredicateTranslationError {
    errors.append("\(error)")
  }
  do {
    _ = try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.shout)]))
  } catch let error as FetchError {
    errors.append("\(error)")
  }
  return errors
}
require(refusals.count == 2 && refusals.allSatisfy { !$0.contains("0x") }, "computed key paths: \(refusals)")

// Another store's IDs reach none of this store's rows.
let otherURL = storeLocation("external-client-other")
let other = try PersistentContainer(
  name: "Other", model: ManagedObjectModel(Folder.self, Note.self), storeURL: otherURL)
let refused = try await other.performBackgroundTask { context -> Bool in
  do {
    _ = try context.execute(BatchDeleteRequest<Note>(objectIDs: [id]))
    return false
  } catch ManagedIDError.foreignStore {
    return true
  }
}
let kept = try await container.viewContext.perform { context in try context.count(for: FetchRequest<Note>()) }
require(refused && kept == 1, "another store's ID: refused \(refused), rows kept \(kept)")
print("ExternalClient: computed key paths and foreign IDs refused")

// TypedStoreTesting's throw-away store, named after its caller, as a user's test opens one.
let scratch = try PersistentContainer.makeTest(model: ManagedObjectModel(Folder.self, Note.self))
let scratchCount = try await scratch.viewContext.perform { context in try context.count(for: FetchRequest<Note>()) }
require(
  scratchCount == 0 && scratch.persistentStore.url.path.contains("typedstore-tests"),
  "makeTest: \(scratchCount) notes at \(scratch.persistentStore.url.path)")
print("ExternalClient: TypedStoreTesting.makeTest opened \(scratch.persistentStore.url.lastPathComponent)")

// Version 2 of the app: a staged migration whose custom stage fills a new attribute from an
// old one, while this process still holds the version 1 container, which is refused after.
enum Version2 {
  final class Folder: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var displayName: String = ""
  }
}

try await container.performBackgroundTask { context in
  Folder(context: context).name = "inbox"
  try context.save()
}
let plan = MigrationPlan(
  versions: [
    .init("1", try ManagedObjectModel(Folder.self, Note.self)),
    .init("2", try ManagedObjectModel(Version2.Folder.self, Note.self)),
  ],
  stages: [
    .custom(didMigrate: { context in
      for folder in try context.fetch(FetchRequest<Version2.Folder>()) { folder.displayName = folder.name.capitalized }
    })
  ])
let migrated = try PersistentContainer(name: "Notes", migrationPlan: plan, storeURL: url)
let displayNames = try await migrated.viewContext.perform { context in
  try context.fetch(FetchRequest<Version2.Folder>()).map(\.displayName)
}
require(displayNames == ["Inbox"], "migration plan: \(displayNames)")
let oldModelRefused = await container.viewContext.perform { context -> Bool in
  do {
    _ = try context.count(for: FetchRequest<Folder>())
    return false
  } catch StoreError.modelChanged {
    return true
  } catch {
    return false
  }
}
require(oldModelRefused, "the version 1 container was not refused after the migration")
print("ExternalClient: migrated through a plan to \(displayNames); version 1 refused")

// A consumer, as an application writes one: a transactional hook writes one note per note the
// importer saved, exactly once, with its checkpoint; an async hook reads each change's key.
actor KeyLog {
  var keys: [String] = []
  func add(_ key: String) { keys.append(key) }
}
let keyLog = KeyLog()
var consumerOptions = HistoryMerger.Options()
consumerOptions.startsAt = .beginning
consumerOptions.authors = ["importer"]
let consumer = try HistoryMerger(container: migrated, consumer: "external", options: consumerOptions)
consumer.addTransactionalHook { event, context in
  for _ in event.inserted(Note.self) { Note(context: context).title = "effect" }
}
consumer.addHook { event in
  for change in event.transaction.changes { await keyLog.add(event.transaction.key(for: change).description) }
}
try await consumer.start()
await consumer.stop()
let effects = try await migrated.viewContext.perform { context in
  try context.count(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "effect" }))
}
let keys = await keyLog.keys
require(effects == 1 && keys.count == 1 && keys[0].hasSuffix("/1/0"), "consumer: \(effects) effects, keys \(keys)")
print("ExternalClient: a consumer's effect saved once; change key \(keys[0])")

// The hook registry and pruning after merges, as a PersistentHistoryTrackingKit user ports
// them: an entity hook put before another, a hook that ends the pipeline, a batch hook.
actor Seen {
  var lines: [String] = []
  func add(_ line: String) { lines.append(line) }
}
let seen = Seen()
var registryOptions = HistoryMerger.Options()
registryOptions.pruning = HistoryMerger.Pruning(.consumed, .afterMerges(1))
let registry = try HistoryMerger(
  container: migrated, consumer: "registry", contexts: [migrated.viewContext], options: registryOptions)
let last = registry.addHook { (event: inout HistoryMerger.Event) async in
  await seen.add("last \(event.transaction.transactionNumber)")
}
try registry.addHook(for: Note.self, operation: .insert, before: last) { event in
  if event.transaction.author != "importer" { event.finish() }
}
registry.addBatchHook { (batch: inout HistoryMerger.BatchEvent) async in
  await seen.add("batch \(batch.transactions.count)")
}
try await registry.start()
await registry.stop()
let registrySaw = await seen.lines
require(
  registrySaw.contains("last 1") && registrySaw.last?.hasPrefix("batch") == true && registry.lastPruning != nil,
  "registry: \(registrySaw), pruning \(String(describing: registry.lastPruning))")
require(registry.removeHooks(for: Note.self) == 1 && registry.removeHook(last), "registry: removal")
print("ExternalClient: a hook registry with finish() and a batch hook; pruned after merges")

// The managed object's life, as a Core Data user overrides it from another module: a default
// at insert, a derived field in willSave, an attribute that validates itself, and the
// context's typed messages with the values before the current event.
enum Diary {
  enum EntryError: Error { case empty }

  final class Entry: ManagedObject {
    @Attribute(validate: { if $0.isEmpty { throw EntryError.empty } })
    var text: String = "untitled"
    @Attribute var words: Int = 0
    @Attribute var created: Date? = nil

    override func awakeFromInsert() {
      super.awakeFromInsert()
      created = Date(timeIntervalSince1970: 0)
    }
    override func willSave() {
      super.willSave()
      let count = text.split(separator: " ").count
      if words != count { words = count }
    }
    override func awake(fromSnapshotEvents events: SnapshotEvents) {
      super.awake(fromSnapshotEvents: events)
    }
  }
}
let diary = try PersistentContainer(
  name: "Diary", model: ManagedObjectModel(Diary.Entry.self), storeURL: storeLocation("external-client-diary"))
let diaryReport = try await diary.viewContext.perform { context -> [String] in
  var report: [String] = []
  context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
    for entry in message.updated(Diary.Entry.self) where !entry.isInserted {
      report.append("updated, was \(entry.changedValuesForCurrentEvent()["text"] as? String ?? "?")")
    }
  }
  context.addObserver(for: ManagedObjectContext.DidSaveObjectIDsMessage.self) { message in
    report.append("saved \(message.inserted(Diary.Entry.self).count)")
  }
  let entry = Diary.Entry(context: context)
  entry.text = ""
  do {
    try context.save()
  } catch StoreError.validationFailed(let failures) {
    report.append("refused \(failures.map(\.property))")
  }
  entry.text = "one two three"
  try context.save()
  report.append("words \(entry.words), created \(entry.created != nil)")
  entry.text = "four"
  context.processPendingChanges()
  return report
}
require(
  diaryReport == ["refused [\"text\"]", "saved 1", "words 3, created true", "updated, was one two three"],
  "the object's life: \(diaryReport)")
print("ExternalClient: hooks, attribute validation and context messages from another module")

// Apple model files (docs/apple-models.md): the project's Shop bundle, version 1's classes
// written here under other class names (bound by their entity names), checked against the
// file, stored and read back; the current version's classes generated.
enum Shop {
  static let bundle = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
      "Fixtures/ModelFiles/Shop.xcdatamodeld")

  final class ShopperV1: ManagedObject {
    override class var entityName: String { "Shopper" }
    @Attribute var email: String? = nil
    @Attribute var name: String = ""
    @Relationship(deleteRule: .cascade) var baskets: Set<BasketV1>
  }
  final class BasketV1: ManagedObject {
    override class var entityName: String { "Basket" }
    @Attribute var createdAt: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship(inverse: \ShopperV1.baskets, required: true) var shopper: ShopperV1?
  }
}
let shopFile = try XcodeModelBundle(contentsOf: Shop.bundle).model(named: "Shop")
let shopModel = try ManagedObjectModel(xcodeModel: shopFile, classes: [Shop.ShopperV1.self, Shop.BasketV1.self])
let shop = try PersistentContainer(name: "Shop", model: shopModel, storeURL: storeLocation("external-client-shop"))
let shopperNames = try shop.viewContext.performAndWait { context in
  let ada = Shop.ShopperV1(context: context)
  ada.name = "Ada"
  Shop.BasketV1(context: context).shopper = ada
  try context.save()
  return try context.fetch(FetchRequest<Shop.BasketV1>()).compactMap { $0.shopper?.name }
}
require(shopperNames == ["Ada"], "shop: \(shopperNames)")
let current = try XcodeModel(contentsOf: Shop.bundle)
let drift = try current.mismatches(against: shopModel)  // the current version has moved on
require(
  drift.contains { $0.kind == .missingEntity && $0.entity == "Tag" }
    && drift.contains { $0.kind == .missingProperty && $0.property == "fullName" }, "drift: \(drift)")
let generated = try current.swiftSources()
require(generated.map(\.fileName).contains("Shopper.swift"), "generated \(generated.map(\.fileName))")
print("ExternalClient: a model bundle read, classes bound to it and checked, classes generated from it")

// A composite attribute declared outside the package: stored as its elements' columns, found
// by key path into the struct, changed element by element.
struct Place: CompositeAttributeValue {
  struct Point: CompositeAttributeValue {
    var latitude = 0.0
    var longitude = 0.0
  }
  var city = ""
  var postcode: String? = nil
  var point = Point()
  var label: String { city + (postcode ?? "") }
}

final class Venue: ManagedObject {
  @Attribute var name: String = ""
  @Attribute(preservedOnDeletion: true) var place: Place = Place()
}

let venues = try PersistentContainer(
  name: "Venues", model: ManagedObjectModel(Venue.self), storeURL: storeLocation("external-client-venues"))
let venueID = try await venues.performBackgroundTask { context in
  for (name, city, latitude) in [("Hall", "Oslo", 59.9), ("Club", "Bonn", 50.7), ("Bar", "Oslo", 59.8)] {
    let venue = Venue(context: context)
    venue.name = name
    venue.place.city = city
    venue.place.point.latitude = latitude
  }
  try context.save()
  return try context.fetch(FetchRequest<Venue>(predicate: #Predicate { $0.name == "Hall" }))[0].managedID
}
let placeStart = try venues.currentHistoryToken
let inOslo = try await venues.performBackgroundTask { context in
  let venue = try context.existingObject(with: venueID)
  venue.place.postcode = "0150"
  try context.save()
  return try context.fetch(
    FetchRequest<Venue>(
      predicate: #Predicate { $0.place.city == "Oslo" }, sortBy: [SortDescriptor(\.place.point.latitude)])
  ).map(\.name)
}
require(inOslo == ["Bar", "Hall"], "composite predicate: \(inOslo)")
let placeChanges = try venues.fetchHistory(HistoryRequest(after: placeStart)).flatMap(\.changes)
require(placeChanges.map(\.updatedProperties) == [["place.postcode"]], "composite history: \(placeChanges)")
let refusedLabel = await venues.viewContext.perform { context in
  do {
    _ = try context.fetch(FetchRequest<Venue>(predicate: #Predicate { $0.place.label == "Oslo" }))
    return false
  } catch {
    return error is PredicateTranslationError
  }
}
require(refusedLabel, "a computed property of a composite was translated")
print("ExternalClient: a composite attribute stored, queried by its elements and changed element by element")
