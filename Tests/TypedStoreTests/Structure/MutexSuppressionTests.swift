import Foundation
import Testing

/// Tools/tsan-suppressions.txt, kept whole: every type in `Sources/TypedStore/` (and in
/// `Sources/TypedStorePostgreSQL/`) that keeps state
/// in a `Mutex` is named there, because ThreadSanitizer cannot see `Synchronization.Mutex` on
/// Linux and reports every access inside its `withLock` as a race. A type that gains a Mutex and
/// no line would make CI's ThreadSanitizer step fail at random, on whichever run two threads
/// happen to meet inside it.
@Suite struct MutexSuppressionTests {
  /// The types that keep state in a Mutex: for each `Mutex` token in the code, the innermost
  /// `class`, `struct`, `enum`, `actor` or `extension` whose braces hold it.
  static func typesHoldingAMutex() throws -> Set<String> {
    var owners = Set<String>()
    let files =
      try SwiftSource.files(under: "Sources/TypedStore") + SwiftSource.files(under: "Sources/TypedStorePostgreSQL")
    for file in files {
      var enclosing: [String?] = []
      var declared: String?
      for (index, token) in file.tokens.enumerated() {
        switch token.text {
        case "class", "struct", "enum", "actor", "extension":
          if index + 1 < file.tokens.count { declared = file.tokens[index + 1].text }
        case "{":
          enclosing.append(declared ?? enclosing.last ?? nil)
          declared = nil
        case "}":
          _ = enclosing.popLast()
        case "Mutex":
          if let owner = enclosing.last ?? nil { owners.insert(owner) }
        default: break
        }
      }
    }
    return owners
  }

  @Test func everyTypeThatHoldsAMutexHasASuppressionLine() throws {
    let url = SwiftSource.packageRoot.appendingPathComponent("Tools/tsan-suppressions.txt")
    let text = try String(contentsOf: url, encoding: .utf8)
    let owners = try Self.typesHoldingAMutex()
    // The scan finds the ones known today, so a broken scan cannot pass by finding none.
    #expect(owners.isSuperset(of: ["HistoryMerger", "ChangePublisher", "ModelRegistry", "StoreWriter"]))
    let missing = owners.filter { !text.contains($0) }.sorted()
    #expect(missing.isEmpty, "add a line for each to Tools/tsan-suppressions.txt: \(missing)")
  }
}
