import Foundation

/// The store file SQLite opens for `path`: absolute, with every symbolic link on the way
/// resolved, as SQLite's unix VFS resolves them (it names the `-wal` and `-shm` files after
/// the link's target, beside the target). Everything TypedStore does with those files beside
/// SQLite (the WAL checks, reading the WAL index, watching for other processes' commits,
/// cleaning up after a read-only open, destroying a store) must use this path, not the one
/// given. A file that does not exist yet is found by resolving its folder, and its name when
/// that is a link whose target does not exist.
///
/// ```swift
/// let file = resolvedStorePath("/data/current.sqlite")  // "/mnt/disk1/shop.sqlite"
/// ```
func resolvedStorePath(_ path: String) -> String {
  var path =
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
  // As SQLite does (SQLITE_MAX_SYMLINK): a longer chain is a loop.
  for _ in 0..<100 {
    if let real = realPath(path) { return real }
    let file = URL(fileURLWithPath: path)
    let name = file.lastPathComponent
    let folder = file.deletingLastPathComponent().path
    let resolvedFolder = realPath(folder) ?? folder
    let candidate = resolvedFolder == "/" ? "/" + name : resolvedFolder + "/" + name
    guard let target = linkTarget(candidate) else { return candidate }
    path = target.hasPrefix("/") ? target : resolvedFolder + "/" + target  // a dangling link
  }
  return path
}

/// `realpath(3)`: nil when a component does not exist.
private func realPath(_ path: String) -> String? {
  guard let resolved = realpath(path, nil) else { return nil }
  defer { free(resolved) }
  return String(cString: resolved)
}

/// The target of the symbolic link at `path`, or nil when `path` is not one.
private func linkTarget(_ path: String) -> String? {
  var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
  let count = readlink(path, &buffer, buffer.count - 1)
  guard count > 0 else { return nil }
  return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
