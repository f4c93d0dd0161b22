import ArgumentParsing
import Testing

@Suite struct ArgumentParsingTests {
  let parser = ArgumentParser(
    root: CommandDescription(
      name: "tool", abstract: "A tool.",
      subcommands: [
        CommandDescription(
          name: "export", abstract: "Export.",
          options: [
            .option("--store", value: "path", help: "The store.", required: true),
            .option("--author", value: "name", help: "An author.", repeating: true),
            .option("--limit", value: "n", help: "A limit."),
            .option("--output", short: "-o", value: "file", help: "Where."),
            .flag("--gzip", help: "Compress."),
          ]),
        CommandDescription(
          name: "consumers", abstract: "Consumers.",
          subcommands: [
            CommandDescription(
              name: "remove", abstract: "Remove one.", options: [.option("--store", value: "path", help: "")],
              positionals: [PositionalDescription("name", help: "Its name.")])
          ]),
        CommandDescription(name: "secret", abstract: "Hidden.", hidden: true),
      ]))

  func command(_ arguments: [String]) throws -> ParsedCommand {
    guard case .run(let command) = try parser.parse(arguments) else {
      Issue.record("\(arguments) did not choose a command")
      throw UsageError("no command")
    }
    return command
  }

  func usageError(_ arguments: [String]) -> String? {
    do {
      _ = try parser.parse(arguments)
      return nil
    } catch {
      return error.message
    }
  }

  @Test func optionsTakeSeparateOrAttachedValuesAndRepeat() throws {
    let parsed = try command(["export", "--store", "a.sqlite", "--author=x", "--author", "y", "-o", "-", "--gzip"])
    #expect(parsed.path == ["export"])
    #expect(parsed.value("--store") == "a.sqlite")
    #expect(parsed.values("--author") == ["x", "y"])
    #expect(parsed.value("--output") == "-")
    #expect(parsed.flag("--gzip"))
    #expect(!parsed.has("--limit"))
  }

  @Test func wholeNumbersAreCheckedAgainstTheirRange() throws {
    #expect(try command(["export", "--store", "a", "--limit", "5"]).integer("--limit", in: 0...Int.max) == 5)
    #expect(throws: UsageError.self) {
      try command(["export", "--store", "a", "--limit", "-5"]).integer("--limit", in: 0...Int.max)
    }
  }

  @Test func usageErrorsNameTheArgument() {
    #expect(usageError(["export"]) == "Missing expected argument '--store <path>'")
    #expect(usageError(["export", "--store"]) == "Missing value for '--store <path>'")
    #expect(usageError(["export", "--store", "a", "--nope"]) == "Unknown option '--nope'")
    #expect(usageError(["export", "--store", "a", "--store", "b"]) == "'--store' may be given only once")
    #expect(usageError(["export", "--store", "a", "--gzip=yes"]) == "The flag '--gzip' takes no value")
    #expect(usageError(["export", "--store", "a", "extra"]) == "Unexpected argument 'extra'")
    #expect(
      usageError(["import"])?.hasPrefix("Unknown command 'import' for 'tool'; expected one of: export, consumers")
        == true)
    #expect(usageError(["consumers"]) == "'tool consumers' needs a subcommand: remove")
    #expect(usageError(["consumers", "remove", "--store", "a"]) == "Missing expected argument '<name>'")
  }

  @Test func positionalsAndDoubleDash() throws {
    #expect(try command(["consumers", "remove", "indexer", "--store", "a"]).positionals == ["indexer"])
    #expect(try command(["consumers", "remove", "--store", "a", "--", "--odd-name"]).positionals == ["--odd-name"])
  }

  @Test func helpAnywhereAndForANamedCommand() throws {
    guard case .help(let root) = try parser.parse(["--help"]) else { throw UsageError("no help") }
    #expect(root.contains("SUBCOMMANDS:") && root.contains("export") && !root.contains("secret"))
    guard case .help(let export) = try parser.parse(["export", "--store", "a", "-h"]) else {
      throw UsageError("no help")
    }
    #expect(export.hasPrefix("OVERVIEW: Export."))
    #expect(
      export.contains(
        "USAGE: tool export --store <path> [--author <name> ...] [--limit <n>] [--output <file>] [--gzip]"))
    #expect(export.contains("-o, --output <file>"))
    guard case .help(let named) = try parser.parse(["help", "consumers", "remove"]) else { throw UsageError("no help") }
    #expect(named.contains("USAGE: tool consumers remove [--store <path>] <name>"))
    guard case .version = try parser.parse(["--version"]) else { throw UsageError("no version") }
  }
}
