import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Saves one object of each entity named, one transaction each, by `author`.
private func save(_ entities: [String], in container: PersistentContainer, author: String) async throws {
  for entity in entities {
    try await container.performBackgroundTask { context in
      context.transactionAuthor = author
      switch entity {
      case "Folder": _ = Folder(context: context)
      case "Checklist": _ = Checklist(context: context)
      default: _ = Note(context: context)
      }
      try context.save()
    }
  }
}

/// The transactions a filtered consumer's hook sees, and its checkpoint once caught up.
private func follow(
  _ container: PersistentContainer, consumer: String, _ configure: (inout HistoryMerger.Options) -> Void
) async throws -> (seen: [String], checkpoint: Int64) {
  var options = HistoryMerger.Options()
  options.startsAt = .beginning
  options.checkpointInterval = .zero
  configure(&options)
  let merger = try HistoryMerger(container: container, consumer: consumer, options: options)
  let log = Recorder<String>()
  merger.addHook { event in
    log.add(
      "\(event.transaction.transactionNumber):"
        + event.transaction.changes.map(\.objectID.entityName).joined(separator: ","))
  }
  try await merger.start()
  await merger.stop()
  let checkpoint = try container.persistentStore.historyConsumers().first { $0.name == consumer }?.checkpoint
  return (log.all, checkpoint?.transactionNumber ?? -1)
}

final class FilterFolderV1: ManagedObject {
  override class var entityName: String { "Folder" }
  @Attribute var name: String = ""
}

final class FilterFolderV2: ManagedObject {
  override class var entityName: String { "Folder" }
  @Attribute var name: String = ""
  @Attribute var color: String? = nil
}

@Suite struct MergerFilterTests {
  @Test("a consumer following some authors sees only theirs, and its checkpoint passes the others")
  func authorsFilter() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["Note"], in: container, author: "api")
    try await save(["Note"], in: container, author: "payments")
    try await save(["Note"], in: container, author: "api")
    try await save(["Note"], in: container, author: "payments")
    let followed = try await follow(container, consumer: "api-only") { $0.authors = ["api"] }
    #expect(followed.seen == ["1:Note", "3:Note"])
    #expect(followed.checkpoint == 4, "the last transaction, passed over, is behind it")
    let report = try HistoryPruner(container: container).prune(.consumed)
    #expect(report.deletedTransactions == 3, "a filtered consumer holds back only its checkpoint's own")
  }

  @Test("a consumer following some entities sees only their changes, subentities as asked")
  func entitiesFilter() async throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    try await save(["Folder", "Note", "Checklist", "Folder"], in: container, author: "app")
    try await container.performBackgroundTask { context in  // one transaction with both
      _ = Folder(context: context)
      _ = Note(context: context)
      try context.save()
    }
    let withSubentities = try await follow(container, consumer: "notes") { $0.entities = [Note.self] }
    #expect(withSubentities.seen == ["2:Note", "3:Checklist", "5:Note"])
    #expect(withSubentities.checkpoint == 5)
    let exact = try await follow(container, consumer: "notes-only") {
      $0.entities = [Note.self]
      $0.includesSubentities = false
    }
    #expect(exact.seen == ["2:Note", "5:Note"])
    let folders = try await follow(container, consumer: "folders") { $0.entities = [Folder.self] }
    #expect(folders.seen == ["1:Folder", "4:Folder", "5:Folder"])
    #expect(folders.checkpoint == 5)
  }

  @Test("an entity the store's model does not have is refused when the consumer is made")
  func anUnknownEntityIsRefused() throws {
    let container = try PersistentContainer.makeTest(model: notesModel)
    var options = HistoryMerger.Options()
    options.entities = [AllTypes.self]
    #expect {
      try HistoryMerger(container: container, consumer: "lost", options: options)
    } throws: { error in
      guard case HistoryError.invalidRequest(let reason) = error else { return false }
      return reason.contains("AllTypes")
    }
  }

  @Test("a migration's marker reaches a consumer whatever its filters")
  func theMigrationMarkerPassesEveryFilter() async throws {
    let url: URL
    do {
      let container = try PersistentContainer.makeTest(model: ManagedObjectModel(FilterFolderV1.self))
      try await container.performBackgroundTask { context in
        context.transactionAuthor = "app"
        _ = FilterFolderV1(context: context)
        try context.save()
      }
      url = container.persistentStore.url
    }
    let migrated = try PersistentContainer(
      name: "Folders", model: ManagedObjectModel(FilterFolderV2.self), storeURL: url)
    let seen = try await follow(migrated, consumer: "strict") {
      $0.authors = ["nobody"]
      $0.entities = [FilterFolderV2.self]
    }
    #expect(seen.seen == ["2:"], "the marker, with no changes")
    #expect(seen.checkpoint == 2)
  }
}
