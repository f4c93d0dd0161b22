import ArgumentParsing
import Foundation
import TypedStore

/// The tool: parses a command line against ``Commands/root`` and runs what it names.
enum Tool {
  /// Runs the command line (without the program's name); returns the exit status, having
  /// printed any failure as one line on stderr.
  static func run(_ arguments: [String]) async -> Int32 {
    do {
      try await dispatch(arguments)
      return 0
    } catch {
      printError("typedstore: \(error.message)")
      return error.exitCode
    }
  }

  private static func dispatch(_ arguments: [String]) async throws(Failure) {
    let parser = ArgumentParser(root: Commands.root.tree)
    switch try usage({ try parser.parse(arguments) }) {
    case .version:
      print("typedstore \(TypedStoreVersion.current) (store format \(PersistentStore.formatVersion))")
    case .help(let text):
      print(text)
    case .run(let command):
      guard let run = Commands.root.run(at: command.path) else {
        throw .usage(command.error("Unknown command '\(command.path.joined(separator: " "))'"))
      }
      try await run(command)
    }
  }
}
