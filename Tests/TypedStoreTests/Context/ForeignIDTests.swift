import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

// An ID reaches the one row it names, or the call throws a `ManagedIDError` that names the ID
// and why, and nothing is written, deleted or registered for it. Each test runs against two
// stores of one model holding the same rows (notes 1…5, a checklist, a deleted note, a
// folder), uses store B, and compares every row of both files (history and metadata included)
// before and after.

/// The kinds of ID that name no row of store B.
enum BadID: String, CaseIterable, Sendable {
  /// A note of store A.
  case anotherStore
  /// An unsaved note of another context of store B.
  case temporaryOfAnotherContext
  /// A temporary ID another process made, decoded from its URI.
  case temporaryOfAnotherProcess
  /// A note of store B that was deleted.
  case deletedRow
  /// A folder of store B, passed as a `ManagedID<Note>` (decoded before the store was open).
  case anotherEntity
  /// Note 1 of store B under a URI that says it is a checklist.
  case rowOfAnotherEntity

  /// The kinds a predicate can meet: an ID whose entity is not the row's is left to the
  /// predicate translator's own rules.
  static let inPredicates: [BadID] = [
    .anotherStore, .temporaryOfAnotherContext, .temporaryOfAnotherProcess, .deletedRow,
  ]
}

/// Two stores of one model with the same rows, and an unsaved note in another context of B.
struct TwoStores {
  let a: PersistentContainer
  let b: PersistentContainer
  let aNotes: [ManagedID<Note>]
  let bNotes: [ManagedID<Note>]
  let bChecklist: ManagedID<Checklist>
  let bDeleted: ManagedID<Note>
  let bFolder: ManagedID<Folder>
  /// A context of B that holds one inserted note, not saved: what `bTemporary` names.
  let bOther: ManagedObjectContext
  let bTemporary: ManagedID<Note>

  static func make(_ variant: String = "", function: String = #function) async throws -> TwoStores {
    let a = try PersistentContainer.makeTest(model: notesModel, variant: "\(variant)-a", function: function)
    let b = try PersistentContainer.makeTest(model: notesModel, variant: "\(variant)-b", function: function)
    let (aNotes, _, _, _) = try await fill(a)
    let (bNotes, bChecklist, bDeleted, bFolder) = try await fill(b)
    let other = b.newBackgroundContext()
    let temporary = await other.perform { context in
      let note = Note(context: context)
      note.title = "unsaved"
      return note.managedID
    }
    return TwoStores(
      a: a, b: b, aNotes: aNotes, bNotes: bNotes, bChecklist: bChecklist, bDeleted: bDeleted, bFolder: bFolder,
      bOther: other, bTemporary: temporary)
  }

  private static func fill(_ container: PersistentContainer) async throws -> (
    [ManagedID<Note>], ManagedID<Checklist>, ManagedID<Note>, ManagedID<Folder>
  ) {
    try await container.performBackgroundTask { context in
      let notes = (1...5).map { index in
        let note = Note(context: context)
        note.title = "note \(index)"
        note.createdAt = Date(timeIntervalSinceReferenceDate: Double(index))
        return note
      }
      let list = Checklist(context: context)
      list.title = "list"
      list.itemCount = 3
      let doomed = Note(context: context)
      doomed.title = "doomed"
      let folder = Folder(context: context)
      folder.name = "inbox"
      try context.save()
      let ids = (notes.map(\.managedID), list.managedID, doomed.managedID, folder.managedID)
      context.delete(doomed)
      try context.save()
      return ids
    }
  }

