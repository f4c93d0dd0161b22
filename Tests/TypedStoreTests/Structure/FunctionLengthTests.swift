import Foundation
import Testing

/// No function or initializer in `Sources/` is longer than 80 lines, from its `func` (or
/// `init`) to its closing brace: a longer one holds more than one job.
@Suite struct FunctionLengthTests {
  static let limit = 80

  /// A function's body, as the scan finds it.
  struct Function: CustomStringConvertible {
    var path: String
    var name: String
    var line: Int
    var length: Int
    var description: String { "\(path):\(line) \(name) is \(length) lines long (at most \(FunctionLengthTests.limit))" }
  }

  @Test func noFunctionInSourcesIsLongerThan80Lines() throws {
    let files = try SwiftSource.files(under: "Sources")
    #expect(!files.isEmpty)
    for file in files {
      for function in Self.functions(in: file.tokens, path: file.path) where function.length > Self.limit {
        Issue.record("\(function)")
      }
    }
  }

  /// The scan's reading, pinned on a sample: bodies, requirements without one, braces in
  /// strings and comments, closures in parameter lists.
  @Test func theScanMeasuresBodiesFromTheirDeclarationToTheirClosingBrace() {
    let code = """
      protocol P {
        func requirement()
        var value: Int { get }
      }
      func short(_ body: () -> Void = { }) -> Int {
        let text = "}}}"  // }
        return 1
      }
      struct S {
        init() {
          /* { */
        }
      }
      """
    let functions = Self.functions(in: SwiftSource.tokenize(SwiftSource.code(of: code)), path: "sample")
    #expect(functions.map(\.name) == ["short", "init"])
    #expect(functions.map(\.length) == [4, 3])
  }

  /// Keywords that, first on a line, start a declaration: a function without a body ended
  /// before them.
  private static let declarationStarts: Set<String> = [
    "func", "var", "let", "init", "case", "static", "public", "private", "internal", "fileprivate", "subscript",
    "typealias", "struct", "class", "enum", "protocol", "extension", "deinit", "override", "final", "open",
    "mutating", "nonisolated", "convenience", "required", "package",
  ]

  /// Every function and initializer with a body in `tokens`.
  static func functions(in tokens: [SwiftSource.Token], path: String) -> [Function] {
    var functions: [Function] = []
    for (index, token) in tokens.enumerated() where token.text == "func" || token.text == "init" {
      if token.text == "init" && index > 0 && tokens[index - 1].text == "." { continue }  // a call: `.init(`
      guard let body = bodyStart(after: index, in: tokens), let end = closingBrace(of: body, in: tokens) else {
        continue
      }
      let name = token.text == "func" && index + 1 < tokens.count ? tokens[index + 1].text : "init"
      functions.append(Function(path: path, name: name, line: token.line, length: tokens[end].line - token.line + 1))
    }
    return functions
  }

  /// The index of the body's `{`: the first brace outside the parameters and generic
  /// clauses, or nil when the declaration ends without one (a protocol requirement).
  private static func bodyStart(after index: Int, in tokens: [SwiftSource.Token]) -> Int? {
    var depth = 0
    for position in tokens.indices.dropFirst(index + 1) {
      let token = tokens[position]
      switch token.text {
      case "(", "[": depth += 1
      case ")", "]": depth -= 1
      case "{" where depth == 0: return position
      case "}" where depth == 0: return nil
      case _ where depth == 0 && token.startsLine && declarationStarts.contains(token.text): return nil
      default: break
      }
    }
    return nil
  }

  /// The index of the `}` that closes the brace at `open`.
  private static func closingBrace(of open: Int, in tokens: [SwiftSource.Token]) -> Int? {
    var depth = 0
    for position in tokens.indices.dropFirst(open) {
      switch tokens[position].text {
      case "{": depth += 1
      case "}":
        depth -= 1
        if depth == 0 { return position }
      default: break
      }
    }
    return nil
  }
}
