/// A small command-line parser shaped like swift-argument-parser's conventions, since no
/// package can be fetched here: a tree of commands, each with options, flags and positional
/// arguments, generated help (`OVERVIEW`, `USAGE`, `OPTIONS`, `SUBCOMMANDS`), `--name value`
/// and `--name=value`, `--` to end options, `-h`/`--help` anywhere, and usage errors that name
/// the argument and the command. A command is a value describing itself; parsing returns
/// which command was chosen and what it was given, and the caller runs it.
///
/// ```swift
/// let export = CommandDescription(
///   name: "export", abstract: "Export history.",
///   options: [.option("--store", value: "path", help: "The store file.", required: true),
///             .flag("--gzip", help: "Compress with gzip.")])
/// let tool = CommandDescription(name: "tool", abstract: "A tool.", subcommands: [export])
/// switch try ArgumentParser(root: tool).parse(["export", "--store", "a.sqlite"]) {
/// case .run(let command): print(command.path, try command.required("--store"))
/// case .help(let text): print(text)
/// case .version: print("1.0")
/// }
/// ```

/// One option or flag of a command.
public struct OptionDescription: Sendable {
  /// The long name, with its dashes: `--store`.
  public var name: String
  /// A one-letter alias with its dash (`-o`), if any.
  public var shortName: String?
  /// The value's placeholder in help (`path`), or nil for a flag that takes no value.
  public var valueName: String?
  public var help: String
  /// Whether it may be given more than once (each value is kept, in order).
  public var isRepeating: Bool
  /// Whether the command cannot run without it.
  public var isRequired: Bool
  /// Whether `--help` leaves it out (options for the tool's own use).
  public var isHidden: Bool

  /// An option that takes a value.
  public static func option(
    _ name: String, short: String? = nil, value: String, help: String, repeating: Bool = false,
    required: Bool = false, hidden: Bool = false
  ) -> OptionDescription {
    OptionDescription(
      name: name, shortName: short, valueName: value, help: help, isRepeating: repeating, isRequired: required,
      isHidden: hidden)
  }

  /// A flag: present or not.
  public static func flag(_ name: String, short: String? = nil, help: String, hidden: Bool = false)
    -> OptionDescription
  {
    OptionDescription(
      name: name, shortName: short, valueName: nil, help: help, isRepeating: false, isRequired: false,
      isHidden: hidden)
  }

  var usage: String {
    let base = valueName.map { "\(name) <\($0)>" } ?? name
    let repeated = isRepeating ? "\(base) ..." : base
    return isRequired ? repeated : "[\(repeated)]"
  }

  var label: String {
    let names = (shortName.map { "\($0), " } ?? "") + name
    return valueName.map { "\(names) <\($0)>" } ?? names
  }
}

/// A positional argument of a command.
public struct PositionalDescription: Sendable {
  public var name: String
  public var help: String
  public var isRequired: Bool

  public init(_ name: String, help: String, required: Bool = true) {
    self.name = name
    self.help = help
    self.isRequired = required
  }
}

/// A command: its name, what it does, what it takes, and its subcommands. A command with
/// subcommands and no `options` only dispatches.
public struct CommandDescription: Sendable {
  public var name: String
  public var abstract: String
  /// More text for its help, after the usage line.
  public var discussion: String?
  public var options: [OptionDescription]
  public var positionals: [PositionalDescription]
  public var subcommands: [CommandDescription]
  /// Whether the parent's help leaves it out (commands for the tool's own use).
  public var isHidden: Bool

  public init(
    name: String, abstract: String, discussion: String? = nil, options: [OptionDescription] = [],
    positionals: [PositionalDescription] = [], subcommands: [CommandDescription] = [], hidden: Bool = false
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.options = options
    self.positionals = positionals
    self.subcommands = subcommands
    self.isHidden = hidden
  }
}

/// A usage error: what was wrong, and the help of the command it concerns (printed after it,
/// as swift-argument-parser does). Exit status 2 by convention.
public struct UsageError: Error, Sendable, CustomStringConvertible {
  public var message: String
  /// The usage line of the command, to print after the message.
  public var usage: String

  public init(_ message: String, usage: String = "") {
    self.message = message
    self.usage = usage
  }

  public var description: String { message }
}

/// A parsed command line: the chosen command and what it was given.
public struct ParsedCommand: Sendable {
  /// The names from the root to the chosen command, without the root: `["history", "export"]`.
  public let path: [String]
  /// The usage line of the chosen command, for errors found while running it.
  public let usage: String
  private let values: [String: [String]]
  private let flags: Set<String>
  /// The positional arguments, in order.
  public let positionals: [String]

  init(path: [String], usage: String, values: [String: [String]], flags: Set<String>, positionals: [String]) {
    self.path = path
    self.usage = usage
    self.values = values
    self.flags = flags
    self.positionals = positionals
  }

