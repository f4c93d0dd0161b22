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
  /// The process may not reach the store: `component` is the first folder on the way that it
  /// may not search (no `x` permission for its user, as a daemon user meets a `700` folder of
  /// another), or the store file itself when it may not read it. Whether a store is there is
  /// not known; nothing was opened or created.
  case permissionDenied(path: String, component: String)
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
  /// A backup's destination already exists; nothing was written (a backup never replaces a
  /// file).
  case destinationExists(path: String)
  /// A value an attribute cannot store faithfully (`Double.nan`, which SQLite stores as
  /// NULL). Nothing was written.
  case invalidValue(entity: String, attribute: String, reason: String)
  /// The file is an SQLite database, but not a TypedStore store.
  case notATypedStore(path: String)
  /// The file is damaged.
  case corrupt(path: String, message: String)
  /// The store was written with a newer or unknown file format.
  case unsupportedFormatVersion(found: Int, supported: Int)
  /// The store's model differs from the model given (its version hash and the model's), and
  /// the open may not migrate it: it is read-only, or
  /// `StoreOptions.shouldMigrateStoreAutomatically` is off. Nothing was changed.
  case modelMismatch(storeHash: String, modelHash: String)
  /// Another process migrated the store to another model while this one had it open: its
  /// version hash (`stored`) and the hash of the model this process runs. Every read and
  /// write of this process is refused from then on, before it reads or writes anything;
  /// restart the process with the version of the app that has the new model.
  ///
  /// ```swift
  /// do { try context.save() }
  /// catch StoreError.modelChanged { exit(75) }   // let the service manager restart the new build
  /// ```
  case modelChanged(stored: String, running: String)
  /// A save with the `.error` merge policy met objects whose rows another writer changed or
  /// deleted since they were read: every one of them, with the values on each side. Nothing
  /// was written.
  case mergeConflict([MergeConflict])
  /// A unique constraint refused the write.
  case uniqueConstraintViolation(entity: String, message: String)
  /// A save or batch delete would delete objects that a `.deny` relationship still relates
  /// to others: each denial names the object, the relationship and the objects that block
  /// it. Nothing was written.
  case deleteDenied([DeleteDenial])
  /// A save would link an object to a related object whose row is gone (another context or
  /// process deleted it after this context read it): the object, the relationship and the
  /// missing object. Nothing was written; refresh the object or link it elsewhere.
  case danglingReference(objectID: AnyManagedID, relationship: String, relatedID: AnyManagedID)
  /// A save with the `.error` merge policy (or any policy, for a conflict no policy merges)
  /// would give two rows the same values for a uniqueness constraint: every conflict, naming
  /// the constraint and both objects. Nothing was written.
  case uniquenessConflict([UniquenessConflict])
  /// A save met objects that break their model's rules (a required to-one that is nil, a
  /// to-many with too few or too many objects, a value out of bounds) or that their own
  /// validation rejected (`validateForInsert()`, `validateForUpdate()`,
  /// `validateForDelete()`): every failure, not only the first, as
  /// Core Data's multiple-validation error. Nothing was written.
  case validationFailed([ValidationFailure])
  /// SQLite reported an error.
  case sqlite(SQLiteError)
  /// The store URL's scheme names an engine this process has no library for: a
  /// `postgresql://` store needs the `TypedStorePostgreSQL` library linked (Core Data's
  /// `NSPersistentStoreInvalidTypeError`). Nothing was opened.
  case invalidStoreType(scheme: String)
  /// The operation works on store files only, and this store is another engine's (a
  /// PostgreSQL store has no file to back up or check page by page): what it is
  /// and what to do instead. Nothing was done.
  case unsupportedOperation(String)

  /// A sentence for logs and error messages.
  public var description: String {
    switch self {
    case .notADatabase(let path): "\(path) is not an SQLite database"
    case .isADirectory(let path): "\(path) is a directory, not a store file"
    case .notFound(let path): "there is no store at \(path)"
    case .permissionDenied(let path, let component) where component == path:
      "\(path) cannot be read by this process (permission denied)"
    case .permissionDenied(let path, let component):
      "\(path) cannot be reached by this process: it may not search the folder \(component) (permission denied)"
    case .notWritable(let path, let reason):
      "\(path) cannot be written by this process: \(reason)"
    case .readOnly(let path): "\(path) was opened read-only; nothing was written"
    case .damagedWAL(let path, let inspection):
      "the write-ahead log \(path)-wal is damaged: \(inspection). The files were left as they are: copy them "
        + "aside, then open with StoreOptions.opensDamagedWAL to keep what SQLite replays and lose the rest"
    case .storeInUse(let path): "\(path) is open in this process or another; close it before destroying it"
    case .destinationExists(let path): "\(path) already exists; a backup never replaces a file: choose another path"
    case .invalidValue(let entity, let attribute, let reason):
      "\(entity).\(attribute) cannot be saved: \(reason); nothing was written"
    case .notATypedStore(let path) where path.hasPrefix("PostgreSQL schema "):
      "\(path) holds other tables, not a TypedStore store"
    case .notATypedStore(let path): "\(path) is an SQLite database but not a TypedStore store"
    case .corrupt(let path, let message): "\(path) is damaged: \(message)"
    case .unsupportedFormatVersion(let found, let supported):
      "the store's format version \(found) is not supported (this build reads version \(supported))"
    case .modelMismatch(let stored, let given):
      "the store's model (hash \(stored.prefix(12))…) differs from the given model (hash \(given.prefix(12))…); "
        + "nothing was changed. Open it for writing with StoreOptions.shouldMigrateStoreAutomatically on to migrate "
        + "it (PersistentStore.migrationReport(forStoreAt:to:) says what that does), or with the model it was made with"
    case .modelChanged(let stored, let running):
      "another process migrated the store to another model (hash \(stored.prefix(12))…) while this process "
        + "runs the model with hash \(running.prefix(12))…; nothing was read or written. Restart the process "
        + "with the version of the app that has the new model"
    case .mergeConflict(let conflicts):
      "the save met \(conflicts.count) conflict(s), nothing was written: "
        + conflicts.map(\.description).joined(separator: "; ")
    case .uniqueConstraintViolation(let entity, let message):
      "a unique constraint of \(entity) refused the write: \(message)"
    case .deleteDenied(let denials):
      "the delete is denied, nothing was written: " + denials.map(\.description).joined(separator: "; ")
    case .danglingReference(let object, let relationship, let related):
      "\(object).\(relationship) names \(related), whose row is gone; nothing was written"
    case .uniquenessConflict(let conflicts):
      "\(conflicts.count) uniqueness conflict(s), nothing was written: "
        + conflicts.map(\.description).joined(separator: "; ")
    case .validationFailed(let failures):
      "\(failures.count) validation failure(s), nothing was written: "
        + failures.map(\.description).joined(separator: "; ")
    case .sqlite(let error): error.description
    case .invalidStoreType(let scheme):
      scheme == "postgresql" || scheme == "postgres"
        ? "a \(scheme):// store needs the TypedStorePostgreSQL library: add it to the target's dependencies"
        : "TypedStore has no store of type \(scheme) (a file URL opens SQLite, postgresql:// PostgreSQL)"
    case .unsupportedOperation(let message): message
    }
  }
}

