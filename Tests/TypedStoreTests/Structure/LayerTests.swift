import Foundation
import Testing

/// DESIGN.md's layer rule, checked: a file in `Sources/TypedStore/<Layer>/` names no type or
/// function that only a higher layer declares.
///
/// What a layer declares, for this test: its top-level types, functions and properties, and
/// the members (and nested types) of its extensions on another layer's types — the API a
/// feature folder adds to a lower layer's type (`Query/` adding `fetch(_:)` to the context).
/// Members it adds to the standard library's types (`Array`, `Duration`) are not counted: a
/// lower layer reaching `.filter` on an array names the standard library's. A name that the
/// file's own layer or a layer it may use also declares is ambiguous to a reader of the text,
/// so it is not counted against the file.
@Suite struct LayerTests {
  /// The layers, bottom to top (DESIGN.md's table). Query and Batch are side by side above
  /// Context, with the one amendment that Batch may use Query (a batch update or delete
  /// applies a fetch's predicate).
  static let layers = [
    "Engine", "SQLite", "Model", "History", "Store", "Context", "Query", "Batch", "Sync", "Container",
  ]

  /// Whether a file of `user` may name what `owner` declares.
  static func may(_ user: String, use owner: String) -> Bool {
    if user == owner || (user == "Batch" && owner == "Query") { return true }
    guard let userRank = rank(user), let ownerRank = rank(owner) else { return false }
    return ownerRank < userRank
  }

  private static func rank(_ layer: String) -> Int? {
    switch layer {
    case "Batch": layers.firstIndex(of: "Query")
    default: layers.firstIndex(of: layer)
    }
  }

  /// A name a layer declares, and how a use of it looks.
  struct Symbol: Hashable {
    enum Kind { case type, member }
    var name: String
    var kind: Kind
  }

  /// A use of a higher layer's symbol.
  struct Violation: CustomStringConvertible {
    var path: String
    var line: Int
    var symbol: String
    var layer: String
    var description: String { "\(path):\(line) names \(symbol), declared in \(layer)/" }
  }

  @Test func noFileNamesASymbolOfAHigherLayer() throws {
    let sources = try Dictionary(
      uniqueKeysWithValues: Self.layers.map { ($0, try SwiftSource.files(under: "Sources/TypedStore/\($0)")) })
    #expect(sources.values.allSatisfy { !$0.isEmpty }, "every layer folder has Swift files")
    var declaredBy: [Symbol: Set<String>] = [:]
    var namedBy: [String: Set<String>] = [:]
    let projectTypes = Set(sources.values.flatMap { Self.typeNames(in: $0) })
    for (layer, files) in sources {
      let declared = Self.declarations(in: files, projectTypes: projectTypes)
      for symbol in declared.exported { declaredBy[symbol, default: []].insert(layer) }
      for name in declared.all { namedBy[name, default: []].insert(layer) }
    }
    let violations = Self.violations(in: sources, declaredBy: declaredBy, namedBy: namedBy)
    for violation in violations { Issue.record("\(violation)") }
  }

