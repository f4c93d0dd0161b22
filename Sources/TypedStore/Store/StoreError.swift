import Foundation

/// An error opening or writing a store.
///
/// ```swift
/// do { _ = try PersistentContainer(name: "Notes", model: model, storeURL: url) }
/// catch StoreError.modelMismatch(let stored, let given) { print("migrate from \(stored) to \(given)") }
/// ```
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The file is not an SQLite database at all.
  case notADatabase(path: String)
  /// The path names a directory, not a store file.
  case isADirectory(path: String)
  /// There is no store at the path (a read-only open does not create one), or the folder
  /// that should hold it does not exist.
  case notFound(path: String)
  /// The process cannot write the store: the file, or the folder SQLite keeps its `-wal` and
  /// `-shm` files in, is not writable. Open it with `StoreOptions.isReadOnly` to read it. A
  /// read-only open reports it too when SQLite cannot create the `-shm` file it needs to read
  /// a WAL store (see `reason`).
  case notWritable(path: String, reason: String)
  /// A write (a save, a batch request, a history deletion) to a store opened read-only.
  /// Nothing was written.
  case readOnly(path: String)
  /// The store's write-ahead log holds committed transactions SQLite would not replay (a
  /// damaged header or frame). Every file was left as it was; see `WALInspection`.
  case damagedWAL(path: String, inspection: WALInspection)
  /// The store cannot be destroyed: a connection, in this process or another, has it open.
  case storeInUse(path: String)
  /// A value an attribute cannot store faithfully (`Double.nan`, which SQLite stores as
  /// NULL). Nothing was written.
  case invalidValue(entity: String, attribute: String, reason: String)
  /// The file is an SQLite database, but not a TypedStore store.
  case notATypedStore(path: String)
  /// The file is damaged.
  case corrupt(path: String, message: String)
  /// The store was written with a newer or unknown file format.
  case unsupportedFormatVersion(found: Int, supported: Int)
  /// The store's model differs from the model given: its version hash and the model's.
  case modelMismatch(storeHash: String, modelHash: String)
  /// A save with the `.error` merge policy met objects whose rows another writer changed or
  /// deleted since they were read: every one of them, with the values on each side. Nothing
  /// was written.
  case mergeConflict([MergeConflict])
  /// A unique constraint refused the write.
  case uniqueConstraintViolation(entity: String, message: String)
  /// SQLite reported an error.
  case sqlite(SQLiteError)

  public var description: String {
    switch self {
    case .notADatabase(let path): "\(path) is not an SQLite database"
    case .isADirectory(let path): "\(path) is a directory, not a store file"
    case .notFound(let path): "there is no store at \(path)"
    case .notWritable(let path, let reason):
      "\(path) cannot be written by this process: \(reason)"
    case .readOnly(let path): "\(path) was opened read-only; nothing was written"
    case .damagedWAL(let path, let inspection):
      "the write-ahead log \(path)-wal is damaged: \(inspection). The files were left as they are: copy them "
        + "aside, then open with StoreOptions.opensDamagedWAL to keep what SQLite replays and lose the rest"
    case .storeInUse(let path): "\(path) is open in this process or another; close it before destroying it"
    case .invalidValue(let entity, let attribute, let reason):
      "\(entity).\(attribute) cannot be saved: \(reason); nothing was written"
    case .notATypedStore(let path): "\(path) is an SQLite database but not a TypedStore store"
    case .corrupt(let path, let message): "\(path) is damaged: \(message)"
    case .unsupportedFormatVersion(let found, let supported):
      "the store's format version \(found) is not supported (this build reads version \(supported))"
    case .modelMismatch(let stored, let given):
      "the store's model (hash \(stored.prefix(12))…) differs from the given model (hash \(given.prefix(12))…)"
    case .mergeConflict(let conflicts):
      "the save met \(conflicts.count) conflict(s), nothing was written: "
        + conflicts.map(\.description).joined(separator: "; ")
    case .uniqueConstraintViolation(let entity, let message):
      "a unique constraint of \(entity) refused the write: \(message)"
    case .sqlite(let error): error.description
    }
  }
}
