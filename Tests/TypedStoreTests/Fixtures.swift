import Foundation
import Synchronization

@testable import TypedStore

// The attributes of DESIGN.md's model, without its relationships (many tests count and
// compare rows of these entities alone; the relationship tests have their own models, in
// Graph/GraphFixtures.swift and Docs/DesignExampleTests.swift), plus entities that exercise
// every attribute type and a subentity.

enum Status: String, Codable, Sendable {
  case draft, published, archived
}

enum Priority: Int, Codable, Sendable {
  case low = 0
  case high = 2
}

struct Options: Codable, Equatable, Sendable {
  var pinned = false
  var tags: [String] = []
}

final class Folder: ManagedObject {
  @Attribute var name: String = ""
}

class Note: ManagedObject {
  @Attribute var title: String = ""
  @Attribute(persistentName: "created") var createdAt: Date? = nil
  @Attribute var status: Status = .draft
  @Attribute(.codable) var options: Options? = nil
  @Attribute(preservedOnDeletion: true) var uuid: UUID = UUID()
}

final class Checklist: Note {
  @Attribute var itemCount: Int = 0
}

final class AllTypes: ManagedObject {
  @Attribute var bool: Bool = false
  @Attribute var int: Int = 0
  @Attribute var int16: Int16 = 0
  @Attribute var int32: Int32 = 0
  @Attribute var int64: Int64 = 0
  @Attribute var double: Double = 0
  @Attribute var float: Float = 0
  @Attribute var string: String = ""
  @Attribute var date: Date = Date(timeIntervalSinceReferenceDate: 0)
  @Attribute var data: Data = Data()
  @Attribute var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
  @Attribute var url: URL = URL(string: "https://example.com")!
  @Attribute var decimal: Decimal = 0
  @Attribute var optionalBool: Bool? = nil
  @Attribute var optionalInt: Int? = nil
  @Attribute var optionalInt16: Int16? = nil
  @Attribute var optionalInt32: Int32? = nil
  @Attribute var optionalInt64: Int64? = nil
  @Attribute var optionalDouble: Double? = nil
  @Attribute var optionalFloat: Float? = nil
  @Attribute var optionalString: String? = nil
  @Attribute var optionalDate: Date? = nil
  @Attribute var optionalData: Data? = nil
  @Attribute var optionalUUID: UUID? = nil
  @Attribute var optionalURL: URL? = nil
  @Attribute var optionalDecimal: Decimal? = nil
  @Attribute var status: Status = .draft
  @Attribute var optionalPriority: Priority? = nil
  @Attribute(.codable) var options: Options = Options()
  @Attribute(.codable) var optionalOptions: Options? = nil
}

let notesModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Folder.self, Note.self, Checklist.self) } catch {
    fatalError("fixture model: \(error)")
  }
}()

let allTypesModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(AllTypes.self) } catch { fatalError("fixture model: \(error)") }
}()

/// An executable built next to the test bundle (the test target depends on it).
func builtProduct(_ name: String) -> URL {
  let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  let candidates = [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent(name) }
  return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
}

/// Values that arrive from other threads (callbacks, hooks), kept in order, for tests that
/// wait for a number of them.
final class Recorder<Element: Sendable>: Sendable {
  private let elements = Mutex<[Element]>([])

  var all: [Element] { elements.withLock { $0 } }

  func add(_ element: Element) { elements.withLock { $0.append(element) } }

  /// Waits until `count` elements arrived (false after `seconds`).
  func wait(for count: Int, seconds: Double = 20) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if all.count >= count { return true }
      try? await Task.sleep(for: .milliseconds(5))
    }
    return all.count >= count
  }
}

/// Polls `condition` until it holds (false after `seconds`); a throw counts as not yet.
///
/// The condition is asked once more after the deadline: under a full suite the shared pool
/// may resume the sleeping task only after the deadline, when the condition has long held.
func eventually(seconds: Double = 10, _ condition: () async throws -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while ContinuousClock.now < deadline {
    if (try? await condition()) == true { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return (try? await condition()) == true
}

extension PersistentStore {
  /// Where the store is, as the `typedstore` tool and the test writer take it: a file's path,
  /// or a PostgreSQL store's URL (the suites run on PostgreSQL with
  /// `TYPEDSTORE_TEST_POSTGRESQL_URL`).
  var location: String { storeLocation(url) }
}

/// Where the store at `url` is, as the `typedstore` tool and the test writer take it: a file's
/// path, or a PostgreSQL store's URL.
func storeLocation(_ url: URL) -> String { url.isFileURL ? url.path : url.absoluteString }

/// Whether `makeTest` makes PostgreSQL stores in this run (`TYPEDSTORE_TEST_POSTGRESQL_URL`):
/// a test of what only a store file has is then left out (it ran on files).
let testsRunOnPostgreSQL = !(ProcessInfo.processInfo.environment["TYPEDSTORE_TEST_POSTGRESQL_URL"] ?? "").isEmpty

extension PersistentStore {
  /// Runs `sql` in a write transaction of the store's engine with no history, as another
  /// tool writing to the store behind TypedStore's back would.
  func executeBehindTheStoresBack(_ sql: String) throws {
    try writeWithoutHistory { connection in try connection.execute(script: sql) }
  }
}
