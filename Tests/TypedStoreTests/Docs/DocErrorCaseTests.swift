import Foundation
import Testing

/// Every error case README.md and docs/ name as `` `TypeName.case` `` (or
/// `` `TypeName.Nested.case` ``, as `ModelError.Reason.noClass`) exists: the cases are read
/// from the library's sources — each public enum that conforms to `Error`, and the public
/// enums nested in a public error type — so a case renamed or removed in the code fails the
/// page that still names it. A mention with argument labels (`StoreError.readOnly(path:)`)
/// must have the case's labels.
@Suite struct DocErrorCaseTests {
  /// An enum's cases: each name with its associated values' labels (`_` for none).
  typealias Cases = [String: [String]]

  /// Swift source with the text of comments and string literals blanked out (line breaks
  /// kept), so that braces and `case` inside them do not count.
  static func code(of source: String) -> String {
    var result = ""
    let characters = Array(source)
    var index = 0
    func at(_ offset: Int) -> Character? { index + offset < characters.count ? characters[index + offset] : nil }
    while index < characters.count {
      let character = characters[index]
      if character == "/" && at(1) == "/" {
        while index < characters.count && characters[index] != "\n" { index += 1 }
      } else if character == "/" && at(1) == "*" {
        index += 2
        while index < characters.count && !(characters[index] == "*" && at(1) == "/") {
          if characters[index] == "\n" { result.append("\n") }
          index += 1
        }
        index += 2
      } else if character == "\"" {
        let multiline = at(1) == "\"" && at(2) == "\""
        index += multiline ? 3 : 1
        while index < characters.count {
          if characters[index] == "\\" {
            index += 2
            continue
          }
          if multiline ? (characters[index] == "\"" && at(1) == "\"" && at(2) == "\"") : characters[index] == "\"" {
            index += multiline ? 3 : 1
            break
          }
          if characters[index] == "\n" { result.append("\n") }
          index += 1
        }
        result.append("\"\"")
      } else {
        result.append(character)
        index += 1
      }
    }
    return result
  }

  /// The text between the brace at `open` and its match.
  static func body(_ text: [Character], from open: Int) -> ArraySlice<Character> {
    var depth = 0
    for index in open..<text.count {
      if text[index] == "{" { depth += 1 }
      if text[index] == "}" {
        depth -= 1
        if depth == 0 { return text[(open + 1)..<index] }
      }
    }
    return text[(open + 1)...]
  }

  /// The cases declared at the top level of an enum's body.
  static func cases(inBody body: ArraySlice<Character>) -> Cases {
    var cases: Cases = [:]
    // Keep the top level only: nested types' and functions' bodies go.
    var topLevel = ""
    var depth = 0
    for character in body {
      if character == "{" { depth += 1 }
      if depth == 0 { topLevel.append(character) }
      if character == "}" { depth -= 1 }
    }
    for line in topLevel.split(separator: "\n") {
      var rest = line.trimmingCharacters(in: .whitespaces)[...]
      for prefix in ["public ", "indirect "] where rest.hasPrefix(prefix) { rest = rest.dropFirst(prefix.count) }
      guard rest.hasPrefix("case ") else { continue }
      rest = rest.dropFirst(5)
      // `a(x: T, y: U), b, c(T)`: names, each with an optional parenthesized list.
      while !rest.isEmpty {
        rest = rest.drop { $0 == " " || $0 == "," }
        let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
        guard !name.isEmpty else { break }
        rest = rest.dropFirst(name.count)
        var labels: [String] = []
        if rest.first == "(" {
          var level = 0
          var element = ""
          var elements: [String] = []
          for character in rest {
            rest = rest.dropFirst()
            if character == "(" || character == "[" || character == "<" { level += 1 }
            if character == ")" || character == "]" || character == ">" { level -= 1 }
            if level == 0 { break }
            if level == 1 && character == "," {
              elements.append(element)
              element = ""
            } else if !(level == 1 && character == "(") {
              element.append(character)
            }
          }
          elements.append(element)
          labels = elements.map { element in
            let parts = element.split(separator: ":", maxSplits: 1)
            return parts.count == 2 ? parts[0].trimmingCharacters(in: .whitespaces) : "_"
          }
        }
        cases[String(name)] = labels
        rest = rest.drop { $0 != "," }  // a raw value, or the end
      }
    }
    return cases
  }

