import Foundation
import Spawning

/// A child process running this program in one of the demo's roles, its output read as it
/// goes. Reads block, so they run on threads of their own, never on the concurrency pool.
final class DemoProcess {
  let process: POSIXProcess
  private let input: Pipe?
  private let output = Pipe()
  private let errors = Pipe()

  /// What a finished process left: its exit status, the rest of its output, its errors.
  struct Ending: Sendable {
    var status: Int32
    var output: String
    var errors: String
  }

  init(_ arguments: [String], input: Bool) throws(Failure) {
    process = POSIXProcess()
    process.executableURL = ToolInvocation.executable
    process.arguments = arguments
    self.input = input ? Pipe() : nil
    process.standardInput = self.input ?? FileHandle.nullDevice
    process.standardOutput = output
    process.standardError = errors
    do { try process.run() } catch { throw .failed("cannot start \(arguments[0]): \(error)") }
  }

  /// One line of the child's output (for the merger's "ready").
  func readLine() async -> String {
    let handle = output.fileHandleForReading
    return await onThread {
      var line = Data()
      while true {
        let byte = handle.readData(ofLength: 1)
        if byte.isEmpty || byte == Data("\n".utf8) { break }
        line.append(byte)
      }
      return String(decoding: line, as: UTF8.self)
    }
  }

  func send(_ text: String) {
    input?.fileHandleForWriting.write(Data(text.utf8))
  }

  /// Waits for the child; its remaining output and its errors.
  func finish() async -> Ending {
    // Both pipes at once: a child filling one while we wait on the other would block.
    let (out, err) = (output.fileHandleForReading, errors.fileHandleForReading)
    async let errorData = onThread { err.readDataToEndOfFile() }
    let outputData = await onThread { out.readDataToEndOfFile() }
    let errorText = String(decoding: await errorData, as: UTF8.self)
    process.waitUntilExit()  // a moment at most: it has closed its output
    return Ending(
      status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
      errors: errorText.trimmingCharacters(in: .whitespacesAndNewlines))
  }
}

/// Runs blocking work (a read of a pipe or of stdin) on a thread of its own, and waits for it
/// without holding a thread of the concurrency pool.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread.detachNewThread { continuation.resume(returning: work()) }
  }
}
