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
