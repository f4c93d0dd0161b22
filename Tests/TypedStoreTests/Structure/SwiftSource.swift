import Foundation

/// A Swift source file as the structure tests read it: its code with comments and string
/// literals blanked out (newlines kept, so line numbers hold), cut into tokens.
struct SwiftSource {
  /// An identifier or a bracket, with the line it is on (from 1).
  struct Token {
    var text: String
    var line: Int
    /// Whether the token is the first one on its line.
    var startsLine: Bool
  }

  /// The package's root folder, found from this file's path.
  static let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// The file's path relative to the package root.
  let path: String
  let tokens: [Token]

  init(url: URL) throws {
    path = String(url.path.dropFirst(Self.packageRoot.path.count + 1))
    tokens = Self.tokenize(Self.code(of: try String(contentsOf: url, encoding: .utf8)))
  }

  /// Every `.swift` file under `folder` (relative to the package root), sorted by path.
  static func files(under folder: String) throws -> [SwiftSource] {
    let base = packageRoot.appendingPathComponent(folder)
    guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { return [] }
    let urls = walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    return try urls.sorted { $0.path < $1.path }.map(SwiftSource.init(url:))
  }

  // MARK: - Blanking comments and strings

  /// `text` with every comment and string literal replaced by spaces (newlines kept). An
  /// interpolation is blanked with its string: a name used only there is not seen.
  static func code(of text: String) -> String {
    let bytes = Array(text.utf8)
    var output = bytes
    var index = 0
    func blank(_ range: Range<Int>) {
      for position in range where output[position] != UInt8(ascii: "\n") { output[position] = UInt8(ascii: " ") }
    }
    while index < bytes.count {
      let end: Int
      if starts(bytes, at: index, with: "//") {
        end = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
      } else if starts(bytes, at: index, with: "/*") {
        end = endOfBlockComment(bytes, from: index)
      } else if let literalEnd = endOfStringLiteral(bytes, from: index) {
        end = literalEnd
      } else {
        index += 1
        continue
      }
      blank(index..<end)
      index = end
    }
    return String(decoding: output, as: UTF8.self)
  }

  private static func starts(_ bytes: [UInt8], at index: Int, with prefix: String) -> Bool {
    let prefix = Array(prefix.utf8)
    return index + prefix.count <= bytes.count && Array(bytes[index..<index + prefix.count]) == prefix
  }

  /// The end of the (nested) block comment starting at `start`.
  private static func endOfBlockComment(_ bytes: [UInt8], from start: Int) -> Int {
    var depth = 0
    var index = start
    while index < bytes.count {
      if starts(bytes, at: index, with: "/*") {
        depth += 1
        index += 2
      } else if starts(bytes, at: index, with: "*/") {
        depth -= 1
        index += 2
        if depth == 0 { return index }
      } else {
        index += 1
      }
    }
    return bytes.count
  }

  /// The end of the string literal (`"…"`, `"""…"""`, `#"…"#`) starting at `start`, or nil
  /// when none starts there.
  private static func endOfStringLiteral(_ bytes: [UInt8], from start: Int) -> Int? {
    var index = start
    while index < bytes.count, bytes[index] == UInt8(ascii: "#") { index += 1 }
    let hashes = index - start
    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
    let quote = starts(bytes, at: index, with: "\"\"\"") ? "\"\"\"" : "\""
    let close = Array((quote + String(repeating: "#", count: hashes)).utf8)
    index += quote.utf8.count
    while index < bytes.count {
      if bytes[index] == UInt8(ascii: "\\") && hashes == 0 {
        index += 2
      } else if Array(bytes[index..<min(bytes.count, index + close.count)]) == close {
        return index + close.count
      } else {
        index += 1
      }
    }
    return bytes.count
  }

  // MARK: - Tokens

  /// The identifiers, brackets and dots of `code`, in order.
  static func tokenize(_ code: String) -> [Token] {
    var tokens: [Token] = []
    var line = 1
    var lineHasToken = false
    var current = ""
    func flush() {
      guard !current.isEmpty else { return }
      tokens.append(Token(text: current, line: line, startsLine: !lineHasToken))
      lineHasToken = true
      current = ""
    }
    for character in code {
      if character.isLetter || character.isNumber || character == "_" || (character == "@" && current.isEmpty) {
        current.append(character)
        continue
      }
      flush()
      if character == "\n" {
        line += 1
        lineHasToken = false
      } else if "{}()[].:".contains(character) {
        tokens.append(Token(text: String(character), line: line, startsLine: !lineHasToken))
        lineHasToken = true
      } else if !character.isWhitespace {
        lineHasToken = true
      }
    }
    flush()
    return tokens
  }
}
