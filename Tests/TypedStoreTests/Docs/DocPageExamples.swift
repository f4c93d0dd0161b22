import Foundation
import Observation
import ShopModel
import Testing
import TypedStore
import TypedStoreTesting

// The Swift examples of README.md and docs/ that no other test holds, as the pages write them
// (`DocCodeBlockTests` checks that every paragraph of every example is in a compiled file):
// each page's declarations in a namespace of its own (the fixtures already have a Note), its
// statements in functions that the tests below run, where they can end.

// MARK: - README.md

enum ReadmePage {
  final class Note: ManagedObject {
    @Attribute var title: String = ""
    @Attribute(persistentName: "created") var createdAt: Date? = nil
  }

  static func example(url: URL) async throws -> String {
    let container = try PersistentContainer(
      name: "Notes", model: ManagedObjectModel(Note.self), storeURL: url)

    let id: ManagedID<Note> = try await container.performBackgroundTask { context in
      let note = Note(context: context)
      note.title = "Draft"
      try context.save()
      return note.managedID
    }

    let title = try await container.viewContext.perform { context in
      try context.existingObject(with: id).title  // a Note: no cast
    }
    return title
  }
}

// MARK: - docs/model.md

enum ModelPage {
  enum Status: String { case draft, published }
  struct Options: Codable { var pinned = false }

  final class Folder: ManagedObject {
    @Attribute var name: String = ""
  }

  class Note: ManagedObject {
    @Attribute var title: String = ""
    @Attribute(persistentName: "created") var createdAt: Date? = nil
    @Attribute var status: Status = .draft  // RawRepresentable, stored raw
    @Attribute(.codable) var options: Options? = nil  // Codable, stored as JSON
    @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
  }

  final class Checklist: Note {  // a subentity of Note
    @Attribute var itemCount: Int = 0
  }

  final class Member: ManagedObject {
    override class var uniquenessConstraints: [UniquenessConstraint] {
      [UniquenessConstraint(\Member.givenName, \Member.familyName)]
    }
    @Attribute var givenName: String = ""
    @Attribute var familyName: String = ""
  }

  struct GeoPoint: CompositeAttributeValue {
    var latitude = 0.0
    var longitude = 0.0
  }

  struct PostalAddress: CompositeAttributeValue {
    var street = ""
    var city = ""
    var postcode: String? = nil
    var location = GeoPoint()
  }

  final class Customer: ManagedObject {
    @Attribute var name: String = ""
    @Attribute(preservedOnDeletion: true) var address: PostalAddress = PostalAddress()
  }

  static func example() throws -> ManagedObjectModel {
    let model = try ManagedObjectModel(Folder.self, Note.self, Checklist.self)
    return model
  }
}

// MARK: - docs/container-and-contexts.md

actor Importer: ModelActor {
  nonisolated let modelExecutor: ModelExecutor
  let modelContext: ModelContext
  private var watched: [Note] = []

  init(container: PersistentContainer) {
    let context = container.newModelContext()
    modelExecutor = context.executor  // the actor runs where the context's merges run
    modelContext = context
    modelContext.automaticallyMergesChangesFromParent = true
  }

  func importTitles(_ titles: [String]) throws -> [ManagedID<Note>] {
    let notes = titles.map { title in
      let note = Note(context: modelContext)
      note.title = title
      return note
    }
    try modelContext.save()
    return notes.map(\.managedID)
  }

  func watch() throws { watched = try modelContext.fetch(FetchRequest<Note>()) }
  func watchedTitles() -> [String] { watched.map(\.title) }  // up to date: merged live
}

enum ContainerPage {
  static func readOnly(model: ManagedObjectModel, url: URL) throws -> PersistentContainer {
    var options = StoreOptions()
    options.isReadOnly = true
    let container = try PersistentContainer(name: "Notes", model: model, storeURL: url, options: options)
    return container
  }
}

// MARK: - docs/queries.md

enum QueriesPage {
  static func export(_ note: Note) {}

