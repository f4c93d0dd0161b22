import Foundation

// A small, strict XML reader for the files Xcode writes in a model bundle (`contents`,
// `.xccurrentversion`). It is ours rather than FoundationXML's `XMLParser` because that
// module links libxml2 at run time, which every program using TypedStore would then need,
// and because a model file's errors should name their line: each element keeps the line it
// starts on. It reads XML 1.0 documents in UTF-8 and checks what makes one well formed
// (matching tags, quoted and unique attributes, known entity references, one root element);
// it does not read DTDs (it skips a `<!DOCTYPE>` without an internal subset).

/// One element of a document read by `XMLReader`: its name, attributes, child elements and
/// the text directly inside it, with the line where its start tag begins.
struct XMLNode: Sendable {
  var name: String
  var attributes: [String: String]
  /// The attribute names in the order they were written, for messages.
  var attributeOrder: [String]
  var children: [XMLNode]
  var text: String
  var line: Int

  /// The children named `name`, in document order.
  func children(named name: String) -> [XMLNode] { children.filter { $0.name == name } }
}

/// Why a document is not well-formed XML, and where.
struct XMLReadError: Error, Sendable, Equatable {
  var message: String
  var line: Int
}

/// Reads a whole document into its root element.
struct XMLReader {
  private let bytes: [UInt8]
  private var position = 0
  private var line = 1

  /// The root element of `data`.
  ///
  /// - Throws: `XMLReadError` for a document that is not well formed.
  static func read(_ data: Data) throws(XMLReadError) -> XMLNode {
    var bytes = Array(data)
    guard String(validating: bytes, as: UTF8.self) != nil else {
      throw XMLReadError(message: "the document is not valid UTF-8", line: 1)
    }
    // XML reads every line end as a line feed.
    if bytes.contains(UInt8(ascii: "\r")) {
      var normalized: [UInt8] = []
      normalized.reserveCapacity(bytes.count)
      for (index, byte) in bytes.enumerated() {
        if byte == UInt8(ascii: "\r") {
          if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") { continue }
          normalized.append(UInt8(ascii: "\n"))
        } else {
          normalized.append(byte)
        }
      }
      bytes = normalized
    }
    var reader = XMLReader(bytes: bytes)
    return try reader.document()
  }

  /// How deep elements may nest: a model file nests five deep; this keeps a hostile file from
  /// exhausting the stack.
  private static let maximumDepth = 256
  private var depth = 0

  private init(bytes: [UInt8]) {
    self.bytes = bytes
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
  }

  // MARK: - Document

  private mutating func document() throws(XMLReadError) -> XMLNode {
    if bytes.count >= position + 2, bytes[position] == 0xFE || bytes[position] == 0xFF {
      throw fail("the document is UTF-16; only UTF-8 is read")
    }
    try skipMisc(allowDoctype: true)
    guard peek(is: "<") else { throw fail(atEnd ? "the document has no root element" : "text before the root element") }
    let root = try element()
    try skipMisc(allowDoctype: false)
    guard atEnd else { throw fail("content after the root element") }
    return root
  }

  /// Whitespace, comments, processing instructions (and the XML declaration) and, before the
  /// root, a document type declaration.
  private mutating func skipMisc(allowDoctype: Bool) throws(XMLReadError) {
    while true {
      skipWhitespace()
      if consume("<?") {
        try skip(until: "?>", what: "processing instruction")
      } else if consume("<!--") {
        try comment()
      } else if allowDoctype, consume("<!DOCTYPE") {
        try doctype()
      } else {
        return
      }
    }
  }

  private mutating func comment() throws(XMLReadError) {
    let start = line
    while !atEnd {
      if consume("--") {
        guard consume(">") else { throw fail("'--' inside a comment") }
        return
      }
      advance()
    }
    throw XMLReadError(message: "a comment is not closed", line: start)
  }

  private mutating func doctype() throws(XMLReadError) {
    while !atEnd {
      if peek(is: "[") { throw fail("a document type declaration with an internal subset is not read") }
      if consume(">") { return }
      advance()
    }
    throw fail("the document type declaration is not closed")
  }

  // MARK: - Elements

  private mutating func element() throws(XMLReadError) -> XMLNode {
    depth += 1
    defer { depth -= 1 }
    guard depth <= Self.maximumDepth else { throw fail("elements nest more than \(Self.maximumDepth) deep") }
    let startLine = line
    _ = consume("<")
    let name = try self.name(what: "element name")
    var node = XMLNode(name: name, attributes: [:], attributeOrder: [], children: [], text: "", line: startLine)
    while true {
      let hadSpace = skipWhitespace()
      if consume("/>") { return node }
      if consume(">") { break }
      guard hadSpace, !atEnd else { throw fail("a malformed start tag <\(name)>") }
      let attribute = try self.name(what: "attribute name")
      skipWhitespace()
      guard consume("=") else { throw fail("attribute \(attribute) of <\(name)> has no value") }
      skipWhitespace()
      let value = try quoted(attribute: attribute)
      guard node.attributes.updateValue(value, forKey: attribute) == nil else {
        throw fail("attribute \(attribute) is written twice in <\(name)>")
      }
      node.attributeOrder.append(attribute)
    }
    try content(of: &node)
    return node
  }

