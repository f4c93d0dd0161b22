import Foundation
import TypedStore
import TypedStorePostgreSQL

/// `pg-open-shop <url> <schema> <start, ms since 1970>`: waits for the start, then opens (or
/// creates) the Shop store's tables in `schema` on the PostgreSQL server at `url`, with the
/// bundle's current version; prints "created <uuid>" or "opened <uuid>".
func postgreSQLOpenShop(_ arguments: [String]) {
  guard arguments.count == 4, let start = Double(arguments[3]) else {
    fail("usage: pg-open-shop <url> <schema> <start>", code: 64)
  }
  do {
    let model = try ManagedObjectModel(contentsOf: shopBundle, classes: shopClasses)
    let tables = try PostgreSQLStoreTables(schema: arguments[2], model: model)
    let connection = try PostgreSQLConnection(url: arguments[1])
    let wait = start / 1000 - Date().timeIntervalSince1970
    if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
    let opened = try tables.open(on: connection)
    say("\(opened.created ? "created" : "opened") \(opened.identifier.uuidString)")
  } catch {
    fail("\(error)", code: 1)
  }
}

/// `pg-record <url> <schema> <author> <count>`: records `count` transactions, one insert of a
/// `Product` each (keys from 1), in the history of the store in `schema`, one after another;
/// prints "recorded <count>".
func postgreSQLRecord(_ arguments: [String]) {
  guard arguments.count == 5, let count = Int(arguments[4]) else {
    fail("usage: pg-record <url> <schema> <author> <count>", code: 64)
  }
  do {
    let history = try PostgreSQLHistory(schema: arguments[2])
    let connection = try PostgreSQLConnection(url: arguments[1])
    for index in 1...max(count, 1) where count > 0 {
      try connection.transaction {
        try history.record(
          [.init(kind: .insert, entity: "Product", primaryKey: Int64(index))], author: arguments[3], contextName: nil,
          on: connection)
      }
    }
    say("recorded \(count)")
  } catch {
    fail("\(error)", code: 1)
  }
}

/// `pg-save <url> <schema> <store uuid> <author> <count>`: saves `count` transactions through
/// the store's write path on PostgreSQL (`PostgreSQLStoreWriter`), each inserting an `Event`
/// (`source` the author, `sequence` its number) and adding one to the tally, the event of key 1,
/// at the version read before the transaction (a conflict with another writer is retried);
/// prints "saved <i>" after each and "retried <n>" at the end.
func postgreSQLSave(_ arguments: [String]) {
  guard arguments.count == 6, let identifier = UUID(uuidString: arguments[3]), let count = Int(arguments[5]) else {
    fail("usage: pg-save <url> <schema> <store uuid> <author> <count>", code: 64)
  }
  do {
    let model = try ManagedObjectModel(Event.self)
    guard let event = model.entity(named: "Event"), let url = URL(string: arguments[1]) else {
      fail("no Event entity", code: 70)
    }
    let store = PersistentStore(onAnotherEngineAt: url, identifier: identifier, model: model)
    let writer = try PostgreSQLStoreWriter(
      url: arguments[1], schema: arguments[2], store: store, lockTimeout: .seconds(30))
    let reader = try PostgreSQLConnection(url: arguments[1])
    try reader.use(schema: arguments[2])
    let slots = event.storedAttributes.map(\.name)
    guard let sequenceSlot = slots.firstIndex(of: "sequence") else { fail("no sequence", code: 70) }
    var retried = 0
    for index in 1...max(count, 1) where count > 0 {
      while true {
        let tally = try reader.statement("SELECT _version, sequence FROM \"Event\" WHERE pk = 1")
        guard try tally.step() else { fail("no tally", code: 70) }
        let (version, sequence) = (tally.int64(0), tally.int64(1))
        tally.reset()
        var changes = RowWrites()
        let values: [PrimitiveValue] = slots.map { $0 == "source" ? .text(arguments[4]) : .integer(Int64(index)) }
        changes.inserts = [RowWrites.Insert(entityIndex: event.index, primaryKey: nil, values: values)]
        changes.updates = [
          RowWrites.Update(
            entityIndex: event.index, primaryKey: 1, version: version, slots: [Int32(sequenceSlot)],
            values: [.integer(sequence + 1)])
        ]
        do {
          _ = try writer.write(changes, info: TransactionInfo(author: arguments[4]))
          break
        } catch StoreError.mergeConflict {
          retried += 1
        }
      }
      say("saved \(index)")
    }
    say("retried \(retried)")
  } catch {
    fail("\(error)", code: 1)
  }
}

/// `pg-container <store url> <author> <count>`: opens the Event store at the `postgresql://`
/// URL as an application does (`PersistentContainer(name:model:storeURL:)`, this library found
/// by its name), then saves `count` times from a context: an `Event` (`source` the author,
/// `sequence` its number) each, and one more to the tally, the event whose `source` is
/// "tally", merging a conflict by the store's values (`mergeByPropertyStoreTrump`) and saving
/// again; prints "opened" and "saved <i>" after each.
func postgreSQLContainer(_ arguments: [String]) {
  guard arguments.count == 4, let url = URL(string: arguments[1]), let count = Int(arguments[3]) else {
    fail("usage: pg-container <store url> <author> <count>", code: 64)
  }
  do {
    let container = try PersistentContainer(name: "Events", model: ManagedObjectModel(Event.self), storeURL: url)
    say("opened")
    let context = container.newModelContext(name: arguments[2])
    context.transactionAuthor = arguments[2]
    for index in 1...max(count, 1) where count > 0 {
      while true {
        let tally = try context.fetch(FetchRequest<Event>(predicate: #Predicate { $0.source == "tally" }))
        guard let tally = tally.first else { fail("no tally", code: 70) }
        let event = Event(context: context)
        event.source = arguments[2]
        event.sequence = index
        tally.sequence += 1
        do {
          try context.save()
          break
        } catch StoreError.mergeConflict {
          context.rollback()
          context.refreshAllObjects()
        }
      }
      say("saved \(index)")
    }
  } catch {
    fail("\(error)", code: 1)
  }
}