  static func examples(context: isolated ManagedObjectContext) throws -> (Int, [ManagedID<Note>], Int) {
    let published = Status.published
    let count = try context.count(for: FetchRequest<Note>(predicate: #Predicate { $0.createdAt == nil }))
    let ids = try context.fetchObjectIDs(for: FetchRequest<Note>(predicate: #Predicate { $0.title == "" }))

    for note in try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]), batchSize: 1_000) {
      export(note)
    }
    return (count, ids, try aggregates(context: context, published: published))
  }

  static func aggregates(context: isolated ManagedObjectContext, published: Status) throws -> Int {
    let request = FetchRequest<Note>(predicate: #Predicate { $0.status == published })
    let count = try context.aggregate(.count, for: request)  // Int
    let newest = try context.aggregate(.max(\.createdAt), for: request)  // Date?
    let perStatus = try context.aggregate(.count, for: FetchRequest<Note>(), groupedBy: \.status)  // [Status: Int]
    return count + (newest == nil ? 0 : 1) + perStatus.count
  }

  actor Board: ModelActor {
    nonisolated let modelExecutor: ModelExecutor
    let modelContext: ModelContext
    private var controller: FetchedResultsController<Note>?

    init(container: PersistentContainer) {
      let context = container.newModelContext(name: "board")
      modelExecutor = context.executor
      modelContext = context
    }

    func start() throws -> AsyncStream<FetchedResultsDiff> {
      modelContext.automaticallyMergesChangesFromParent = true  // other contexts and processes
      let controller = FetchedResultsController(
        fetchRequest: FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]), context: modelContext)
      try controller.performFetch()
      self.controller = controller
      return controller.changes  // or set controller.delegate
    }
  }

  actor NoteWatcher: ModelActor {
    nonisolated let modelExecutor: ModelExecutor
    let modelContext: ModelContext
    private let note: Note

    init(container: PersistentContainer, id: ManagedID<Note>) throws {
      let context = container.newModelContext()
      context.automaticallyMergesChangesFromParent = true  // hear other contexts and processes
      modelExecutor = context.executor
      modelContext = context
      note = try context.existingObject(with: id)
    }

    func titles() -> Observations<String, Never> {
      Observations { [self] in note.title }
    }
  }

  /// Compiled, not run: it waits for every change to come.
  static func follow(_ watcher: NoteWatcher) async {
    for await title in await watcher.titles() { print(title) }  // now, then after each change
  }
}

/// docs/queries.md's report over decimals, on the shop model.
enum ReportsPage {
  static func revenue(context: isolated ManagedObjectContext) throws -> (Decimal, [ManagedID<Customer>?: Decimal]) {
    let revenue = try context.aggregate(.sum(\.total), for: FetchRequest<Order>())  // Decimal, exact
    let perCustomer = try context.aggregate(
      .sum(\.total), for: FetchRequest<Order>(), groupedBy: \.customer)  // [ManagedID<Customer>?: Decimal]
    return (revenue, perCustomer)
  }
}

enum ObservationPage {
  final class Folder: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(deleteRule: .cascade) var notes: Set<Note>
  }

  final class Note: ManagedObject, Observable {
    @Attribute var title: String = ""
    @Relationship(inverse: \Folder.notes) var folder: Folder?
  }

  static func example(context: ManagedObjectContext, id: ManagedID<Note>) async throws {
    try await context.perform { context in
      context.automaticallyMergesChangesFromParent = true
      let note = try context.existingObject(with: id)
      withObservationTracking {
        print(note.title, note.folder?.name ?? "-")
      } onChange: {
        print("the note will change")  // once; track again to hear the next change
      }
    }
  }
}

// MARK: - docs/batch.md, docs/history.md, docs/merging.md, docs/typed-ids.md