  /// The text, child elements, comments and character data up to `</name>`.
  private mutating func content(of node: inout XMLNode) throws(XMLReadError) {
    var text: [UInt8] = []
    while true {
      guard !atEnd else { throw XMLReadError(message: "<\(node.name)> is not closed", line: node.line) }
      if consume("</") {
        let closing = try name(what: "end tag name")
        skipWhitespace()
        guard consume(">"), closing == node.name else {
          throw fail("</\(closing)> closes <\(node.name)> (line \(node.line))")
        }
        node.text = String(decoding: text, as: UTF8.self)
        return
      } else if consume("<!--") {
        try comment()
      } else if consume("<![CDATA[") {
        let start = position
        try skip(until: "]]>", what: "CDATA section")
        text += bytes[start..<(position - 3)]
      } else if consume("<?") {
        try skip(until: "?>", what: "processing instruction")
      } else if peek(is: "<") {
        node.children.append(try element())
      } else if peek(is: "&") {
        text += try reference()
      } else if peek(is: "]]>") {
        throw fail("']]>' in text")
      } else {
        text.append(bytes[position])
        advance()
      }
    }
  }

  private mutating func quoted(attribute: String) throws(XMLReadError) -> String {
    guard !atEnd, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
      throw fail("the value of attribute \(attribute) is not quoted")
    }
    let quote = bytes[position]
    advance()
    var value: [UInt8] = []
    while !atEnd, bytes[position] != quote {
      switch bytes[position] {
      case UInt8(ascii: "<"): throw fail("'<' in the value of attribute \(attribute)")
      case UInt8(ascii: "&"): value += try reference()
      case UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
        value.append(UInt8(ascii: " "))  // attribute-value normalization
        advance()
      default:
        value.append(bytes[position])
        advance()
      }
    }
    guard !atEnd else { throw fail("the value of attribute \(attribute) is not closed") }
    advance()
    return String(decoding: value, as: UTF8.self)
  }

  /// An entity or character reference, at `&`, as the UTF-8 bytes it stands for.
  private mutating func reference() throws(XMLReadError) -> [UInt8] {
    advance()
    let start = position
    while !atEnd, bytes[position] != UInt8(ascii: ";"), position - start < 12 { advance() }
    guard !atEnd, bytes[position] == UInt8(ascii: ";") else { throw fail("an '&' that starts no reference") }
    let body = String(decoding: bytes[start..<position], as: UTF8.self)
    advance()
    switch body {
    case "lt": return Array("<".utf8)
    case "gt": return Array(">".utf8)
    case "amp": return Array("&".utf8)
    case "quot": return Array("\"".utf8)
    case "apos": return Array("'".utf8)
    default:
      let code: UInt32? =
        body.hasPrefix("#x")
        ? UInt32(body.dropFirst(2), radix: 16) : body.hasPrefix("#") ? UInt32(body.dropFirst()) : nil
      guard let code, let scalar = Unicode.Scalar(code) else { throw fail("an unknown reference &\(body);") }
      // XML's characters: tab, line feed, carriage return and from space up.
      guard code == 0x9 || code == 0xA || code == 0xD || (code >= 0x20 && code != 0xFFFE && code != 0xFFFF) else {
        throw fail("a reference &\(body); to a character XML does not allow")
      }
      return Array(String(Character(scalar)).utf8)
    }
  }

  private mutating func name(what: String) throws(XMLReadError) -> String {
    let start = position
    while !atEnd {
      let byte = bytes[position]
      let isNameByte =
        byte >= 0x80 || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
        || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: "_")
        || byte == UInt8(ascii: ":")
        || (position > start
          && ((byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")))
      guard isNameByte else { break }
      advance()
    }
    guard position > start else { throw fail("a missing or malformed \(what)") }
    return String(decoding: bytes[start..<position], as: UTF8.self)
  }

  // MARK: - Bytes

  private var atEnd: Bool { position >= bytes.count }

  private func peek(is text: StaticString) -> Bool {
    let count = text.utf8CodeUnitCount
    guard position + count <= bytes.count else { return false }
    return text.withUTF8Buffer { $0.elementsEqual(bytes[position..<(position + count)]) }
  }

  private mutating func consume(_ text: StaticString) -> Bool {
    guard peek(is: text) else { return false }
    for _ in 0..<text.utf8CodeUnitCount { advance() }
    return true
  }

  private mutating func advance() {
    if bytes[position] == UInt8(ascii: "\n") { line += 1 }
    position += 1
  }

  @discardableResult
  private mutating func skipWhitespace() -> Bool {
    let start = position
    while !atEnd, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { advance() }
    return position > start
  }

  private mutating func skip(until end: StaticString, what: String) throws(XMLReadError) {
    let start = line
    while !atEnd {
      if consume(end) { return }
      advance()
    }
    throw XMLReadError(message: "a \(what) is not closed", line: start)
  }

  private func fail(_ message: String) -> XMLReadError { XMLReadError(message: message, line: line) }
}
