import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// docs/merging.md's example: the text in the guide is the program the tests build, and it
/// runs as the guide says.
@Suite struct MergingGuideTests {
  private static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  @Test func theGuideShowsTheExampleAsItIs() throws {
    let guide = try String(contentsOf: Self.root.appendingPathComponent("docs/merging.md"), encoding: .utf8)
    let source = try String(
      contentsOf: Self.root.appendingPathComponent("Examples/Merging/main.swift"), encoding: .utf8)
    let marker = "<!-- example: Examples/Merging/main.swift -->\n```swift\n"
    let start = try #require(guide.range(of: marker))
    let end = try #require(guide.range(of: "```\n", range: start.upperBound..<guide.endIndex))
    #expect(String(guide[start.upperBound..<end.lowerBound]) == source)
  }

  @Test func oneProcessWritesAndAnotherMergesAcrossARestart() async throws {
    let url = PersistentContainer.testStoreURL(variant: "", fileID: #fileID, function: #function)
    try PersistentContainer.destroyPersistentStore(at: url)
    let example = builtProduct("typedstore-merging-example")
    let merger = try SpawnedProcess(example, ["merger", url.path, "3"])
    // Ready once its consumer row is in the store (its output is buffered until it exits).
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
      if FileManager.default.fileExists(atPath: url.path),
        let connection = try? SQLiteConnection(path: url.path, mode: .readOnly),
        (try? connection.scalarText("SELECT name FROM _history_consumer")) == "board"
      {
        break
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    let writer = try SpawnedProcess(example, ["writer", url.path])
    #expect(try await offThePool { writer.finish() } == "writer: committed 3 transactions\n")
    let merged = try await offThePool { merger.finish() }
    #expect(
      merged == """
        merger: ready
        merger: transaction 1 by writer: 2 inserted, 0 updated, 0 deleted
        merger: transaction 2 by writer: 0 inserted, 1 updated, 0 deleted
        merger: transaction 3 by writer: 0 inserted, 0 updated, 1 deleted
        merger: board is milk (done)

        """)

    // The writer again while no merger runs; the merger restarts from its checkpoint.
    _ = try await offThePool { try SpawnedProcess(example, ["writer", url.path]).finish() }
    let restarted = try await offThePool { try SpawnedProcess(example, ["merger", url.path, "3"]).finish() }
    let numbers = restarted.split(separator: "\n").filter { $0.hasPrefix("merger: transaction") }
      .map { $0.split(separator: " ")[2] }
    #expect(numbers == ["4", "5", "6"], "\(restarted)")
    #expect(restarted.hasSuffix("merger: board is milk (done), milk (done)\n"))
  }
}