enum BatchPage {
  static func examples(context: isolated ManagedObjectContext, ids: [ManagedID<Note>]) throws -> [Int] {
    // Insert: key path and value pairs...
    let result = try context.execute(
      BatchInsertRequest<Note>(rows: [
        [.set(\.title, "one"), .set(\.status, .published)],
        [.set(\.title, "two")],
      ]))
    // ... or a closure that fills a typed draft per row.
    _ = try context.execute(BatchInsertRequest<Note>(count: 1000) { index, note in note.title = "Note \(index)" })

    // Update: typed assignments, for every row or a list of IDs.
    var update = BatchUpdateRequest<Note>(objectIDs: ids, propertiesToUpdate: [.set(\.title, "Updated")])
    update.returnsObjectIDs = true
    let updated = try context.execute(update)

    // Delete: every row or a list of IDs; tombstones are recorded.
    let deleted = try context.execute(BatchDeleteRequest(objectIDs: ids))

    let blank = try context.execute(BatchDeleteRequest<Note>(predicate: #Predicate { $0.title == "" }))
    return [result.count, updated.count, deleted.count, blank.count]
  }

  static func deletingWhatIsGone(context: isolated ManagedObjectContext, ids: [ManagedID<Note>]) throws {
    do {
      _ = try context.execute(BatchDeleteRequest(objectIDs: ids))
    } catch ManagedIDError.noSuchRow(let uri) {
      print("\(uri) was already deleted; nothing was deleted")
    }
  }
}

enum HistoryPage {
  static func changes(container: PersistentContainer) throws {
    let start = try container.currentHistoryToken
    // ... saves, batch requests, in this process or others ...
    for transaction in try container.fetchHistory(HistoryRequest(after: start)) {
      for change in transaction.changes {
        if let id = change.objectID(as: Note.self) {  // typed; nil for other entities
          switch change.changeType {
          case .insert: print("inserted", id)
          case .update: print("updated", id, change.updatedProperties)
          case .delete: print("deleted", id, change.tombstone?[\Note.uuid] as Any)
          }
        }
      }
    }
  }

  static func notifications(container: PersistentContainer) -> (Task<Void, Never>, StoreChangesObservation) {
    let task =
      Task {
        for await changes in container.storeChanges() {
          await container.viewContext.perform { context in _ = context.mergeChanges(changes) }
        }
      }
    let observation = container.addStoreChangesObserver { changes in print(changes.insertedIDs.count) }
    return (task, observation)
  }
}

enum MergingPage {
  /// What the merging page's hook feeds: a search index of its own.
  struct Index: Sendable {
    func add(_ id: ManagedID<Note>, key: Int64) throws {}
  }

  static func automatic(container: PersistentContainer) async -> ManagedObjectContext {
    let context = container.newBackgroundContext()
    await context.perform { $0.automaticallyMergesChangesFromParent = true }
    return context
  }

  static func consumer(container: PersistentContainer, context: ManagedObjectContext, index: Index) async throws
    -> HistoryMerger
  {
    var options = HistoryMerger.Options()
    options.startsAt = .beginning  // a new consumer reads every transaction (the default; or .now)
    options.excludedAuthors = ["indexer"]  // pass over its own writes
    options.lease = .seconds(3600)  // unseen for longer than this: stale
    let merger = try HistoryMerger(container: container, consumer: "indexer", contexts: [context], options: options)
    merger.addHook { event in
      for id in event.inserted(Note.self) { try index.add(id, key: event.transaction.transactionNumber) }
    }
    try await merger.start()
    return merger
  }

  static func pipeline(merger: HistoryMerger, index: Index) throws {
    let logging = merger.addHook { event in print("transaction", event.transaction.transactionNumber) }
    try merger.addHook(before: logging) { event in
      if event.transaction.author == "importer" { event.finish() }  // no later hook, no merge
    }
    try merger.addHook(for: Note.self, operation: .insert) { event in
      for id in event.inserted(Note.self) { try index.add(id, key: event.transaction.transactionNumber) }
    }
    merger.addBatchHook { batch in
      print(batch.transactions.count, "transactions,", batch.updated(Note.self).count, "notes updated")
    }
    merger.removeHooks(for: Note.self, operation: .insert)
    merger.removeHook(logging)
  }

  static func mergerPruning(container: PersistentContainer) throws -> HistoryMerger.Options {
    var options = HistoryMerger.Options()
    options.pruning = HistoryMerger.Pruning(.consumed, .atMostEvery(.seconds(60)))
    try HistoryPruner(container: container).prune(.consumed, authors: ["app", "widget"])
    return options
  }

  static func pruning(container: PersistentContainer) throws -> StoreOptions {
    let report = try HistoryPruner(container: container).prune(.olderThan(.seconds(7 * 86_400)))
    print(report.deletedTransactions, report.horizon, report.heldBackBy, report.staleConsumers)

    var storeOptions = StoreOptions()
    storeOptions.automaticHistoryPruning = AutomaticHistoryPruning(.keepLast(100_000), afterCommits: 1_000)
    return storeOptions
  }
}

enum TypedIDsPage {
  static func example(context: isolated ManagedObjectContext, note: Note) throws -> Note {
    let id: ManagedID<Note> = note.managedID
    let again: Note = try context.existingObject(with: id)  // no cast
    return again
  }
}

// MARK: - docs/relationships.md

enum RelationshipsPage {
  typealias Folder = RelationshipsDoc.Folder
  typealias Note = RelationshipsDoc.Note
  typealias Attachment = RelationshipsDoc.Attachment

  static func links(note: Note, inbox: Folder, a: Note, b: Note) {
    note.folder = inbox  // inbox.notes.contains(note); the note left its old folder
    inbox.notes.remove(note)  // note.folder == nil
    inbox.notes = [a, b]  // a.folder === inbox, b.folder === inbox; the others left
  }

  static func helpers(folder: Folder, note: Note, file: Attachment) {
    folder.$notes.insert(note)  // Set: add
    folder.$notes.remove(note)  // Set: remove
    note.$attachments.append(file)  // ordered: add at the end (moves it if present)
    note.$attachments.insert(file, at: 0)
    note.$attachments.remove(file)
  }
}

// MARK: - Runs

@Suite struct DocPageExamplesTests {
  @Test func theQueriesPageReportRuns() throws {
    let container = try PersistentContainer.makeTest(model: shopModel)
    let (revenue, perCustomer) = try container.viewContext.performAndWait { context in
      let customer = Customer(context: context)
      for (total, owner) in [(Decimal(string: "0.1"), customer), (Decimal(string: "0.2"), customer), (1, nil)] {
        let order = Order(context: context)
        order.total = total ?? 0
        order.customer = owner
      }
      try context.save()
      let id = customer.managedID
      let result = try ReportsPage.revenue(context: context)
      return (result.0, [id: result.1[id], nil: result.1[nil]])
    }
    #expect(revenue == Decimal(string: "1.3"))
    #expect(
      perCustomer.values.compactMap { $0 }.sorted() == [Decimal(1), Decimal(string: "0.3")].compactMap { $0 }.sorted())
  }

  @Test func theReadmeExampleRuns() async throws {
    let url = PersistentContainer.testStoreURL()
    try PersistentContainer.destroyPersistentStore(at: url)
    #expect(try await ReadmePage.example(url: url) == "Draft")
  }

  @Test func theModelPageDeclaresAValidModel() throws {
    let model = try ModelPage.example()
    #expect(model.entity(for: ModelPage.Checklist.self)?.superentityName == "Note")
    _ = try ManagedObjectModel(ModelPage.Member.self)
    let customer = try #require(try ManagedObjectModel(ModelPage.Customer.self).entity(for: ModelPage.Customer.self))
    #expect(
      customer.attributes.map(\.columnName) == [
        "name", "address_street", "address_city", "address_postcode", "address_location_latitude",
        "address_location_longitude",
      ])
    #expect(customer.attribute(named: "address.location.latitude")?.compositeName == "address")
    #expect(customer.attributes.filter(\.isPreservedOnDeletion).count == 5)
  }

