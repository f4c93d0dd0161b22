import ArgumentParsing
import Foundation
import TypedStore

/// `typedstore migrate --store PATH --model FILE [--dry-run] [--json]`: what migrating the store
/// to the model in FILE (a model's `jsonRepresentation`) would do, step by step, and, without
/// `--dry-run`, the migration itself, as an app opening the store with that model would run it.
enum MigrateCommand {
  static func run(_ command: ParsedCommand) async throws(Failure) {
    let (path, modelPath) = try usage { (try command.required("--store"), try command.required("--model")) }
    let model = try readModel(modelPath)
    let url = storeURL(path)
    let report = try perform("cannot plan the migration of \(path)") {
      try PersistentStore.migrationReport(forStoreAt: url, to: model)
    }
    if command.flag("--json") {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys]
      encoder.dateEncodingStrategy = .iso8601
      let data = try perform("cannot encode the report") { try encoder.encode(report) }
      print(String(decoding: data, as: UTF8.self))
    } else {
      print(report.description)
    }
    guard report.canMigrate else {
      throw .failed("\(path) cannot be migrated to this model: \(report.refusals.count) change(s) refused, see above")
    }
    guard report.isMigrationNeeded, !command.flag("--dry-run") else { return }
    try perform("cannot migrate \(path)") { _ = try PersistentStore(url: url, model: model) }
    FileHandle.standardError.write(Data("migrated \(path) to model \(model.versionHash.prefix(12))\n".utf8))
  }

  /// The model in the file, encoded as a model's `jsonRepresentation` is (keys sorted), so that
  /// its hash is the application's whatever the file's spacing; or the model of an Xcode model
  /// file (docs/apple-models.md).
  private static func readModel(_ path: String) throws(Failure) -> ManagedObjectModel {
    if ["xcdatamodeld", "xcdatamodel"].contains(URL(fileURLWithPath: path).pathExtension) {
      return try ModelCommands.read(path).1
    }
    return try perform("cannot read the model \(path)") {
      let schema = try JSONDecoder().decode(ModelSchema.self, from: try Data(contentsOf: URL(fileURLWithPath: path)))
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys]
      return try ManagedObjectModel(schema: schema, json: try encoder.encode(schema))
    }
  }
}
