import Foundation
import Spawning
import Testing
import TypedStore

/// `typedstore --version` says the library's version (`TypedStoreVersion.current`, the one
/// place it is written), and `Tools/install.sh` puts a tool that says it where it was asked to.
@Suite struct InstallAndVersionTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  @Test func versionIsTheLibrarysVersion() throws {
    let run = try typedstore(["--version"])
    #expect(run.status == 0)
    #expect(run.stdout.hasPrefix("typedstore \(TypedStoreVersion.current) "), "\(run.stdout)")
  }

  @Test func theChangelogsNewestVersionIsTheLibrarysVersion() throws {
    let text = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
    let newest = text.split(separator: "\n").first { $0.hasPrefix("## ") && !$0.hasPrefix("## Unreleased") }
    #expect(newest?.hasPrefix("## \(TypedStoreVersion.current) ") == true, "\(newest ?? "no version")")
  }

  /// The script's build step is `swift build -c release`, which cannot run inside this test
  /// run (SwiftPM holds the build folder): it installs the binary this run built instead.
  @Test func installScriptCopiesTheToolToThePrefixAndSaysWhere() throws {
    let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("typedstore-install-\(getpid())")
      .appendingPathComponent("bin")
    defer { try? FileManager.default.removeItem(at: prefix.deletingLastPathComponent()) }
    let process = POSIXProcess()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [
      Self.root.appendingPathComponent("Tools/install.sh").path, "--prefix", prefix.path, "--binary",
      builtProduct("typedstore").path,
    ]
    let install = try runCollectingOutput(process, seconds: 60)
    #expect(install.status == 0, "\(install.stderr)")
    let installed = prefix.appendingPathComponent("typedstore")
    #expect(install.stdout.contains("at \(installed.path)"), "\(install.stdout)")

    let version = POSIXProcess()
    version.executableURL = installed
    version.arguments = ["--version"]
    let run = try runCollectingOutput(version, seconds: 30)
    #expect(run.status == 0)
    #expect(run.stdout.hasPrefix("typedstore \(TypedStoreVersion.current) "), "\(run.stdout)")
  }
}
