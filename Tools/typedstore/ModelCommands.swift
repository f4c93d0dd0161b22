import ArgumentParsing
import Foundation
import TypedStore

/// `typedstore model check|generate|diff|export`: Xcode model files (`.xcdatamodeld` bundles
/// and `.xcdatamodel` versions) read on Linux through the library's `XcodeModel`
/// (docs/apple-models.md).
enum ModelCommands {
  /// `model check --model M [--store PATH] [--json]`: reads the model, says what it holds and
  /// what was ignored, and with a store whether it matches or how it would be migrated.
  static func check(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--model") }
    let (file, model, versions) = try read(path)
    let storePath = command.value("--store")
    let store = try storePath.map { storePath throws(Failure) in
      let url = storeURL(storePath)
      let stored: ManagedObjectModel
      do { stored = try PersistentStore.storedModel(at: url) } catch {
        throw .storeUnavailable("cannot open \(storePath): \(error)")
      }
      return try perform("cannot compare \(storePath) with the model") {
        // A store made by the classes lists their properties in their order, the file by name.
        (stored.schema.storesAlike(model.schema), try PersistentStore.migrationReport(forStoreAt: url, to: model))
      }
    }
    let report = store?.1
    let attributes = file.entities.flatMap(\.attributes)
    let summary = CheckSummary(
      model: path, version: file.name, versions: versions, entities: file.entities.count,
      attributes: attributes.count, transientAttributes: attributes.filter(\.isTransient).count,
      relationships: file.entities.flatMap(\.relationships).count, composites: file.composites.map(\.name),
      versionHash: model.versionHash,
      ignored: file.ignored, store: storePath,
      storeMatches: store.map { $0.0 || !$0.1.isMigrationNeeded }, storeCanMigrate: report?.canMigrate,
      migration: report)
    if command.flag("--json") {
      print(try json(summary))
    } else {
      print(summary.text)
    }
    if let store, !store.0, !store.1.canMigrate, let storePath {
      throw .failed("\(storePath) cannot be migrated to this model: \(store.1.refusals.count) change(s) refused")
    }
  }

  /// `model generate --model M [-o DIR] [--public]`: one Swift file per entity.
  static func generate(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--model") }
    let (file, _, _) = try read(path)
    let directory = URL(fileURLWithPath: command.value("-o") ?? ".")
    let sources = try perform("cannot generate Swift from \(path)") {
      try file.swiftSources(public: command.flag("--public"))
    }
    try perform("cannot write to \(directory.path)") {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      for source in sources {
        try Data(source.text.utf8).write(to: directory.appendingPathComponent(source.fileName), options: .atomic)
      }
    }
    let written = sources.map { directory.appendingPathComponent($0.fileName).path }
    print(command.flag("--json") ? try json(written) : written.map { "wrote \($0)" }.joined(separator: "\n"))
  }

  /// `model diff A B [--json]`: what migrating a store from version A to version B does, and
  /// whether it can be inferred (exit 1 when not), from the migration planner run on a new,
  /// empty store of A.
  static func diff(_ command: ParsedCommand) async throws(Failure) {
    guard command.positionals.count == 2 else {
      throw .usage(UsageError("model diff takes two models: A and B", usage: command.usage))
    }
    let (oldFile, old, _) = try read(command.positionals[0])
    let (newFile, new, _) = try read(command.positionals[1])
    let report = try perform("cannot compare the models") { () throws -> MigrationReport in
      let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-diff-\(UUID())")
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(at: directory) }
      let url = directory.appendingPathComponent("A.sqlite")
      _ = try PersistentStore(url: url, model: old)
      return try PersistentStore.migrationReport(forStoreAt: url, to: new)
    }
    let needsRows = newFile.requiredAdditions(since: oldFile)
    let summary = DiffSummary(
      from: oldFile.name, to: newFile.name, identical: !report.isMigrationNeeded,
      inferable: report.canMigrate, emptyStoresOnly: needsRows, migration: report)
    print(command.flag("--json") ? try json(summary) : summary.text)
    guard report.canMigrate else {
      throw .failed("\(oldFile.name) → \(newFile.name) cannot be inferred: \(report.refusals.count) change(s) refused")
    }
  }

  /// `model export --model M [--format json]`: the model's JSON form, the file
  /// `typedstore migrate --model` reads.
  static func export(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--model") }
    let format = command.value("--format") ?? "json"
    guard format == "json" else {
      throw .usage(UsageError("unknown format \(format): the only format is json", usage: command.usage))
    }
    let (_, model, _) = try read(path)
    print(String(decoding: model.jsonRepresentation, as: UTF8.self))
  }

  // MARK: - Reading

  /// The model file at `path` (a bundle's current version, or one version), its model, and
  /// the bundle's versions (or the one).
  static func read(_ path: String) throws(Failure) -> (XcodeModel, ManagedObjectModel, [String]) {
    do {
      let url = URL(fileURLWithPath: path)
      let file = try XcodeModel(contentsOf: url)
      let versions =
        url.pathExtension == "xcdatamodeld" ? try XcodeModelBundle(contentsOf: url).versionNames : [file.name]
      return (file, try ManagedObjectModel(xcodeModel: file), versions)
    } catch {
      throw .failed("\(error)")
    }
  }

  static func json(_ value: some Encodable) throws(Failure) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
    encoder.dateEncodingStrategy = .iso8601
    return try perform("cannot encode the output") { String(decoding: try encoder.encode(value), as: UTF8.self) }
  }
}

