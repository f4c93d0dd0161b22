import Foundation
import Testing

/// Every Swift code block of README.md and docs/ compiles: each of its paragraphs (the parts
/// between blank lines) appears, as written, in a source file the package builds (the tests,
/// mostly `DocPageExamples.swift` and `DocExamplesTests`, where they also run; the test writer; the examples). "As
/// written" ignores whitespace and comments, so that the formatter may wrap a copy and tests
/// may annotate it; a paragraph's declarations may sit in a namespace of the test and its
/// statements in a function. Anything else that differs is code nothing compiles.
@Suite struct DocCodeBlockTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// The pages whose examples are checked: README.md and every page of docs/.
  static func pages() throws -> [URL] {
    let docs = root.appendingPathComponent("docs")
    return [root.appendingPathComponent("README.md")]
      + (try FileManager.default.contentsOfDirectory(atPath: docs.path)).filter { $0.hasSuffix(".md") }.sorted()
      .map { docs.appendingPathComponent($0) }
  }

  /// The ```swift blocks of a Markdown text, with the line each starts on.
  static func swiftBlocks(in text: String) -> [(line: Int, code: String)] {
    var blocks: [(line: Int, code: String)] = []
    var current: [Substring]?
    var start = 0
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      if let lines = current {
        if line.hasPrefix("```") {
          blocks.append((start, lines.joined(separator: "\n")))
          current = nil
        } else {
          current = lines + [line]
        }
      } else if line.hasPrefix("```swift") {
        current = []
        start = index + 2
      }
    }
    return blocks
  }

  /// A block's paragraphs: its lines between blank lines (and each import alone), each with
  /// the line it starts on.
  static func paragraphs(of block: (line: Int, code: String)) -> [(line: Int, code: String)] {
    var paragraphs: [(line: Int, code: String)] = []
    var lines: [Substring] = []
    var start = block.line
    for (offset, line) in block.code.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      if line.allSatisfy(\.isWhitespace) || line.hasPrefix("import ") {
        if !lines.isEmpty { paragraphs.append((line: start, code: lines.joined(separator: "\n"))) }
        lines = []
        start = block.line + offset + 1
        // An import is a paragraph of its own: a file sorts its imports with its others.
        if line.hasPrefix("import ") { paragraphs.append((line: block.line + offset, code: String(line))) }
      } else {
        lines.append(line)
      }
    }
    if !lines.isEmpty { paragraphs.append((line: start, code: lines.joined(separator: "\n"))) }
    return paragraphs.filter { !normalized($0.code).isEmpty }  // comments alone say nothing to compile
  }

  /// Code without its comments and whitespace.
  static func normalized(_ code: String) -> String {
    var text = ""
    for line in code.split(separator: "\n", omittingEmptySubsequences: false) {
      let kept = line.range(of: "//").map { line[..<$0.lowerBound] } ?? line
      text += kept.filter { !$0.isWhitespace }
    }
    return text
  }

  /// Every Swift file the package compiles into its tests, test writer and examples.
  static func compiledSources() throws -> String {
    var sources: [String] = []
    for folder in ["Tests/TypedStoreTests", "Tests/TestWriter", "Examples"] {
      let base = root.appendingPathComponent(folder)
      guard let files = FileManager.default.enumerator(atPath: base.path) else { continue }
      for case let file as String in files where file.hasSuffix(".swift") && !file.hasSuffix("DocCodeBlockTests.swift")
      {
        sources.append(try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8))
      }
    }
    return sources.map(normalized).joined(separator: "\n")
  }

  @Test func theBlocksAreFoundAndNormalized() {
    let page = "text\n```swift\nlet a = 1  // one\n  f(a)\n```\n```sh\nls\n```\n```swift\ng()\n```\n"
    let blocks = Self.swiftBlocks(in: page)
    #expect(blocks.map(\.line) == [3, 10])
    #expect(blocks.map { Self.normalized($0.code) } == ["leta=1f(a)", "g()"])
    let paragraphs = Self.paragraphs(of: (5, "import A\nimport B\n\nlet b = 1\nf(b)\n  \n// a comment\n\ng()"))
    #expect(paragraphs.map(\.line) == [5, 6, 8, 13])
    #expect(paragraphs.map { Self.normalized($0.code) } == ["importA", "importB", "letb=1f(b)", "g()"])
  }

  @Test func everySwiftBlockOfTheDocsIsCompiledByThePackage() throws {
    let compiled = try Self.compiledSources()
    var checked = 0
    for page in try Self.pages() {
      let name = page.path.dropFirst(Self.root.path.count + 1)
      // A package manifest is checked by ReadmeManifestTests, which loads it with SwiftPM.
      for block in Self.swiftBlocks(in: try String(contentsOf: page, encoding: .utf8))
      where !block.code.hasPrefix("// swift-tools-version") {
        for paragraph in Self.paragraphs(of: block) {
          checked += 1
          if !compiled.contains(Self.normalized(paragraph.code)) {
            Issue.record(
              """
              \(name):\(paragraph.line): no compiled source has this code; put it in DocPageExamples.swift:
              \(paragraph.code)
              """
            )
          }
        }
      }
    }
    #expect(checked > 40)
  }
}
