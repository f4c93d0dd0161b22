import ArgumentParsing
import Foundation
import TypedStore

/// Why a command did not succeed, and the exit status that says so: 1 a failure (including a
/// check that found problems), 2 a usage error, 3 a store that cannot be opened.
enum Failure: Error {
  case usage(UsageError)
  case storeUnavailable(String)
  case failed(String)

  var exitCode: Int32 {
    switch self {
    case .failed: 1
    case .usage: 2
    case .storeUnavailable: 3
    }
  }

  /// The one line printed on stderr (a usage error adds its usage line).
  var message: String {
    switch self {
    case .usage(let error): error.usage.isEmpty ? error.message : "\(error.message)\n\(error.usage)"
    case .storeUnavailable(let message), .failed(let message): message
    }
  }
}

/// Writes one line to stderr.
func printError(_ line: String) {
  FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Opens the store at `path` with the model it keeps: read-only unless `writable`. Every error
/// opening it is `Failure.storeUnavailable`, with the library's explanation.
func openStore(_ path: String, writable: Bool = false) throws(Failure) -> PersistentStore {
  try opening(path, writable: writable) { try PersistentStore(url: $0, options: $1) }
}

/// The container form of `openStore`, for commands that follow changes.
func openContainer(_ path: String, writable: Bool = false) throws(Failure) -> PersistentContainer {
  try opening(path, writable: writable) { try PersistentContainer(storeURL: $0, options: $1) }
}

private func opening<T>(_ path: String, writable: Bool, _ open: (URL, StoreOptions) throws -> T) throws(Failure)
  -> T
{
  var options = StoreOptions()
  options.isReadOnly = !writable
  do {
    return try open(storeURL(path), options)
  } catch {
    throw .storeUnavailable("cannot open \(path): \(error)")
  }
}

/// The URL of a store the user named: a `postgresql://` URL as it is (TypedStorePostgreSQL is
/// linked into this tool), anything else a file's path.
func storeURL(_ path: String) -> URL {
  let lowercased = path.lowercased()
  if lowercased.hasPrefix("postgresql://") || lowercased.hasPrefix("postgres://"), let url = URL(string: path) {
    return url
  }
  return URL(fileURLWithPath: path)
}

/// Runs library work, turning its errors into one clear line (exit status 1).
func perform<T>(_ what: String, _ body: () throws -> T) throws(Failure) -> T {
  do {
    return try body()
  } catch let failure as Failure {
    throw failure
  } catch {
    throw .failed("\(what): \(error)")
  }
}

/// Runs argument work, turning its usage errors into `Failure.usage` (exit status 2).
func usage<T>(_ body: () throws -> T) throws(Failure) -> T {
  do {
    return try body()
  } catch let error as UsageError {
    throw .usage(error)
  } catch let failure as Failure {
    throw failure
  } catch {
    throw .failed("\(error)")
  }
}

/// Refuses an output path that is the store's file or one of its companions: writing there
/// (and renaming the finished file over it) would destroy the store.
func refuseStoreFile(_ path: String, store: PersistentStore) throws(Failure) {
  guard path != "-" else { return }
  func resolved(_ path: String) -> String {
    let url = URL(fileURLWithPath: path)
    // The folder resolves even when the file does not exist yet.
    return url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent)
      .resolvingSymlinksInPath().path
  }
  let storePath = resolved(store.url.path)
  let target = resolved(path)
  if [storePath, storePath + "-wal", storePath + "-shm", storePath + "-journal"].contains(target) {
    throw .failed("will not write to \(path): it is a file of the store itself")
  }
}