/// What `model check` prints.
struct CheckSummary: Encodable {
  var model: String
  var version: String
  var versions: [String]
  var entities: Int
  var attributes: Int
  var transientAttributes: Int
  var relationships: Int
  var composites: [String]
  var versionHash: String
  var ignored: [String]
  var store: String?
  var storeMatches: Bool?
  var storeCanMigrate: Bool?
  var migration: MigrationReport?

  var text: String {
    var lines = [
      "\(model): version \(version)" + (versions.count > 1 ? " (versions: \(versions.joined(separator: ", ")))" : ""),
      "\(entities) entities, \(attributes) attributes (\(transientAttributes) transient), \(relationships) relationships",
      "model hash \(versionHash)",
    ]
    if !composites.isEmpty {
      lines.insert("composites (stored as their elements' columns): \(composites.joined(separator: ", "))", at: 2)
    }
    lines += ignored.map { "ignored: \($0)" }
    if let store, let migration {
      if storeMatches == true {
        lines.append("store \(store): matches the model")
      } else {
        lines.append(
          "store \(store): " + (storeCanMigrate == true ? "can be migrated to the model" : "cannot be migrated"))
        lines.append(migration.description)
      }
    }
    return lines.joined(separator: "\n")
  }
}

/// What `model diff` prints.
struct DiffSummary: Encodable {
  var from: String
  var to: String
  var identical: Bool
  var inferable: Bool
  /// Required attributes added with no default: inferable only while their tables are empty.
  var emptyStoresOnly: [String]
  var migration: MigrationReport

  var text: String {
    if identical { return "\(from) → \(to): the same stored model; no migration" }
    var lines = [migration.description, "(planned on an empty store of \(from): the row counts are 0)"]
    lines.append(
      inferable
        ? "\(from) → \(to): inferable (a lightweight migration)"
        : "\(from) → \(to): not inferable; a custom stage is needed")
    lines += emptyStoresOnly.map { "only while its table is empty: \($0) is required and has no default" }
    return lines.joined(separator: "\n")
  }
}

extension XcodeModel {
  /// The attributes of this version that are required, have no default and are new since
  /// `old` (by name or renaming identifier): a store with rows cannot get them inferred.
  func requiredAdditions(since old: XcodeModel) -> [String] {
    var found: [String] = []
    for entity in entities {
      guard
        let previous = old.entities.first(where: {
          $0.name == (entity.renamingIdentifier ?? entity.name) || $0.name == entity.name
        })
      else { continue }  // a new entity has no rows
      for attribute in entity.attributes where !attribute.isTransient && !attribute.isOptional {
        guard attribute.defaultValue == nil else { continue }
        let names = [attribute.name, attribute.renamingIdentifier].compactMap { $0 }
        if !previous.attributes.contains(where: { names.contains($0.name) }) {
          found.append("\(entity.name).\(attribute.name)")
        }
      }
    }
    return found
  }
}
