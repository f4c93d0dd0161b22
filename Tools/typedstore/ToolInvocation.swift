import Foundation

/// This program: where it is, to run again as the demo's processes, and how a user types it.
enum ToolInvocation {
  /// This program, to run again as the demo's processes.
  static var executable: URL {
    let path =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: path)
  }

  /// How to run this tool, typed where the user stands: `typedstore` when the first
  /// `typedstore` on the PATH is this program; otherwise its path, relative to the current
  /// folder when it lies below it (`.build/debug/typedstore` after `swift run`).
  static var command: String {
    let program = executable.resolvingSymlinksInPath().path
    if firstOnPath() == program { return "typedstore" }
    let here = FileManager.default.currentDirectoryPath
    for path in candidatePaths(of: program) {
      let absolute = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: here, isDirectory: true))
      guard absolute.resolvingSymlinksInPath().path == program else { continue }
      let full = absolute.standardizedFileURL.path
      return Values.shellQuoted(full.hasPrefix(here + "/") ? String(full.dropFirst(here.count + 1)) : full)
    }
    return Values.shellQuoted(program)
  }

  /// What the shell runs for `typedstore`, resolved: the first on the PATH.
  private static func firstOnPath() -> String? {
    for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
      let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("typedstore")
      guard FileManager.default.isExecutableFile(atPath: candidate.path) else { continue }
      return candidate.resolvingSymlinksInPath().path  // the shell would run this one
    }
    return nil
  }

  /// The ways to name this program, best first: for a build of SwiftPM's
  /// (`.build/x86_64-unknown-linux-gnu/debug/typedstore`), by the shorter link to its folder
  /// (`.build/debug/typedstore`); as it was started; where it is.
  private static func candidatePaths(of program: String) -> [String] {
    let started = CommandLine.arguments.first.flatMap { $0.contains("/") ? $0 : nil }
    var parts = URL(fileURLWithPath: program).pathComponents
    var linked: String?
    if parts.count > 4, parts[parts.count - 4] == ".build" {
      parts.remove(at: parts.count - 3)
      linked = NSString.path(withComponents: parts)
    }
    return [linked, started, program].compactMap { $0 }
  }
}
