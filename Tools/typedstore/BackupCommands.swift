import ArgumentParsing
import Foundation
import TypedStore

/// `typedstore backup` and `typedstore checkpoint`: a consistent copy of a live store, and the
/// write-ahead log folded into the store file.
enum BackupCommands {
  /// Copies the store with `PersistentStore.backup(to:asNewStore:)`: read-only on the store,
  /// whatever its writers do meanwhile.
  static func backup(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let output = try usage { try command.required("-o") }
    let store = try openStore(path)
    let asNewStore = command.flag("--new-store")
    let token = try perform("cannot back up \(path)") {
      try store.backup(to: URL(fileURLWithPath: output), asNewStore: asNewStore)
    }
    if command.flag("--json") {
      print(
        try Values.json([
          "store": path, "backup": output, "transaction": token.transactionNumber,
          "storeUUID": token.storeIdentifier.uuidString, "newStore": asNewStore,
        ]))
    } else {
      print(
        "backed up \(path) to \(output) through transaction \(token.transactionNumber)"
          + (asNewStore ? ", as a new store (UUID \(token.storeIdentifier.uuidString))" : ""))
    }
  }

  /// Copies the write-ahead log into the store file (`PersistentStore.checkpoint()`).
  static func checkpoint(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let store = try openStore(path, writable: true)
    let whole = try perform("cannot checkpoint \(path)") { try store.checkpoint() }
    guard store.url.isFileURL else {
      print("\(path) is a PostgreSQL store: it has no write-ahead log of its own, nothing to copy")
      return
    }
    print(
      whole
        ? "checkpointed \(path): the write-ahead log is in the store file"
        : "checkpointed \(path) in part: a reader still uses the newest transactions; run it again later")
  }
}