  /// The last value of an option, if it was given.
  public func value(_ name: String) -> String? { values[name]?.last }

  /// Every value of a repeating option, in order.
  public func values(_ name: String) -> [String] { values[name] ?? [] }

  /// Whether a flag was given.
  public func flag(_ name: String) -> Bool { flags.contains(name) }

  /// Whether an option or flag was given.
  public func has(_ name: String) -> Bool { values[name] != nil || flags.contains(name) }

  /// An option's value, which the command needs.
  public func required(_ name: String) throws(UsageError) -> String {
    guard let value = value(name) else { throw error("Missing expected argument '\(name)'") }
    return value
  }

  /// An option's value as a whole number in `range`, if it was given.
  public func integer(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws(UsageError) -> Int? {
    guard let text = value(name) else { return nil }
    guard let number = Int(text), range.contains(number) else {
      let bounds =
        range.upperBound == Int.max ? "a whole number of at least \(range.lowerBound)" : "a whole number in \(range)"
      throw error("The value '\(text)' is invalid for '\(name) <\(name.dropFirst(2))>': expected \(bounds)")
    }
    return number
  }

  /// A usage error about this command.
  public func error(_ message: String) -> UsageError {
    UsageError(message, usage: usage)
  }
}

/// What the command line asked for.
public enum ParseResult: Sendable {
  /// Run this command.
  case run(ParsedCommand)
  /// Print this help text and exit 0.
  case help(String)
  /// Print the version and exit 0.
  case version
}

/// Parses command lines against a tree of commands.
public struct ArgumentParser: Sendable {
  public let root: CommandDescription

  public init(root: CommandDescription) {
    self.root = root
  }

  /// Parses the arguments (without the program's own name).
  ///
  /// - Throws: `UsageError` for an unknown command or option, a missing or extra value, a
  ///   missing required option or positional argument.
  public func parse(_ arguments: [String]) throws(UsageError) -> ParseResult {
    switch try selectCommand(arguments) {
    case .finished(let result): return result
    case .selected(let command, let path, let index):
      return try parseArguments(arguments, from: index, of: command, path: path)
    }
  }

  /// What the leading words of a command line chose.
  private enum Selection {
    /// Help or the version: nothing to run.
    case finished(ParseResult)
    /// This command, its arguments starting at `index`.
    case selected(CommandDescription, path: [String], index: Int)
  }

  /// Follows the subcommand names that come first, down from the root.
  private func selectCommand(_ arguments: [String]) throws(UsageError) -> Selection {
    var command = root
    var path: [String] = []
    var index = 0
    while index < arguments.count, !command.subcommands.isEmpty {
      let word = arguments[index]
      if word == "-h" || word == "--help" {
        return .finished(.help(helpText(for: command, path: path)))
      }
      if word == "help" {
        return .finished(try help(naming: arguments[(index + 1)...], below: command, path: path))
      }
      if path.isEmpty && (word == "--version" || word == "-V") { return .finished(.version) }
      guard let next = command.subcommands.first(where: { $0.name == word }) else {
        if word.hasPrefix("-") && !command.options.isEmpty { break }
        throw UsageError(
          word.hasPrefix("-")
            ? "Unknown option '\(word)'"
            : "Unknown command '\(word)' for '\(commandName(path))'; expected one of: "
              + command.subcommands.filter { !$0.isHidden }.map(\.name).joined(separator: ", "),
          usage: usageLine(for: command, path: path))
      }
      command = next
      path.append(word)
      index += 1
    }
    if command.options.isEmpty && command.positionals.isEmpty && !command.subcommands.isEmpty {
      // A dispatching command given nothing: its help, as an error (nothing was chosen).
      throw UsageError(
        "'\(commandName(path))' needs a subcommand: "
          + command.subcommands.filter { !$0.isHidden }.map(\.name).joined(separator: ", "),
        usage: usageLine(for: command, path: path))
    }
    return .selected(command, path: path, index: index)
  }

  /// `tool help history export`: the help of the command the words after `help` name.
  private func help(
    naming names: ArraySlice<String>, below command: CommandDescription, path: [String]
  ) throws(UsageError) -> ParseResult {
    var target = command
    var targetPath = path
    for name in names {
      guard let next = target.subcommands.first(where: { $0.name == name }) else {
        throw UsageError(
          "Unknown command '\(name)' for '\(commandName(targetPath))'", usage: usageLine(for: target, path: targetPath))
      }
      target = next
      targetPath.append(name)
    }
    return .help(helpText(for: target, path: targetPath))
  }

