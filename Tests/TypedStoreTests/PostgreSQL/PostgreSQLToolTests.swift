import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore
@testable import TypedStorePostgreSQL

/// The built `typedstore` tool on a PostgreSQL store, named by its `postgresql://` URL with
/// `--store`: the history (`stats`, `export`, `watch`, `prune`) and consumer commands and
/// `inspect`, `check` and `migrate` work as on a file, `checkpoint` has nothing to do; what
/// works on files only (`backup`) says so and does nothing.
@Suite struct PostgreSQLToolTests {
  /// `Event` with an optional attribute more: what `migrate` adds.
  final class EventWithVenue: ManagedObject {
    override class var entityName: String { "Event" }
    @Attribute var source: String = ""
    @Attribute var sequence: Int = 0
    @Attribute var venue: String? = nil
  }

  @Test func theToolReadsAndPrunesAPostgreSQLStoreAndRefusesWhatIsForFiles() async throws {
    let server = try PostgreSQLTestServer.server()
    let schema = PostgreSQLTestServer.schemaName()
    let admin = try PostgreSQLConnection(url: server.url)
    defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    let store = server.tcpURL + "?schema=\(schema)"
    let container = try PersistentContainer(
      name: "Events", model: ManagedObjectModel(Event.self), storeURL: URL(string: store)!)
    for source in ["a", "b", "c"] {
      try await container.performBackgroundTask { context in
        context.transactionAuthor = "importer"
        Event(context: context).source = source
        try context.save()
      }
    }

    let stats = try typedstore(["history", "stats", "--store", store])
    #expect(stats.status == 0 && stats.stdout.contains("transactions  3 kept (1…3)"), "\(stats.stdout)\(stats.stderr)")
    let export = try typedstore(["history", "export", "--store", store, "--after", "1"])
    #expect(export.objects.map { $0["number"] as? Int } == [2, 3], "\(export.stderr)")
    #expect(export.objects.allSatisfy { $0["author"] as? String == "importer" })

    let added = try typedstore(["consumers", "add", "indexer", "--store", store, "--after", "2"])
    #expect(added.status == 0, "\(added.stderr)")
    let pruned = try typedstore(["history", "prune", "--store", store, "--consumed", "--json"])
    #expect(pruned.json["deletedTransactions"] as? Int == 1, "before the checkpoint's own: \(pruned.stdout)")
    #expect(try container.persistentStore.historyHorizon().transactionNumber == 1)

    let listed = try typedstore(["consumers", "list", "--store", store])
    #expect(listed.status == 0 && listed.stdout.contains("indexer"), "\(listed.stdout)\(listed.stderr)")
    // `watch` follows until stopped: here, SIGKILLed after 3 s, with what it printed by then.
    let watch = try typedstore(["history", "watch", "--store", store, "--after", "2"], seconds: 3)
    #expect(watch.objects.map { $0["number"] as? Int } == [3], "\(watch.stdout)\(watch.stderr)")
    let checkpoint = try typedstore(["checkpoint", "--store", store])
    #expect(checkpoint.status == 0 && checkpoint.stdout.contains("nothing to copy"), "\(checkpoint.stdout)")

    let inspect = try typedstore(["inspect", "--store", store, "--json"])
    #expect(inspect.status == 0, "\(inspect.stderr)")
    let entities = inspect.json["entities"] as? [[String: Any]]
    #expect(entities?.first { $0["name"] as? String == "Event" }?["rows"] as? Int == 3, "\(inspect.stdout)")

    // `migrate`: the report, nothing changed with --dry-run, then the migration.
    let modelFile = FileManager.default.temporaryDirectory.appendingPathComponent("\(schema).json")
    let version2 = try ManagedObjectModel(EventWithVenue.self)
    try version2.jsonRepresentation.write(to: modelFile)
    defer { try? FileManager.default.removeItem(at: modelFile) }
    let dryRun = try typedstore(["migrate", "--store", store, "--model", modelFile.path, "--dry-run", "--json"])
    #expect(dryRun.status == 0 && dryRun.stdout.contains("addAttribute"), "\(dryRun.stdout)\(dryRun.stderr)")
    let storeURL = try #require(URL(string: store))
    #expect(try PersistentStore.metadataForPersistentStore(at: storeURL).modelHash != version2.versionHash)
    let migrate = try typedstore(["migrate", "--store", store, "--model", modelFile.path])
    #expect(migrate.status == 0 && migrate.stderr.contains("migrated"), "\(migrate.stdout)\(migrate.stderr)")
    #expect(try PersistentStore.metadataForPersistentStore(at: storeURL).modelHash == version2.versionHash)
    #expect(try PersistentStore.storedModel(at: storeURL).entity(named: "Event")?.attribute(named: "venue") != nil)
    #expect(throws: StoreError.self) { try container.newModelContext().count(for: FetchRequest<Event>()) }

    let backup = try typedstore(["backup", "--store", store, "-o", "/tmp/never-\(schema).sqlite"])
    #expect(backup.status != 0 && backup.stderr.contains("pg_dump"), "\(backup.status) \(backup.stderr)")
    #expect(!FileManager.default.fileExists(atPath: "/tmp/never-\(schema).sqlite"))
  }
}
