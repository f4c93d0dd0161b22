import Foundation
import TypedStore

/// The `typedstore` command-line tool. This version answers `--version` and `--help`; the
/// history, prune, inspect, check and demo commands arrive with the tools issue.
let usage = """
  typedstore \(TypedStoreVersion.current) — tools for TypedStore stores

  USAGE: typedstore <command> [options]

  OPTIONS:
    --version   Print the version and exit.
    --help      Print this help and exit.

  Commands (export, prune, inspect, check, demo) are not part of this version yet.
  """

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "--version", "-V":
  print("typedstore \(TypedStoreVersion.current) (store format \(PersistentStore.formatVersion))")
case "--help", "-h", nil:
  print(usage)
case let other?:
  FileHandle.standardError.write(Data("typedstore: unknown command '\(other)'\n\n\(usage)\n".utf8))
  exit(64)  // EX_USAGE
}