  /// The library's public error types and their cases: by type name, and by
  /// `Type.Nested` for the public enums nested in an error type.
  static func errorCases(inSources sources: [String]) -> [String: Cases] {
    var types: [String: Cases] = [:]
    for source in sources {
      let text = Array(code(of: source))
      let string = String(text)
      let declaration = /public\s+(?:final\s+)?(enum|struct|class)\s+(\w+)\s*:\s*([^{]*)\{/
      for match in string.matches(of: declaration) where match.output.3.contains(/\bError\b/) {
        let open = string.distance(from: string.startIndex, to: match.range.upperBound) - 1
        let body = Self.body(text, from: open)
        let name = String(match.output.2)
        if match.output.1 == "enum" { types[name] = cases(inBody: body) }
        // Public enums nested in the type (its reasons, kinds).
        let inner = String(body)
        for nested in inner.matches(of: /public\s+enum\s+(\w+)[^{]*\{/) {
          let nestedOpen = inner.distance(from: inner.startIndex, to: nested.range.upperBound) - 1
          types["\(name).\(nested.output.1)"] = cases(inBody: Self.body(Array(inner), from: nestedOpen))
        }
      }
    }
    return types
  }

  static func librarySources() throws -> [String] {
    let base = DocCodeBlockTests.root.appendingPathComponent("Sources/TypedStore")
    let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
    return try files.filter { $0.hasSuffix(".swift") }.sorted().map {
      try String(contentsOf: base.appendingPathComponent($0), encoding: .utf8)
    }
  }

  /// The `` `SomethingError.name` `` mentions of a page (the type's name ends in `Error`),
  /// with their line, the names after the type, and the labels when written `(a:b:)`.
  static func mentions(in text: String) -> [(line: Int, type: String, path: [String], labels: [String]?)] {
    var found: [(line: Int, type: String, path: [String], labels: [String]?)] = []
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      for match in line.matches(of: /`(\w+Error)((?:\.\w+)+)(\([^`)]*\))?[^`]*`/) {
        let path = match.output.2.split(separator: ".").map(String.init)
        var labels: [String]?
        if let arguments = match.output.3?.dropFirst().dropLast(), arguments.wholeMatch(of: /(\w+:)+/) != nil {
          labels = arguments.split(separator: ":").map(String.init)
        }
        found.append((index + 1, String(match.output.1), path, labels))
      }
    }
    return found
  }

  @Test func theSourcesAreReadAsSwiftDeclaresThem() {
    let source = """
      /// An error { with a brace in its comment.
      public enum SampleError: Error, Sendable {
        /// A case.
        case plain
        case labelled(path: String, reason: String), other([Int])
        case quoted(String)  // "case fake"
        public struct Detail: Sendable { var text = "case inner { " }
        public var description: String {
          switch self {
          case .plain: "plain"
          default: "other"
          }
        }
      }
      public struct ModelishError: Error {
        public enum Reason: Sendable { case noClass, invalidName(String) }
      }
      public enum Unrelated { case one }
      """
    let types = Self.errorCases(inSources: [source])
    #expect(Set(types.keys) == ["SampleError", "ModelishError.Reason"])
    #expect(types["SampleError"] == ["plain": [], "labelled": ["path", "reason"], "other": ["_"], "quoted": ["_"]])
    #expect(types["ModelishError.Reason"] == ["noClass": [], "invalidName": ["_"]])
    let found = Self.mentions(
      in: "a `SampleError.labelled(path:reason:)`, b\n`ModelishError.Reason.noClass` `Note.title`")
    #expect(found.map(\.line) == [1, 2])
    #expect(found.map(\.path) == [["labelled"], ["Reason", "noClass"]])
    #expect(found.map(\.labels) == [["path", "reason"], nil])
  }

  @Test func everyErrorCaseTheDocsNameExists() throws {
    let types = Self.errorCases(inSources: try Self.librarySources())
    // The reading found the library's errors (a broken reading would find nothing to check).
    #expect(types["StoreError"]?["notFound"] == ["path"])
    #expect(types["StoreError"]?["mergeConflict"] == ["_"])
    #expect(types["ModelError.Reason"]?["noClass"] == [])
    #expect(Set(["StoreError", "HistoryError", "FetchError", "BatchError"]).isSubset(of: types.keys))
    var checked = 0
    for page in try DocCodeBlockTests.pages() {
      let name = page.path.dropFirst(DocCodeBlockTests.root.path.count + 1)
      for mention in Self.mentions(in: try String(contentsOf: page, encoding: .utf8)) {
        checked += 1
        let written = "\(mention.type).\(mention.path.joined(separator: "."))"
        let owner = ([mention.type] + mention.path.dropLast()).joined(separator: ".")
        guard let cases = types[owner] else {
          let nested = types.keys.filter { $0.hasPrefix(owner + ".") }.sorted()
          let why =
            nested.isEmpty
            ? "the library has no public error enum \(owner)"
            : "\(owner) is not an enum; its cases are in \(nested.joined(separator: ", "))"
          Issue.record("\(name):\(mention.line): `\(written)`: \(why)")
          continue
        }
        guard let labels = cases[mention.path[mention.path.count - 1]] else {
          Issue.record(
            """
            \(name):\(mention.line): `\(written)`: \(owner) has no such case \
            (it has \(cases.keys.sorted().joined(separator: ", ")))
            """
          )
          continue
        }
        if let written = mention.labels, written != labels {
          Issue.record(
            "\(name):\(mention.line): `\(owner).\(mention.path.last ?? "")`'s labels are \(labels), not \(written)")
        }
      }
    }
    #expect(checked > 30)
  }
}