  @Test func theContainerPageExamplesRun() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let importer = Importer(container: container)
    #expect(try await importer.importTitles(["a", "b"]).count == 2)
    try await importer.watch()
    #expect(await importer.watchedTitles().sorted() == ["a", "b"])
    let reader = try ContainerPage.readOnly(model: notesModel, url: container.persistentStore.url)
    #expect(reader.persistentStore.options.isReadOnly)
  }

  @Test func theQueriesBatchHistoryAndIDPagesExamplesRun() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    let ids = try await saveNotes(["", "a"], in: container)
    try await container.newBackgroundContext().perform { context in
      let (count, blank, aggregates) = try QueriesPage.examples(context: context)
      #expect(count == 2 && blank == [ids[0]] && aggregates == 1)
      let note = try context.existingObject(with: ids[1])
      #expect(try TypedIDsPage.example(context: context, note: note) === note)
      #expect(try BatchPage.examples(context: context, ids: [ids[1]]) == [2, 1, 1, 1])
      try BatchPage.deletingWhatIsGone(context: context, ids: [ids[1]])  // deleted just now
    }
    try HistoryPage.changes(container: container)
    let (task, observation) = HistoryPage.notifications(container: container)
    task.cancel()
    withExtendedLifetime(observation) {}
  }

  @Test func theMergingPageExamplesRun() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    _ = try await saveNotes(["a"], in: container)
    let context = await MergingPage.automatic(container: container)
    let merger = try await MergingPage.consumer(container: container, context: context, index: MergingPage.Index())
    await merger.stop()
    let options = try MergingPage.pruning(container: container)
    #expect(options.automaticHistoryPruning != nil)
  }

  @Test func theQueriesPageActorsRun() async throws {
    let model = try ManagedObjectModel(ObservationPage.Folder.self, ObservationPage.Note.self)
    let observed = try PersistentContainer.makeTest(model: model)
    let id = try await observed.performBackgroundTask { context in
      let note = ObservationPage.Note(context: context)
      note.title = "watched"
      try context.save()
      return note.managedID
    }
    try await ObservationPage.example(context: observed.newBackgroundContext(), id: id)

    let container = try PersistentContainer.makeTest(model: notesModel, variant: "board")
    let noteID = try await saveNotes(["a"], in: container)[0]
    _ = try await QueriesPage.Board(container: container).start()
    _ = try QueriesPage.NoteWatcher(container: container, id: noteID)
  }
}

