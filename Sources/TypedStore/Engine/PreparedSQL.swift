import Synchronization

/// SQL text whose prepared statement a connection caches under a number rather than under
/// the text: for the statements every save runs, whose text the cache would otherwise hash
/// each time (six lookups a one-object save, about 6,000 instructions of its 96,000).
///
/// Made once, where the text is known (a static constant, or a table's layout), and kept for
/// as long as statements are asked for it. Numbers are never reused, so a connection never
/// hands out another text's statement.
package final class PreparedSQL: Sendable {
  package let text: String
  package let number: Int

  private static let lastNumber = Atomic<Int>(0)

  package init(_ text: String) {
    self.text = text
    number = Self.lastNumber.wrappingAdd(1, ordering: .relaxed).newValue
  }
}
