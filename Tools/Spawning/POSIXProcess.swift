import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A child process started with `posix_spawn`, with Foundation's `Process` API for what the
/// tools and the tests use of it.
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` before every spawn and copies
/// 256 bytes from each directory entry, reading past the end of glibc's buffer: a process that
/// starts many children crashes now and then with "Bad pointer dereference" in `Process.run()`
/// (swift-corelibs-foundation#5472, in the Swift 6.3.1 toolchain here; it crashed this
/// project's CI). This type spawns without that scan: the child closes every descriptor above
/// 2 with glibc's `posix_spawn_file_actions_addclosefrom_np`, looked up at run time (Swift's
/// Glibc module does not declare it).
///
/// ```swift
/// let process = POSIXProcess()
/// process.executableURL = URL(fileURLWithPath: "/bin/echo")
/// process.arguments = ["hello"]
/// let output = Pipe()
/// process.standardOutput = output
/// try process.run()
/// process.waitUntilExit()
/// ```
public final class POSIXProcess: Sendable {
  /// How the process ended.
  public enum TerminationReason: Sendable {
    case exit
    case uncaughtSignal
  }

  /// Where a standard stream of the child goes.
  private enum Stream {
    case inherit
    case pipe(Pipe)
    case handle(FileHandle)
  }

  private struct Configuration {
    var executableURL: URL?
    var arguments: [String]?
    var environment: [String: String]?
    var currentDirectoryURL: URL?
    var standardInput: Stream = .inherit
    var standardOutput: Stream = .inherit
    var standardError: Stream = .inherit
  }

  private struct Status {
    var pid: pid_t = 0
    /// The raw `waitpid` status, once the child has been reaped.
    var waitStatus: Int32?
  }

  private let configuration = Mutex(Configuration())
  private let status = Mutex(Status())

  public init() {}

  // MARK: - Configuration (before `run()`)

  public var executableURL: URL? {
    get { configuration.withLock { $0.executableURL } }
    set { configuration.withLock { $0.executableURL = newValue } }
  }

  public var arguments: [String]? {
    get { configuration.withLock { $0.arguments } }
    set { configuration.withLock { $0.arguments = newValue } }
  }

  /// The child's environment; nil inherits this process's.
  public var environment: [String: String]? {
    get { configuration.withLock { $0.environment } }
    set { configuration.withLock { $0.environment = newValue } }
  }

  public var currentDirectoryURL: URL? {
    get { configuration.withLock { $0.currentDirectoryURL } }
    set { configuration.withLock { $0.currentDirectoryURL = newValue } }
  }

  /// A `Pipe` (the child reads its read end), a `FileHandle`, or nil to inherit.
  public var standardInput: Any? {
    get { configuration.withLock { Self.object($0.standardInput) } }
    set { configuration.withLock { $0.standardInput = Self.stream(newValue) } }
  }

  /// A `Pipe` (the child writes its write end), a `FileHandle`, or nil to inherit.
  public var standardOutput: Any? {
    get { configuration.withLock { Self.object($0.standardOutput) } }
    set { configuration.withLock { $0.standardOutput = Self.stream(newValue) } }
  }

  /// A `Pipe` (the child writes its write end), a `FileHandle`, or nil to inherit.
  public var standardError: Any? {
    get { configuration.withLock { Self.object($0.standardError) } }
    set { configuration.withLock { $0.standardError = Self.stream(newValue) } }
  }

  private static func stream(_ value: Any?) -> Stream {
    if let pipe = value as? Pipe { return .pipe(pipe) }
    if let handle = value as? FileHandle { return .handle(handle) }
    return .inherit
  }

  private static func object(_ stream: Stream) -> Any? {
    switch stream {
    case .inherit: nil
    case .pipe(let pipe): pipe
    case .handle(let handle): handle
    }
  }

  // MARK: - Running

