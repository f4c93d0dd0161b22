import Foundation
import Spawning
import Synchronization

/// A throwaway PostgreSQL server for the tests of this process: a cluster made with `initdb`
/// in a folder of `/tmp` only its owner enters, listening on a Unix socket there and on a
/// loopback port (with a password), with `fsync=off`; stopped when the process exits, and by
/// the next test process when this one died first. Debian's binaries are under
/// `/usr/lib/postgresql/15/bin` (`Tools/setup.sh` installs them); `initdb` refuses root, so
/// as root the server runs as the `postgres` user.
///
/// Each test makes a schema of its own (`schemaName()`). When the server cannot start, every
/// PostgreSQL test fails with the reason: they are never skipped.
enum PostgreSQLTestServer {
  struct StartError: Error, CustomStringConvertible {
    var description: String
  }

  private static let started = Mutex<Result<Server, StartError>?>(nil)

  struct Server: Sendable {
    var folder: String
    var port: Int
    var password: String
    /// The server's options (`pg_ctl -o`), to start it again.
    var options: String
    var asRoot: Bool
    /// A URL of the server through its Unix socket (in a folder only its owner enters).
    var url: String {
      "postgresql:///postgres?host=\(folder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? folder)"
        + "&port=\(port)&user=postgres"
    }
    /// A URL of the server through loopback TCP, as another host would connect (with a
    /// password: another local user cannot connect).
    var tcpURL: String { "postgresql://postgres:\(password)@127.0.0.1:\(port)/postgres" }
  }

  /// The server, started on first use.
  static func server() throws -> Server {
    try started.withLock { started in
      if started == nil {
        started = Result { try start() }.mapError { $0 as? StartError ?? StartError(description: "\($0)") }
      }
      return try started!.get()
    }
  }

  /// A schema name no other test uses.
  static func schemaName() -> String {
    "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
  }

  static let binaries = "/usr/lib/postgresql/15/bin"

  /// A server of the caller's own, for a test that stops or restarts it (the shared one
  /// serves tests running at the same time); stopped when the process exits.
  static func ownServer() throws -> Server { try start() }

  /// Stops `server` as an administrator would (`pg_ctl stop -m fast`: sessions are ended).
  static func stop(_ server: Server) throws {
    try run(["\(binaries)/pg_ctl", "-D", "\(server.folder)/data", "-m", "fast", "-w", "stop"], as: server.asRoot)
  }

  /// Starts `server` again, on its port.
  static func restart(_ server: Server) throws {
    try run(
      [
        "\(binaries)/pg_ctl", "-D", "\(server.folder)/data", "-o", server.options, "-l", "\(server.folder)/server.log",
        "-w", "-t", "60", "start",
      ], as: server.asRoot)
  }

  /// The ports this process's servers were given (see `start`).
  private static let portsGiven = Mutex<Set<Int>>([])

  private static func start() throws -> Server {
    guard FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") else {
      throw StartError(
        description: "PostgreSQL 15 is not installed (\(binaries)/initdb): run Tools/setup.sh, which installs "
          + "postgresql-15 and libpq-dev")
    }
    let asRoot = getuid() == 0
    removeLeftovers(asRoot: asRoot)
    // A short path: a Unix socket's path is limited to 107 bytes.
    let folder = "/tmp/\(folderPrefix)\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(
      atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    if asRoot { try run(["/bin/chown", "postgres:postgres", folder], as: false) }
    let password = UUID().uuidString
    guard
      FileManager.default.createFile(
        atPath: "\(folder)-password", contents: Data(password.utf8), attributes: [.posixPermissions: 0o600])
    else { throw StartError(description: "cannot write \(folder)-password") }
    defer { try? FileManager.default.removeItem(atPath: "\(folder)-password") }
    if asRoot { try run(["/bin/chown", "postgres:postgres", "\(folder)-password"], as: false) }
    try run(
      [
        "\(binaries)/initdb", "-D", "\(folder)/data", "-U", "postgres", "--auth-local=trust",
        "--auth-host=scram-sha-256", "--pwfile=\(folder)-password", "--no-sync", "-E", "UTF8", "--no-locale",
      ], as: asRoot)
    // A port from the process ID, then others if one is taken (another test run's server),
    // never one a server of this process was given: a stopped server gets its port back when
    // it starts again, and another server starting meanwhile must not take it.
    var failures: [String] = []
    for attempt in 0..<8 {
      // Below Linux's ephemeral ports (32768 and up).
      let port = 20_000 + (Int(ProcessInfo.processInfo.processIdentifier) + attempt * 7_919) % 12_000
      guard portsGiven.withLock({ $0.insert(port).inserted }) else { continue }
      let options =
        "-k \(folder) -p \(port) -c listen_addresses=127.0.0.1 -c unix_socket_permissions=0700 -c fsync=off "
        + "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
      do {
        try run(
          [
            "\(binaries)/pg_ctl", "-D", "\(folder)/data", "-o", options, "-l", "\(folder)/server.log", "-w", "-t", "60",
            "start",
          ], as: asRoot)
      } catch {
        failures.append("\(error)")
        continue
      }
      stopAtExit(folder: folder, asRoot: asRoot)
      return Server(folder: folder, port: port, password: password, options: options, asRoot: asRoot)
    }
    let log = (try? String(contentsOfFile: "\(folder)/server.log", encoding: .utf8)) ?? ""
    throw StartError(description: "the PostgreSQL server did not start: \(failures.last ?? "")\n\(log)")
  }

  /// Runs a command to its end (as the `postgres` user when `asPostgres`), throwing with its
  /// output when it fails.
  private static func run(_ command: [String], as asPostgres: Bool) throws {
    let process = POSIXProcess()
    let full = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + command : command
    process.executableURL = URL(fileURLWithPath: full[0])
    process.arguments = Array(full.dropFirst())
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw StartError(description: "\(command.joined(separator: " ")) failed: \(text)")
    }
  }

  static let folderPrefix = "typedstore-postgresql-"

  /// Stops and removes the servers of test processes that died without stopping theirs (a
  /// crash, a signal, a CI timeout: `atexit` did not run).
  private static func removeLeftovers(asRoot: Bool) {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") else { return }
    for name in names where name.hasPrefix(folderPrefix) && !name.hasSuffix("-password") {
      let pid = name.dropFirst(folderPrefix.count).prefix { $0.isNumber }
      guard let pid = Int32(pid), kill(pid, 0) != 0, errno == ESRCH else { continue }  // its owner is gone
      let folder = "/tmp/\(name)"
      try? run(["\(binaries)/pg_ctl", "-D", "\(folder)/data", "-m", "immediate", "-w", "stop"], as: asRoot)
      try? FileManager.default.removeItem(atPath: folder)
    }
  }

  /// The stop command of each server started, its folder last.
  private static let stopCommands = Mutex<[[String]]>([])

  private static func stopAtExit(folder: String, asRoot: Bool) {
    let command = ["\(binaries)/pg_ctl", "-D", "\(folder)/data", "-m", "immediate", "-w", "stop"]
    let first = stopCommands.withLock { commands in
      commands.append((asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + command + [folder])
      return commands.count == 1
    }
    guard first else { return }
    atexit {
      for saved in PostgreSQLTestServer.stopCommands.withLock({ $0 }) {
        guard let folder = saved.last else { continue }
        try? PostgreSQLTestServer.run(Array(saved.dropLast()), as: false)
        try? FileManager.default.removeItem(atPath: folder)
      }
    }
  }
}