  /// An ID of `kind`, typed as a note, and the error it must meet in store B.
  func bad(_ kind: BadID) throws -> (id: ManagedID<Note>, error: ManagedIDError) {
    let store = b.persistentStore.identifier
    switch kind {
    case .anotherStore:
      return (aNotes[0], .foreignStore(id: aNotes[0].description, expected: store))
    case .temporaryOfAnotherContext:
      return (bTemporary, .temporaryID(bTemporary.description))
    case .temporaryOfAnotherProcess:
      let nonce = String(UInt64.random(in: 1...UInt64.max), radix: 16)
      let id = try ManagedID<Note>(validating: URL(string: "typedstore://\(store.uuidString)/Note/t\(nonce)-1")!)
      return (id, .temporaryID(id.description))
    case .deletedRow:
      return (bDeleted, .noSuchRow(bDeleted.description))
    case .anotherEntity:
      let id = ManagedID<Note>(
        unchecked: AnyManagedID(storeIdentifier: store, entityName: "Folder", key: .permanent(bFolder.primaryKey!)))
      return (id, .entityMismatch(id: id.description, expected: "Note", found: "Folder"))
    case .rowOfAnotherEntity:
      let id = try ManagedID<Note>(
        validating: URL(string: "typedstore://\(store.uuidString)/Checklist/p\(bNotes[0].primaryKey!)")!)
      return (id, .entityMismatch(id: id.description, expected: "Checklist", found: "Note"))
    }
  }

  /// Every row of both store files.
  func rows() throws -> [[String: [String]]] {
    [try storeRows(a), try storeRows(b)]
  }

  /// Keeps the context that holds the unsaved note until here.
  func end() async {
    _ = await bOther.perform { $0.hasChanges }
  }
}

/// Every row of every table of a store's file — entities, links, history, consumers and
/// metadata — each as SQLite quotes its values.
func storeRows(_ container: PersistentContainer) throws -> [String: [String]] {
  try storeRows(path: container.persistentStore.url.path)
}

/// Every row of every table of the store file at `path`, read with SQLite alone.
func storeRows(path: String) throws -> [String: [String]] {
  let connection = try SQLiteConnection(path: path, mode: .readOnly)
  func strings(_ sql: String, _ argument: String? = nil) throws -> [String] {
    let statement = try connection.statement(sql)
    defer { statement.reset() }
    if let argument { statement.bind(argument, at: 1) }
    var values: [String] = []
    while try statement.step() { values.append(statement.string(0)) }
    return values
  }
  var rows: [String: [String]] = [:]
  for table in try strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
    let columns = try strings("SELECT name FROM pragma_table_info(?)", table)
    let row = columns.map { "quote(\"\($0)\")" }.joined(separator: " || '|' || ")
    rows[table] = try strings("SELECT \(row) FROM \"\(table)\" ORDER BY 1")
  }
  return rows
}

@Suite struct ForeignIDTests {
  // MARK: - Batch requests by ID

