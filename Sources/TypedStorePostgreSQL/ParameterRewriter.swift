/// Writes SQLite's parameters as PostgreSQL's, so that the store's SQL is written once: `?NNN`
/// as `$NNN`, and each bare `?` as the number after the largest so far (`$N` already written
/// included), as SQLite numbers them. Literals (`'…'`, `E'…'` with its backslash escapes,
/// `$tag$…$tag$`), quoted identifiers and comments (`--`, nested `/* */`) are copied as they
/// are. The shared SQL does not use PostgreSQL's `?` operators of `jsonb`.
///
/// ```swift
/// var rewriter = ParameterRewriter("SELECT ?, '?' WHERE x = ?1")
/// rewriter.rewrite()  // "SELECT $1, '?' WHERE x = $1"
/// ```
struct ParameterRewriter {
  private let scalars: [Unicode.Scalar]
  private var index = 0
  private var output = String.UnicodeScalarView()
  private var largest = 0

  init(_ sql: String) {
    scalars = Array(sql.unicodeScalars)
  }

  mutating func rewrite() -> String {
    while index < scalars.count {
      let scalar = scalars[index]
      let next = index + 1 < scalars.count ? scalars[index + 1] : nil
      switch scalar {
      case "'":
        let escapes =
          index > 0 && (scalars[index - 1] == "E" || scalars[index - 1] == "e")
          && (index < 2 || !Self.isIdentifier(scalars[index - 2]))
        copy(through: ["'"], from: index + 1, escapes: escapes)  // '' reads as two literals
      case "\"":
        copy(through: ["\""], from: index + 1)
      case "-" where next == "-":
        copy(through: ["\n"], from: index + 2)
      case "/" where next == "*":
        copyBlockComment()
      case "$" where next.map(Self.isDigit) ?? false:
        let end = digits(from: index + 1)
        largest = max(largest, number(index + 1..<end))
        output.append(contentsOf: scalars[index..<end])
        index = end
      case "$" where index == 0 || !Self.isIdentifier(scalars[index - 1]):
        copyDollarQuoted()
      case "?":
        let end = digits(from: index + 1)
        let number = end > index + 1 ? number(index + 1..<end) : largest + 1
        largest = max(largest, number)
        output.append(contentsOf: "$\(number)".unicodeScalars)
        index = end
      default:
        output.append(scalar)
        index += 1
      }
    }
    return String(output)
  }

  private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

  private static func isIdentifier(_ scalar: Unicode.Scalar) -> Bool {
    scalar == "_" || isDigit(scalar) || scalar.properties.isAlphabetic
  }

  private func digits(from start: Int) -> Int {
    var end = start
    while end < scalars.count, Self.isDigit(scalars[end]) { end += 1 }
    return end
  }

  private func number(_ range: Range<Int>) -> Int {
    Int(String(String.UnicodeScalarView(scalars[range]))) ?? 0
  }

  /// Copies from `index` through the first `closing` at or after `start` (or the end).
  private mutating func copy(through closing: [Unicode.Scalar], from start: Int, escapes: Bool = false) {
    var position = start
    while position < scalars.count {
      if escapes && scalars[position] == "\\" {
        position += 2
        continue
      }
      if scalars[position..<min(scalars.count, position + closing.count)].elementsEqual(closing) {
        position += closing.count
        break
      }
      position += 1
    }
    let end = min(position, scalars.count)
    output.append(contentsOf: scalars[index..<end])
    index = end
  }

  /// Copies a `/* … */` comment, which PostgreSQL lets nest.
  private mutating func copyBlockComment() {
    var depth = 0
    var position = index
    repeat {
      let pair = position + 1 < scalars.count ? (scalars[position], scalars[position + 1]) : nil
      if let pair, pair == ("/", "*") {
        depth += 1
        position += 2
      } else if let pair, pair == ("*", "/") {
        depth -= 1
        position += 2
      } else {
        position += 1
      }
    } while depth > 0 && position < scalars.count
    output.append(contentsOf: scalars[index..<position])
    index = position
  }

  /// Copies a dollar-quoted literal, `$tag$ … $tag$` (the tag may be empty); a `$` that does
  /// not open one is copied alone.
  private mutating func copyDollarQuoted() {
    var end = index + 1
    while end < scalars.count, Self.isIdentifier(scalars[end]) { end += 1 }
    guard end < scalars.count, scalars[end] == "$" else {
      output.append(scalars[index])
      index += 1
      return
    }
    copy(through: Array(scalars[index...end]), from: end + 1)
  }
}