/// docs/lifecycle.md's and docs/queries.md's examples, compiled.
enum LifecycleDocExamples {
  final class Journal: ManagedObject {
    @Attribute var title: String = ""
    @Attribute var createdAt: Date? = nil
    @Attribute var modifiedAt: Date? = nil
    @Attribute var searchKey: String = ""

    override func awakeFromInsert() {
      super.awakeFromInsert()
      createdAt = Date()
    }

    override func awakeFromFetch() {
      super.awakeFromFetch()
      searchKey = title.lowercased()  // a cache: not a change, never saved by itself
    }

    override func willSave() {
      super.willSave()
      if isUpdated && !isDeleted { modifiedAt = Date() }
    }
  }

  final class Booking: ManagedObject {
    @Attribute var start: Int = 0
    @Attribute var end: Int = 0

    override func validateForInsert() throws {
      try super.validateForInsert()
      if end < start { throw BookingError.endsBeforeStart }
    }
  }

  enum GuestError: Error { case emptyName, tooManyGuests }

  final class Guest: ManagedObject {
    @Attribute(validate: { if $0.isEmpty { throw GuestError.emptyName } })
    var name: String = ""
    @Attribute(bounds: 1...4, validate: { if $0 == 3 { throw GuestError.tooManyGuests } })
    var party: Int = 1
  }

  static func validate(_ guest: Guest, input: String) throws {
    try guest.validateValue(input, for: \Guest.name)  // throws StoreError.validationFailed
  }

  final class Attachment: ManagedObject {
    override class var loadsForCascadeDelete: Bool { true }
    @Attribute var path: String = ""

    override func prepareForDeletion() {
      super.prepareForDeletion()
      try? FileManager.default.removeItem(atPath: path)
    }
  }

  static func relationshipValues(of book: Book, kitchen: Shelf) {
    book.shelf = kitchen
    let savedShelf = book.committedValue(for: \Book.shelf)  // Shelf??: the shelf it was saved on
    let moved = book.changedValues()["shelf"] as? Shelf?  // kitchen
    print(savedShelf as Any, moved as Any)
  }