  @Test("batch delete with another store's IDs throws foreignStore and deletes nothing")
  func batchDeleteWithAnotherStoresIDs() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let ids = stores.aNotes
    let error = await stores.b.viewContext.perform { context in
      #expect(throws: ManagedIDError.self) { try context.execute(BatchDeleteRequest(objectIDs: ids)) }
    }
    #expect(error == .foreignStore(id: ids[0].description, expected: stores.b.persistentStore.identifier))
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test("batch update with another store's IDs throws foreignStore and updates nothing")
  func batchUpdateWithAnotherStoresIDs() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let ids = stores.aNotes
    let error = await stores.b.viewContext.perform { context in
      #expect(throws: ManagedIDError.self) {
        try context.execute(BatchUpdateRequest(objectIDs: ids, propertiesToUpdate: [.set(\.title, "rewritten")]))
      }
    }
    #expect(error == .foreignStore(id: ids[0].description, expected: stores.b.persistentStore.identifier))
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test(
    "batch delete with an ID that names no row here, among IDs that do, throws and deletes nothing",
    arguments: BadID.allCases)
  func batchDeleteWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, expected) = try stores.bad(kind)
    let ids = [stores.bNotes[1], stores.bNotes[2], bad]
    let before = try stores.rows()
    let error = await stores.b.viewContext.perform { context in
      #expect(throws: ManagedIDError.self) { try context.execute(BatchDeleteRequest(objectIDs: ids)) }
    }
    #expect(error == expected)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test(
    "batch update with an ID that names no row here, among IDs that do, throws and updates nothing",
    arguments: BadID.allCases)
  func batchUpdateWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, expected) = try stores.bad(kind)
    let ids = [stores.bNotes[1], stores.bNotes[2], bad]
    let before = try stores.rows()
    let error = await stores.b.viewContext.perform { context in
      #expect(throws: ManagedIDError.self) {
        var request = BatchUpdateRequest(objectIDs: ids, propertiesToUpdate: [.set(\.title, "rewritten")])
        request.returnsObjectIDs = true
        return try context.execute(request)
      }
    }
    #expect(error == expected)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test("a batch request with a temporary ID of its own context throws temporaryID and writes nothing")
  func batchRequestWithItsOwnTemporaryID() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let known = stores.bNotes[0]
    let (deleteError, updateError, temporary) = await stores.b.viewContext.perform { context in
      let note = Note(context: context)
      let ids = [known, note.managedID]
      let deleteError = #expect(throws: ManagedIDError.self) { try context.execute(BatchDeleteRequest(objectIDs: ids)) }
      let updateError = #expect(throws: ManagedIDError.self) {
        try context.execute(BatchUpdateRequest(objectIDs: ids, propertiesToUpdate: [.set(\.title, "x")]))
      }
      let temporary = note.managedID
      context.rollback()
      return (deleteError, updateError, temporary)
    }
    #expect(deleteError == .temporaryID(temporary.description))
    #expect(updateError == .temporaryID(temporary.description))
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test("batch delete with a subentity's ID through its parent's request deletes exactly that row")
  func batchDeleteOfASubentityThroughItsParent() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let asNote = try ManagedID<Note>(validating: stores.bChecklist.untyped)
    let (result, remaining) = try await stores.b.viewContext.perform { context in
      var request = BatchDeleteRequest<Note>(objectIDs: [asNote])
      request.returnsObjectIDs = true
      let result = try context.execute(request)
      return (result, try context.fetchObjectIDs(for: FetchRequest<Note>()))
    }
    #expect(result.count == 1)
    #expect(result.objectIDs == [asNote])
    #expect(Set(remaining) == Set(stores.bNotes))
    let after = try stores.rows()
    #expect(after[0] == before[0])
    #expect(after[1]["Note"] == before[1]["Note"]?.filter { !$0.hasPrefix("\(stores.bChecklist.primaryKey!)|") })
    #expect(after[1]["Folder"] == before[1]["Folder"])
    await stores.end()
  }

  @Test("batch update with a subentity's ID through its parent's request updates exactly that row")
  func batchUpdateOfASubentityThroughItsParent() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let asNote = try ManagedID<Note>(validating: stores.bChecklist.untyped)
    let titles = try await stores.b.newBackgroundContext().perform { context in
      let result = try context.execute(
        BatchUpdateRequest<Note>(objectIDs: [asNote], propertiesToUpdate: [.set(\.title, "renamed")]))
      #expect(result.count == 1)
      return try context.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    }
    #expect(titles == ["note 1", "note 2", "note 3", "note 4", "note 5", "renamed"])
    let after = try stores.rows()
    #expect(after[0] == before[0])
    let untouched = { (rows: [String]?) in rows?.filter { !$0.hasPrefix("\(stores.bChecklist.primaryKey!)|") } }
    #expect(untouched(after[1]["Note"]) == untouched(before[1]["Note"]))
    await stores.end()
  }

  @Test("a batch request that leaves out subentities throws entityMismatch for a subentity's ID")
  func batchRequestWithoutSubentitiesAndASubentitysID() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let asNote = try ManagedID<Note>(validating: stores.bChecklist.untyped)
    let (deleteError, updateError) = await stores.b.viewContext.perform { context in
      var delete = BatchDeleteRequest<Note>(objectIDs: [asNote])
      delete.includesSubentities = false
      var update = BatchUpdateRequest<Note>(objectIDs: [asNote], propertiesToUpdate: [.set(\.title, "x")])
      update.includesSubentities = false
      return (
        #expect(throws: ManagedIDError.self) { try context.execute(delete) },
        #expect(throws: ManagedIDError.self) { try context.execute(update) }
      )
    }
    let expected = ManagedIDError.entityMismatch(id: asNote.description, expected: "Note", found: "Checklist")
    #expect(deleteError == expected)
    #expect(updateError == expected)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  // MARK: - Objects by ID

  @Test(
    "object(with:) given an ID that names no row here throws, registers nothing, and a save writes no phantom row",
    arguments: BadID.allCases.filter { $0 != .anotherStore })
  func objectWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, expected) = try stores.bad(kind)
    let before = try stores.rows()
    let (error, registered) = await stores.b.newBackgroundContext().perform { context in
      context.mergePolicy = .overwrite
      let error = #expect(throws: ManagedIDError.self) {
        let note = try context.object(with: bad)
        note.title = "phantom"
        try context.save()
      }
      return (error, context.registeredObjects.count)
    }
    #expect(error == expected)
    #expect(registered == 0)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  // Before the fix this was a `preconditionFailure`: the test process stopped.
  @Test("object(with:) given another store's ID throws foreignStore and registers nothing")
  func objectWithAnotherStoresID() async throws {
    let stores = try await TwoStores.make()
    let (bad, expected) = try stores.bad(.anotherStore)
    let before = try stores.rows()
    let (error, registered) = await stores.b.newBackgroundContext().perform { context in
      (#expect(throws: ManagedIDError.self) { try context.object(with: bad) }, context.registeredObjects.count)
    }
    #expect(error == expected)
    #expect(registered == 0)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test(
    "existingObject(with:) given an ID that names no row here throws and registers nothing", arguments: BadID.allCases)
  func existingObjectWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, expected) = try stores.bad(kind)
    let before = try stores.rows()
    let (error, registered) = await stores.b.newBackgroundContext().perform { context in
      (#expect(throws: ManagedIDError.self) { try context.existingObject(with: bad) }, context.registeredObjects.count)
    }
    #expect(error == expected)
    #expect(registered == 0)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test(
    "registeredObject(for:) throws for an ID that cannot name an object here, and is nil for a deleted row",
    arguments: BadID.allCases)
  func registeredObjectWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, expected) = try stores.bad(kind)
    let first = stores.bNotes[0]
    let before = try stores.rows()
    let (outcome, registered) = await stores.b.newBackgroundContext().perform { context in
      _ = try? context.existingObject(with: first)  // what `.rowOfAnotherEntity` names under another entity
      let outcome = Result { () throws(ManagedIDError) in try context.registeredObject(for: bad)?.title }
      return (outcome, context.registeredObjects.count)
    }
    // No I/O: a deleted row is simply not registered.
    #expect(outcome == (kind == .deletedRow ? .success(nil) : .failure(expected)))
    #expect(registered == 1)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test("a temporary ID resolves in the context that made it, and throws temporaryID there once its object is saved")
  func temporaryIDInItsOwnContext() async throws {
    let stores = try await TwoStores.make()
    let (same, savedError, existingError) = try await stores.b.newBackgroundContext().perform { context in
      let note = Note(context: context)
      note.title = "mine"
      let id = note.managedID
      let same =
        try context.object(with: id) === note && context.existingObject(with: id) === note
        && context.registeredObject(for: id) === note
      try context.save()
      return (
        same, #expect(throws: ManagedIDError.self) { try context.object(with: id) },
        #expect(throws: ManagedIDError.self) { try context.existingObject(with: id) }
      )
    }
    #expect(same)
    if case .temporaryID = savedError {
    } else {
      Issue.record("expected temporaryID, got \(String(describing: savedError))")
    }
    #expect(existingError == savedError)
    await stores.end()
  }

  @Test("an ID of a subentity reaches its row through its parent's type, as an object of the subentity")
  func subentityIDThroughItsParentsType() async throws {
    let stores = try await TwoStores.make()
    let asNote = try ManagedID<Note>(validating: stores.bChecklist.untyped)
    let (fault, loaded) = try await stores.b.newBackgroundContext().perform { context in
      let fault = try context.object(with: asNote)
      let faultIsChecklist = fault is Checklist
      let loaded = try context.existingObject(with: asNote)
      return (faultIsChecklist, (loaded as? Checklist)?.itemCount)
    }
    #expect(fault)
    #expect(loaded == 3)
    await stores.end()
  }

  @Test("a ModelContext refuses IDs that name no row here as a context does", arguments: BadID.allCases)
  func modelContextWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, expected) = try stores.bad(kind)
    let before = try stores.rows()
    let context = stores.b.newModelContext()
    #expect(throws: expected) { try context.existingObject(with: bad) }
    #expect(throws: expected) { try context.object(with: bad) }
    #expect(throws: expected) { try context.execute(BatchDeleteRequest(objectIDs: [bad])) }
    #expect(context.registeredObjects.isEmpty)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  // MARK: - Predicates by ID

  @Test(
    "a predicate comparing with an ID that names no row here matches none, in fetches and batch requests",
    arguments: BadID.inPredicates)
  func predicateWithABadID(_ kind: BadID) async throws {
    let stores = try await TwoStores.make(kind.rawValue)
    let (bad, _) = try stores.bad(kind)
    let known = stores.bNotes[1]
    let before = try stores.rows()
    let (stored, inMemory, counted, ids, deleted, updated) = try await stores.b.newBackgroundContext().perform {
      context in
      let one = FetchRequest<Note>(predicate: #Predicate { $0.managedID == bad })
      let list = [known, bad]
      let either = FetchRequest<Note>(predicate: #Predicate { list.contains($0.managedID) })
      let stored = try context.fetch(one).count + 10 * context.fetch(either).count
      let counted = try context.count(for: one)
      let ids = try context.fetchObjectIDs(for: one)
      let deleted = try context.execute(BatchDeleteRequest<Note>(predicate: #Predicate { $0.managedID == bad })).count
      let updated = try context.execute(
        BatchUpdateRequest<Note>(
          predicate: #Predicate { $0.managedID == bad }, propertiesToUpdate: [.set(\.title, "x")])
      ).count
      // An unsaved insert makes the fetch evaluate the predicate in Swift: the same answer.
      let pending = Note(context: context)
      pending.title = "pending"
      let inMemory = try context.fetch(one).count + 10 * context.fetch(either).count
      context.rollback()
      return (stored, inMemory, counted, ids, deleted, updated)
    }
    #expect(stored == 10)  // none for the bad ID alone, the known note for the list
    #expect(inMemory == 10)
    #expect(counted == 0)
    #expect(ids.isEmpty)
    #expect(deleted == 0)
    #expect(updated == 0)
    #expect(try stores.rows() == before)
    await stores.end()
  }

  // MARK: - History and merging

  @Test("history requests, deletions and prunes with another store's tokens throw foreignStore and change nothing")
  func historyWithAnotherStoresTokens() async throws {
    let stores = try await TwoStores.make()
    let before = try stores.rows()
    let foreign = try stores.a.currentHistoryToken
    let own = try stores.b.currentHistoryToken
    let expected = HistoryError.foreignStore(
      expected: stores.b.persistentStore.identifier, found: foreign.storeIdentifier)
    #expect(throws: expected) { try stores.b.fetchHistory(HistoryRequest(after: foreign)) }
    #expect(throws: expected) { try stores.b.fetchHistory(HistoryRequest(after: own, through: foreign)) }
    #expect(throws: expected) { try stores.b.deleteHistory(before: foreign) }
    #expect(throws: expected) { try HistoryPruner(container: stores.b).prune(.before(foreign)) }
    #expect(try stores.rows() == before)
    await stores.end()
  }

  @Test("a history request for an entity the store's model lacks throws invalidRequest")
  func historyRequestForAnEntityTheModelLacks() async throws {
    let stores = try await TwoStores.make()
    var request = HistoryRequest()
    request.entities = [Shelf.self]
    let error = #expect(throws: HistoryError.self) { try stores.b.fetchHistory(request) }
    guard case .invalidRequest(let message)? = error else {
      Issue.record("expected invalidRequest, got \(String(describing: error))")
      return
    }
    #expect(message.contains("Shelf"))
    await stores.end()
  }

  @Test("merging another store's changes into a context changes none of its objects")
  func mergingAnotherStoresChanges() async throws {
    let stores = try await TwoStores.make()
    let start = try stores.a.currentHistoryToken
    let aFirst = stores.aNotes[0]
    try await stores.a.performBackgroundTask { context in
      context.delete(try context.existingObject(with: aFirst))
      try context.save()
    }
    let transactions = try stores.a.fetchHistory(HistoryRequest(after: start))
    let bFirst = stores.bNotes[0]
    let (fromChanges, fromTransaction, title) = try await stores.b.newBackgroundContext().perform { context in
      let note = try context.existingObject(with: bFirst)
      let fromChanges = context.mergeChanges(StoreChanges(transactions[0]))
      let fromTransaction = context.mergeChanges(StoreChanges(transactions[0]))
      return (fromChanges, fromTransaction, note.isDeleted ? nil : note.title)
    }
    #expect(fromChanges == MergeResult())
    #expect(fromTransaction == MergeResult())
    #expect(title == "note 1")
    await stores.end()
  }

  // MARK: - Objects of another context or store

  @Test("assigning an object of another context to a relationship stops the program, naming both, and saves nothing")
  func relationshipToAnObjectOfAnotherContext() async throws {
    let url = PersistentContainer.testStoreURL(variant: "other-context", function: "foreignIDLinks")
    let before = try await Self.makeShelfAndBook(at: url)
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let url = PersistentContainer.testStoreURL(variant: "other-context", function: "foreignIDLinks")
      let container = try PersistentContainer(name: "Test", model: graphModel, storeURL: url)
      let one = container.newModelContext()
      let two = container.newModelContext()
      let shelf = try one.fetch(FetchRequest<Shelf>())[0]
      let book = try two.fetch(FetchRequest<Book>())[0]
      book.shelf = shelf
      try two.save()
      try one.save()
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    if preconditionMessagesArePrinted {  // -O builds trap without the message
      #expect(message.contains("another context"))
      #expect(message.contains("/Shelf/p1"))
      #expect(message.contains("/Book/p1"))
    }
    #expect(try Self.rows(at: url) == before)
  }

  @Test("assigning an object of another store to a relationship stops the program, naming both, and saves nothing")
  func relationshipToAnObjectOfAnotherStore() async throws {
    let url = PersistentContainer.testStoreURL(variant: "store-b", function: "foreignIDLinks")
    let otherURL = PersistentContainer.testStoreURL(variant: "store-a", function: "foreignIDLinks")
    let before = try await Self.makeShelfAndBook(at: url)
    let otherBefore = try await Self.makeShelfAndBook(at: otherURL)
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let url = PersistentContainer.testStoreURL(variant: "store-b", function: "foreignIDLinks")
      let otherURL = PersistentContainer.testStoreURL(variant: "store-a", function: "foreignIDLinks")
      let container = try PersistentContainer(name: "Test", model: graphModel, storeURL: url)
      let other = try PersistentContainer(name: "Test", model: graphModel, storeURL: otherURL)
      let context = container.newModelContext()
      let otherContext = other.newModelContext()
      let book = try context.fetch(FetchRequest<Book>())[0]
      book.$tags.insert(try otherContext.fetch(FetchRequest<Topic>())[0])
      try context.save()
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    if preconditionMessagesArePrinted {  // -O builds trap without the message
      #expect(message.contains("another store"))
      #expect(message.contains("/Topic/p1"))
    }
    #expect(try Self.rows(at: url) == before)
    #expect(try Self.rows(at: otherURL) == otherBefore)
  }

  @Test("deleting an object of another context stops the program, naming it, and deletes nothing")
  func deletingAnObjectOfAnotherContext() async throws {
    let url = PersistentContainer.testStoreURL(variant: "delete", function: "foreignIDLinks")
    let before = try await Self.makeShelfAndBook(at: url)
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let url = PersistentContainer.testStoreURL(variant: "delete", function: "foreignIDLinks")
      let container = try PersistentContainer(name: "Test", model: graphModel, storeURL: url)
      let one = container.newModelContext()
      let two = container.newModelContext()
      two.delete(try one.fetch(FetchRequest<Book>())[0])
      try two.save()
      try one.save()
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    if preconditionMessagesArePrinted {  // -O builds trap without the message
      #expect(message.contains("another context"))
      #expect(message.contains("/Book/p1"))
    }
    #expect(try Self.rows(at: url) == before)
  }

  /// A store with one shelf, one book and one topic, and its rows.
  private static func makeShelfAndBook(at url: URL) async throws -> [String: [String]] {
    try PersistentContainer.destroyPersistentStore(at: url)
    let container = try PersistentContainer(name: "Test", model: graphModel, storeURL: url)
    try await container.performBackgroundTask { context in
      Shelf(context: context).name = "shelf"
      Book(context: context).title = "book"
      Topic(context: context).label = "topic"
      try context.save()
    }
    return try storeRows(container)
  }

  private static func rows(at url: URL) throws -> [String: [String]] {
    try storeRows(path: url.path)
  }
}