extension StoreError {
  /// Runs `body`, whose errors name `resolved` (the file SQLite opens: `resolvedStorePath`),
  /// and throws them naming `given` instead (the path the caller gave, perhaps a symbolic
  /// link), so that every error of a store names the path its user knows.
  static func naming<T>(_ given: String, for resolved: String, _ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as StoreError where given != resolved {
      throw error.naming(given, for: resolved)
    }
  }

  private func naming(_ given: String, for resolved: String) -> StoreError {
    func name(_ path: String) -> String { path == resolved ? given : path }
    switch self {
    case .notADatabase(let path): return .notADatabase(path: name(path))
    case .isADirectory(let path): return .isADirectory(path: name(path))
    case .notFound(let path): return .notFound(path: name(path))
    case .permissionDenied(let path, let component): return .permissionDenied(path: name(path), component: component)
    case .notWritable(let path, let reason): return .notWritable(path: name(path), reason: reason)
    case .readOnly(let path): return .readOnly(path: name(path))
    case .damagedWAL(let path, let inspection): return .damagedWAL(path: name(path), inspection: inspection)
    case .storeInUse(let path): return .storeInUse(path: name(path))
    case .notATypedStore(let path): return .notATypedStore(path: name(path))
    case .corrupt(let path, let message): return .corrupt(path: name(path), message: message)
    default: return self
    }
  }
}
