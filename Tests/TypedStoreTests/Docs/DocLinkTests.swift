import Foundation
import Testing

/// Every relative link of README.md and docs/ names a file that exists and, with a `#` part,
/// a heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as
/// hyphens).
@Suite struct DocLinkTests {
  private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// The anchors of a Markdown file's headings (outside code blocks).
  static func anchors(of text: String) -> Set<String> {
    var anchors: Set<String> = []
    var inCode = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") { inCode.toggle() }
      guard !inCode, line.hasPrefix("#") else { continue }
      let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
      let kept = title.lowercased().filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }
      anchors.insert(kept.replacingOccurrences(of: " ", with: "-"))
    }
    return anchors
  }

  /// The relative link targets of a Markdown file (outside code blocks), as written.
  static func links(in text: String) -> [String] {
    var links: [String] = []
    var inCode = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") { inCode.toggle() }
      guard !inCode else { continue }
      var rest = Substring(line)
      while let open = rest.range(of: "](") {
        rest = rest[open.upperBound...]
        guard let close = rest.firstIndex(of: ")") else { break }
        let target = String(rest[..<close])
        rest = rest[close...]
        if !target.contains("://"), !target.hasPrefix("mailto:") { links.append(target) }
      }
    }
    return links
  }

  @Test func theAnchorsAreGitHubs() {
    let anchors = Self.anchors(
      of: "# Title\n## A stale to-many or many-to-many\n```\n# not a heading\n```\n### `refresh(_:)`: keeps")
    #expect(anchors == ["title", "a-stale-to-many-or-many-to-many", "refresh_-keeps"])
    #expect(Self.links(in: "see [a](b.md#c), [d](https://e) and `[f](g.md)`") == ["b.md#c", "g.md"])
  }

  @Test func everyRelativeLinkNamesAFileAndAHeadingThatExist() throws {
    let docs = Self.root.appendingPathComponent("docs")
    let files =
      [Self.root.appendingPathComponent("README.md")]
      + (try FileManager.default.contentsOfDirectory(atPath: docs.path)).filter { $0.hasSuffix(".md") }.sorted()
      .map { docs.appendingPathComponent($0) }
    var checked = 0
    for file in files {
      let text = try String(contentsOf: file, encoding: .utf8)
      for link in Self.links(in: text) {
        let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        let target = path.isEmpty ? file : file.deletingLastPathComponent().appendingPathComponent(path)
        #expect(
          FileManager.default.fileExists(atPath: target.path), "\(file.lastPathComponent): \(link) names no file")
        if parts.count == 2, target.pathExtension == "md", let linked = try? String(contentsOf: target, encoding: .utf8)
        {
          #expect(
            Self.anchors(of: linked).contains(String(parts[1])),
            "\(file.lastPathComponent): \(link) names no heading of \(target.lastPathComponent)")
        }
        checked += 1
      }
    }
    #expect(checked > 30)
  }
}
