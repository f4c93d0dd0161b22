import ArgumentParsing
import Foundation
import TypedStore

// The `typedstore` command-line tool. It uses only TypedStore's public API: a store keeps its
// model, so every command but the demo opens a store without the application's classes.
// Exit status: 0 success, 1 failure, 2 usage error, 3 a store that cannot be opened.

// A file size limit makes writes fail with EFBIG, reported like a full disk, instead of
// killing the process.
signal(SIGXFSZ, SIG_IGN)

let parser = ArgumentParser(root: Commands.root)
do {
  switch try usage({ try parser.parse(Array(CommandLine.arguments.dropFirst())) }) {
  case .version:
    print("typedstore \(TypedStoreVersion.current) (store format \(PersistentStore.formatVersion))")
  case .help(let text):
    print(text)
  case .run(let command):
    switch command.path {
    case ["demo"]: try DemoCommand.run(command)
    case ["demo-writer"]: try DemoCommand.writer(command)
    case ["demo-merger"]: try DemoCommand.merger(command)
    case ["history", "export"]: try HistoryCommands.export(command)
    case ["history", "watch"]: try HistoryCommands.watch(command)
    case ["history", "prune"]: try HistoryCommands.prune(command)
    case ["history", "stats"]: try HistoryCommands.stats(command)
    case ["consumers", "list"]: try StoreCommands.listConsumers(command)
    case ["consumers", "remove"]: try StoreCommands.removeConsumer(command)
    case ["inspect"]: try StoreCommands.inspect(command)
    case ["check"]: try StoreCommands.check(command)
    default: throw Failure.usage(command.error("Unknown command '\(command.path.joined(separator: " "))'"))
    }
  }
} catch let failure as Failure {
  printError("typedstore: \(failure.message)")
  exit(failure.exitCode)
} catch {
  printError("typedstore: \(error)")
  exit(1)
}