  /// The options, flags and positional arguments of the chosen command.
  private func parseArguments(
    _ arguments: [String], from start: Int, of command: CommandDescription, path: [String]
  ) throws(UsageError) -> ParseResult {
    let usage = usageLine(for: command, path: path)
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var optionsEnded = false
    var index = start
    while index < arguments.count {
      let word = arguments[index]
      index += 1
      if optionsEnded || word == "-" || !word.hasPrefix("-") {
        positionals.append(word)
        continue
      }
      if word == "--" {
        optionsEnded = true
        continue
      }
      if word == "-h" || word == "--help" { return .help(helpText(for: command, path: path)) }
      var name = word
      var attached: String?
      if word.hasPrefix("--"), let equals = word.firstIndex(of: "=") {
        name = String(word[..<equals])
        attached = String(word[word.index(after: equals)...])
      }
      guard let option = command.options.first(where: { $0.name == name || $0.shortName == name }) else {
        throw UsageError("Unknown option '\(name)'", usage: usage)
      }
      if option.valueName == nil {
        guard attached == nil else { throw UsageError("The flag '\(option.name)' takes no value", usage: usage) }
        flags.insert(option.name)
        continue
      }
      let value: String
      if let attached {
        value = attached
      } else {
        value = try nextValue(of: option, in: arguments, at: &index, usage: usage)
      }
      if values[option.name] != nil && !option.isRepeating {
        throw UsageError("'\(option.name)' may be given only once", usage: usage)
      }
      values[option.name, default: []].append(value)
    }
    try checkRequired(command, values: values, positionals: positionals, usage: usage)
    return .run(ParsedCommand(path: path, usage: usage, values: values, flags: flags, positionals: positionals))
  }

  /// The word after an option, as its value. A value may start with a dash when it is `-`
  /// (stdout) or a negative number.
  private func nextValue(
    of option: OptionDescription, in arguments: [String], at index: inout Int, usage: String
  ) throws(UsageError) -> String {
    guard index < arguments.count,
      arguments[index] == "-" || !arguments[index].hasPrefix("-")
        || arguments[index].dropFirst().first?.isNumber == true
    else {
      throw UsageError("Missing value for '\(option.label)'", usage: usage)
    }
    index += 1
    return arguments[index - 1]
  }

  /// Every required option and positional argument given, and no extra positional one.
  private func checkRequired(
    _ command: CommandDescription, values: [String: [String]], positionals: [String], usage: String
  ) throws(UsageError) {
    for option in command.options where option.isRequired && values[option.name] == nil {
      throw UsageError("Missing expected argument '\(option.label)'", usage: usage)
    }
    let required = command.positionals.filter(\.isRequired).count
    if positionals.count < required {
      throw UsageError("Missing expected argument '<\(command.positionals[positionals.count].name)>'", usage: usage)
    }
    if positionals.count > command.positionals.count {
      throw UsageError("Unexpected argument '\(positionals[command.positionals.count])'", usage: usage)
    }
  }

  // MARK: - Help

  private func commandName(_ path: [String]) -> String {
    ([root.name] + path).joined(separator: " ")
  }

  /// `USAGE: tool history export --store <path> [--gzip]`
  public func usageLine(for command: CommandDescription, path: [String]) -> String {
    var words = [commandName(path)]
    if !command.subcommands.isEmpty && command.options.isEmpty { words.append("<subcommand>") }
    words += command.options.filter { !$0.isHidden }.map(\.usage)
    words += command.positionals.map { $0.isRequired ? "<\($0.name)>" : "[<\($0.name)>]" }
    return "USAGE: " + words.joined(separator: " ")
  }

  /// The whole help of a command.
  public func helpText(for command: CommandDescription, path: [String]) -> String {
    var lines = ["OVERVIEW: \(command.abstract)", ""]
    if let discussion = command.discussion { lines += [discussion, ""] }
    lines += [usageLine(for: command, path: path), ""]
    func table(_ rows: [(String, String)]) -> [String] {
      let width = min(30, (rows.map(\.0.count).max() ?? 0) + 2)
      return rows.map { label, help in
        let padded =
          label.count + 2 > width
          ? label + "\n" + String(repeating: " ", count: width + 2)
          : label + String(repeating: " ", count: width - label.count)
        return "  " + padded + help
      }
    }
    if !command.positionals.isEmpty {
      lines += ["ARGUMENTS:"] + table(command.positionals.map { ("<\($0.name)>", $0.help) }) + [""]
    }
    let options = command.options.filter { !$0.isHidden }.map { ($0.label, $0.help) }
    var standard = [("-h, --help", "Show help information.")]
    if path.isEmpty { standard.append(("-V, --version", "Show the version.")) }
    lines += ["OPTIONS:"] + table(options + standard) + [""]
    let subcommands = command.subcommands.filter { !$0.isHidden }
    if !subcommands.isEmpty {
      lines += ["SUBCOMMANDS:"] + table(subcommands.map { ($0.name, $0.abstract) }) + [""]
      lines += ["  See '\(commandName(path)) help <subcommand>' for detailed help.", ""]
    }
    return lines.joined(separator: "\n")
  }
}