  /// The test's own reading of declarations, pinned on a small sample.
  @Test func theScannerSeesTopLevelDeclarationsAndExtensionMembers() {
    let code = """
      public struct Owned { func inner() {} }
      func free() {}
      extension Foreign { public func added() { let local = 1 } ; struct Nested {} }
      extension Owned { func ownMember() {} }
      extension Array { func standardMember() {} }
      private func hidden() {}
      extension Foreign { private func hiddenMember() {} }
      // struct Commented
      let text = "struct Quoted"
      """
    let source = SwiftSource.tokenize(SwiftSource.code(of: code))
    let symbols = Self.declarations(in: source, layerTypes: ["Owned"], projectTypes: ["Owned", "Foreign"])
    #expect(
      symbols.exported == [
        Symbol(name: "Owned", kind: .type), Symbol(name: "free", kind: .member), Symbol(name: "added", kind: .member),
        Symbol(name: "Nested", kind: .type), Symbol(name: "text", kind: .member),
      ])
  }

  // MARK: - Declarations

  /// What a layer's files declare: the symbols other layers can name, and every name
  /// declared at all (a local, a member of the layer's own type).
  static func declarations(in files: [SwiftSource], projectTypes: Set<String>)
    -> (exported: Set<Symbol>, all: Set<String>)
  {
    let layerTypes = typeNames(in: files)
    var exported: Set<Symbol> = []
    var all: Set<String> = []
    for file in files {
      let declared = declarations(in: file.tokens, layerTypes: layerTypes, projectTypes: projectTypes)
      exported.formUnion(declared.exported)
      all.formUnion(declared.all)
    }
    return (exported, all)
  }

  /// Every type `files` declare, at any depth.
  static func typeNames(in files: [SwiftSource]) -> Set<String> {
    Set(
      files.flatMap { file in
        zip(file.tokens, file.tokens.dropFirst()).filter { typeKeywords.contains($0.0.text) }.map(\.1.text)
      })
  }

  private static let typeKeywords: Set<String> = ["struct", "class", "enum", "protocol", "actor", "typealias"]
  private static let memberKeywords: Set<String> = ["func", "var", "let"]

  /// What a scope of braces is: an extension of a named type, a type, or anything else.
  private enum Scope {
    case extensionOf(String)
    case type(String)
    case other
  }

  /// The symbols `tokens` declare that other layers can name (see the suite's comment), and
  /// every name they declare; `layerTypes` are the types the file's layer declares,
  /// `projectTypes` those of every layer.
  static func declarations(in tokens: [SwiftSource.Token], layerTypes: Set<String>, projectTypes: Set<String>)
    -> (exported: [Symbol], all: Set<String>)
  {
    var symbols: [Symbol] = []
    var all: Set<String> = []
    var scopes: [Scope] = []
    var pending: Scope?
    /// Top level, or directly inside an extension of another layer's type.
    var isExported: Bool {
      if scopes.isEmpty { return true }
      guard scopes.count == 1, case .extensionOf(let name) = scopes[0] else { return false }
      return projectTypes.contains(name) && !layerTypes.contains(name)
    }
    for (index, token) in tokens.enumerated() {
      let next = index + 1 < tokens.count ? tokens[index + 1].text : ""
      switch token.text {
      case "{":
        scopes.append(pending ?? .other)
        pending = nil
      case "}":
        _ = scopes.popLast()
      case "extension":
        pending = .extensionOf(next)
      case "case" where isIdentifier(next):
        all.insert(next)
      case _ where typeKeywords.contains(token.text) && isIdentifier(next):
        all.insert(next)
        if isExported && !isPrivate(index, in: tokens) { symbols.append(Symbol(name: next, kind: .type)) }
        pending = token.text == "typealias" ? nil : .type(next)
      case _ where memberKeywords.contains(token.text) && isIdentifier(next):
        all.insert(next)
        if isExported && !isPrivate(index, in: tokens) { symbols.append(Symbol(name: next, kind: .member)) }
        pending = nil
      default:
        break
      }
    }
    return (symbols, all)
  }

  /// Whether the declaration whose keyword is at `index` is `private` or `fileprivate`
  /// (`private(set)` limits only the setter): no other file can name it.
  private static func isPrivate(_ index: Int, in tokens: [SwiftSource.Token]) -> Bool {
    var position = index - 1
    while position >= 0 && tokens[position].line == tokens[index].line {
      let text = tokens[position].text
      let next = tokens[position + 1].text
      if (text == "private" || text == "fileprivate") && next != "(" { return true }
      position -= 1
    }
    return false
  }

  private static func isIdentifier(_ text: String) -> Bool {
    guard let first = text.first else { return false }
    return first.isLetter || first == "_"
  }

  // MARK: - Uses

  /// Every use, in a layer's files, of a symbol only higher layers declare.
  static func violations(
    in sources: [String: [SwiftSource]], declaredBy: [Symbol: Set<String>], namedBy: [String: Set<String>]
  ) -> [Violation] {
    var found: [Violation] = []
    for layer in layers {
      // The symbols this layer must not name: declared above it, and nowhere it may look.
      var forbidden: [String: (Symbol.Kind, String)] = [:]
      for (symbol, owners) in declaredBy
      where !owners.union(namedBy[symbol.name] ?? []).contains(where: { may(layer, use: $0) }) {
        forbidden[symbol.name] = (symbol.kind, owners.sorted().joined(separator: ", "))
      }
      for file in sources[layer] ?? [] {
        for (index, token) in file.tokens.enumerated() {
          guard let (kind, owner) = forbidden[token.text], isUse(at: index, in: file.tokens, kind: kind) else {
            continue
          }
          found.append(Violation(path: file.path, line: token.line, symbol: token.text, layer: owner))
        }
      }
    }
    return found
  }

  /// Whether the token at `index` uses a symbol of `kind`: a type wherever its name stands; a
  /// member when it is called (`name(`) or reached (`.name`), and not being declared.
  private static func isUse(at index: Int, in tokens: [SwiftSource.Token], kind: Symbol.Kind) -> Bool {
    let previous = index > 0 ? tokens[index - 1].text : ""
    if typeKeywords.contains(previous) || memberKeywords.contains(previous) || previous == "extension" {
      return false
    }
    switch kind {
    case .type: return true
    case .member: return previous == "." || (index + 1 < tokens.count && tokens[index + 1].text == "(")
    }
  }
}