  static func messages(context: isolated ManagedObjectContext) {
    let token = context.addObserver(for: ManagedObjectContext.ObjectsDidChangeMessage.self) { message in
      for note in message.updated(Note.self) {
        print(note.title, "was", note.changedValuesForCurrentEvent())  // the values before this event
      }
      print(message.inserted.count, message.deleted.count, message.refreshed.count)
    }
    context.removeObserver(token)
  }

  static func values(of booking: Booking) {
    booking.end = 7
    let saved = booking.committedValue(for: \Booking.end)  // the saved end, typed
    let changed = booking.changedValues()  // ["end": 7]
    let before = booking.committedValues(forKeys: ["end"])  // ["end": the saved end]
    print(saved ?? 0, changed, before)
  }

  static func helpers(context: isolated ManagedObjectContext) throws {
    let drafts = try Note.fetch(
      in: context, where: #Predicate { $0.title.contains("draft") }, sortBy: [SortDescriptor(\.title)])
    let newest = try Note.first(in: context, sortBy: [SortDescriptor(\.createdAt, order: .reverse)])
    let total = try Note.count(in: context)
    let first = try context.fetchFirst(Note.fetchRequest(where: #Predicate { $0.title == "Inbox" }))
    print(drafts.count, newest?.title ?? "", total, first?.title ?? "")
  }
}

// MARK: - docs/apple-models.md

enum AppleModelsPage {
  // The Shop fixture's generated classes (the test module has a Tag of its own).
  typealias Basket = ShopModel.Basket
  typealias BasketItem = ShopModel.BasketItem
  typealias GiftBasket = ShopModel.GiftBasket
  typealias Product = ShopModel.Product
  typealias Shopper = ShopModel.Shopper
  typealias Tag = ShopModel.Tag

  /// Not run: the page's path is relative to where the app runs.
  static func readWithoutClasses() throws -> ManagedObjectModel {
    let model = try ManagedObjectModel(contentsOf: URL(filePath: "Shop.xcdatamodeld"))
    return model
  }

  static func bind(bundleURL: URL, storeURL: URL) throws -> PersistentContainer {
    let model = try ManagedObjectModel(
      contentsOf: bundleURL,
      classes: [Basket.self, BasketItem.self, GiftBasket.self, Product.self, Shopper.self, Tag.self])
    let container = try PersistentContainer(name: "Shop", model: model, storeURL: storeURL)
    return container
  }

  static func printMismatches(bundleURL: URL, classes: [ManagedObject.Type]) {
    do {
      _ = try ManagedObjectModel(contentsOf: bundleURL, classes: classes)
    } catch let error as ModelFileError {
      if case .mismatches(let mismatches) = error.reason {
        for mismatch in mismatches { print(mismatch) }
      }
    } catch {
      print(error)
    }
  }

  static func migrate(bundleURL: URL, storeURL: URL) throws -> PersistentContainer {
    let plan = try MigrationPlan(
      bundle: bundleURL, order: ["Shop", "Shop 2", "Shop 3"],
      classes: [Basket.self, BasketItem.self, GiftBasket.self, Product.self, Shopper.self, Tag.self])
    let container = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: storeURL)
    return container
  }
}

@Suite struct AppleModelsPageTests {
  @Test func thePagesExamplesBindAndMigrate() throws {
    let url = try ModelFileMigrationTests.makeVersion1Store()
    let migrated = try AppleModelsPage.migrate(bundleURL: ModelFiles.shop, storeURL: url)
    #expect(try ModelFileMigrationTests.shoppers(migrated) == ["Ada|ada@example.com|0|1", "Bob|nil|0|1"])
    let bound = try AppleModelsPage.bind(bundleURL: ModelFiles.shop, storeURL: url)
    #expect(bound.managedObjectModel.entity(named: "Shopper") != nil)
    AppleModelsPage.printMismatches(bundleURL: ModelFiles.shop, classes: [ShopV1.Shopper.self])
  }
}
