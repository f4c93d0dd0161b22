import Foundation
import ShopModel
import Testing
import TypedStore
import TypedStoreTesting

/// `typedstore model check|generate|diff|export`, run as a user runs them
/// (docs/apple-models.md shows this output).
@Suite struct ModelCommandTests {
  static let bundle = ModelFiles.shop.path
  static func version(_ name: String) -> String { ModelFiles.shop.appendingPathComponent("\(name).xcdatamodel").path }

  @Test func checkSaysWhatTheModelHolds() throws {
    let run = try typedstore(["model", "check", "--model", Self.bundle])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.lines.first == "\(Self.bundle): version Shop 3 (versions: Shop, Shop 2, Shop 3)")
    #expect(run.lines.contains("6 entities, 14 attributes (1 transient), 8 relationships"))
    #expect(run.lines.contains("composites (stored as their elements' columns): Address, GeoPoint"))
    #expect(run.lines.contains { $0.hasPrefix("ignored: configuration Default (line 65)") })
    let json = try typedstore(["model", "check", "--model", Self.bundle, "--json"]).json
    #expect(json["version"] as? String == "Shop 3")
    #expect(json["entities"] as? Int == 6)
    let hash = try ManagedObjectModel(contentsOf: ModelFiles.shop).versionHash
    #expect(json["versionHash"] as? String == hash)
  }

  @Test func checkWithAStoreSaysWhetherItMatchesOrHowItMigrates() throws {
    let url = try ModelFileMigrationTests.makeVersion1Store()
    let before = try Data(contentsOf: url)
    let old = try typedstore(["model", "check", "--model", Self.bundle, "--store", url.path])
    #expect(old.status == 0, "\(old.stderr)")
    #expect(old.stdout.contains("store \(url.path): can be migrated to the model"))
    #expect(old.stdout.contains("renameAttribute Shopper.fullName: was name"))
    #expect(try Data(contentsOf: url) == before)
    let plan = try MigrationPlan(
      bundle: ModelFiles.shop, order: ModelFileMigrationTests.order, classes: ModelFiles.shopClasses)
    _ = try PersistentContainer(name: "Shop", migrationPlan: plan, storeURL: url)
    let migrated = try typedstore(["model", "check", "--model", Self.bundle, "--store", url.path, "--json"])
    #expect(migrated.status == 0, "\(migrated.stderr)")
    #expect(migrated.json["storeMatches"] as? Bool == true)
  }

  @Test func generateWritesClassesThatCompile() throws {
    let folder = try ModelFiles.temporaryFolder()
    let run = try typedstore(["model", "generate", "--model", Self.bundle, "-o", folder.path, "--public"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.lines.count == 8 && run.lines.allSatisfy { $0.hasPrefix("wrote \(folder.path)/") })
    // Tests/ShopModel is this output, compiled as a module of the package.
    let committed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("ShopModel")
    for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
      let written = try Data(contentsOf: folder.appendingPathComponent(name))
      #expect(written == (try Data(contentsOf: committed.appendingPathComponent(name))), "\(name)")
    }
    let internalRun = try typedstore(["model", "generate", "--model", Self.bundle, "-o", folder.path])
    #expect(internalRun.status == 0)
    let shopper = try String(contentsOf: folder.appendingPathComponent("Shopper.swift"), encoding: .utf8)
    #expect(shopper.contains("final class Shopper: ManagedObject {") && !shopper.contains("public"))
  }

  @Test func diffSaysWhatChangesAndWhetherItIsInferable() throws {
    let run = try typedstore(["model", "diff", Self.version("Shop"), Self.version("Shop 2")])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("addAttribute Shopper.loyalty: existing rows get 0"))
    #expect(run.lines.last == "Shop → Shop 2: inferable (a lightweight migration)")
    let same = try typedstore(["model", "diff", Self.version("Shop 3"), Self.bundle])
    #expect(same.stdout == "Shop 3 → Shop 3: the same stored model; no migration\n")
    // A type change cannot be inferred: exit 1, and the report says why.
    let changed = try String(contentsOfFile: Self.version("Shop 2") + "/contents", encoding: .utf8)
      .replacingOccurrences(
        of: #"name="phone" optional="YES" attributeType="String""#,
        with: #"name="phone" optional="YES" attributeType="Integer 64""#)
    let retyped = try ModelFiles.version(changed, name: "Retyped")
    let refused = try typedstore(["model", "diff", Self.version("Shop 2"), retyped.path])
    #expect(refused.status == 1)
    #expect(refused.stdout.contains("not inferable"))
    #expect(refused.stderr.contains("cannot be inferred"))
  }

  @Test func exportPrintsTheJSONMigrateReads() throws {
    let run = try typedstore(["model", "export", "--model", Self.bundle, "--format", "json"])
    #expect(run.status == 0, "\(run.stderr)")
    let schema = try JSONDecoder().decode(ModelSchema.self, from: Data(run.stdout.utf8))
    #expect(
      schema.storesAlike(try ManagedObjectModel(contentsOf: ModelFiles.shop, classes: ModelFiles.shopClasses).schema))
    let url = try ModelFileMigrationTests.makeVersion1Store()
    let dryRun = try typedstore(["migrate", "--store", url.path, "--model", Self.bundle, "--dry-run"])
    #expect(dryRun.status == 0, "\(dryRun.stderr)")
    #expect(dryRun.stdout.contains("addAttribute Shopper.loyalty: existing rows get 0 (2 rows)"))
  }

  @Test func badInputIsOneLineAndAnExitCode() throws {
    let broken = try ModelFiles.version(ModelFiles.model(#"<entity name="A" parentEntity="Nobody"/>"#))
    let run = try typedstore(["model", "check", "--model", broken.path])
    #expect(run.status == 1)
    #expect(
      run.stderr == "typedstore: \(broken.path)/contents:3: entity A: its parent entity Nobody is not in the model\n")
    #expect(try typedstore(["model", "export", "--model", Self.bundle, "--format", "xml"]).status == 2)
    #expect(try typedstore(["model", "diff", Self.bundle]).status == 2)
    #expect(try typedstore(["model", "check"]).status == 2)
    let missing = try typedstore(["model", "check", "--model", Self.bundle, "--store", "/nonexistent/shop.sqlite"])
    #expect(missing.status == 3 && missing.stderr.hasPrefix("typedstore: cannot open /nonexistent/shop.sqlite"))
    let help = try typedstore(["model", "--help"])
    #expect(help.status == 0)
    for command in ["check", "generate", "diff", "export"] { #expect(help.stdout.contains(command)) }
  }
}