  /// Starts the child.
  ///
  /// - Throws: a POSIX error when it cannot be started (no executable, no such file, …).
  public func run() throws {
    let configuration = configuration.withLock { $0 }
    guard let executable = configuration.executableURL?.path else {
      throw POSIXError(.ENOENT)
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }

    // Standard streams, then every other descriptor closed in the child.
    let streams: [(Stream, Int32, Bool)] = [
      (configuration.standardInput, 0, false), (configuration.standardOutput, 1, true),
      (configuration.standardError, 2, true),
    ]
    for (stream, target, writes) in streams {
      switch stream {
      case .inherit: continue
      case .pipe(let pipe):
        let end = writes ? pipe.fileHandleForWriting : pipe.fileHandleForReading
        posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
      case .handle(let handle):
        posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
      }
    }
    guard let addCloseFrom = Self.addCloseFrom else { throw POSIXError(.ENOSYS) }
    try check(addCloseFrom(&actions, 3))
    if let directory = configuration.currentDirectoryURL?.path {
      guard let addChdir = Self.addChdir else { throw POSIXError(.ENOSYS) }
      try check(addChdir(&actions, directory))
    }
    // A clean child: default signal dispositions and no blocked signal, as a shell gives.
    var all = sigset_t()
    sigfillset(&all)
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

    let argv = [executable] + (configuration.arguments ?? [])
    let environment = (configuration.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    var pid: pid_t = 0
    let code = withCStrings(argv) { argv in
      withCStrings(environment) { envp in
        posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
      }
    }
    try check(code)
    status.withLock { $0.pid = pid }
    // The parent's copies of the child's pipe ends, as Foundation closes them.
    for (stream, _, writes) in streams {
      guard case .pipe(let pipe) = stream else { continue }
      try? (writes ? pipe.fileHandleForWriting : pipe.fileHandleForReading).close()
    }
  }

  /// The child's process ID (0 before `run()`).
  public var processIdentifier: Int32 { status.withLock { $0.pid } }

  /// Whether the child has not ended yet (it is reaped when it has).
  public var isRunning: Bool {
    let (pid, ended) = status.withLock { ($0.pid, $0.waitStatus != nil) }
    guard pid > 0, !ended else { return false }
    var raw: Int32 = 0
    let reaped = waitpid(pid, &raw, WNOHANG)
    if reaped == pid {
      record(raw)
      return false
    }
    return reaped == 0 || (reaped < 0 && errno == ECHILD && status.withLock { $0.waitStatus == nil })
  }

  /// Waits until the child ends.
  public func waitUntilExit() {
    let pid = status.withLock { $0.pid }
    guard pid > 0 else { return }
    while status.withLock({ $0.waitStatus == nil }) {
      var raw: Int32 = 0
      let reaped = waitpid(pid, &raw, 0)
      if reaped == pid {
        record(raw)
      } else if reaped < 0 && errno != EINTR {
        // Another thread reaped it: its status is on the way.
        usleep(1000)
      }
    }
  }

  private func record(_ raw: Int32) {
    status.withLock { if $0.waitStatus == nil { $0.waitStatus = raw } }
  }

  /// The exit code, or the number of the signal that ended the child.
  public var terminationStatus: Int32 {
    let raw = status.withLock { $0.waitStatus } ?? 0
    let signal = raw & 0x7f
    return signal == 0 ? (raw >> 8) & 0xff : signal
  }

  public var terminationReason: TerminationReason {
    let raw = status.withLock { $0.waitStatus } ?? 0
    return raw & 0x7f == 0 ? .exit : .uncaughtSignal
  }

  /// Sends SIGTERM.
  public func terminate() {
    let pid = processIdentifier
    if pid > 0 { kill(pid, SIGTERM) }
  }

  // MARK: - glibc's extensions, looked up by name

  private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
  private typealias AddChdir =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32

  private static var addCloseFrom: AddCloseFrom? {
    dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
  }

  private static var addChdir: AddChdir? {
    dlsym(nil, "posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: AddChdir.self) }
  }
}

private func check(_ code: Int32) throws {
  guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EINVAL) }
}

/// Calls `body` with a NULL-terminated array of C strings.
private func withCStrings<Result>(
  _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
) -> Result {
  let pointers = strings.map { strdup($0) } + [nil]
  defer { for pointer in pointers { free(pointer) } }
  return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
