import Foundation
import Spawning

/// This program run again in one of its roles (`BenchRole`): the memory probes, the latency
/// row's writer, the throughput row's consumers.
enum ChildProcess {
  /// This executable.
  static var executable: URL { URL(fileURLWithPath: CommandLine.arguments[0]) }

  /// Starts this program with `arguments`, its standard output to `output`.
  static func start(_ arguments: [String], output: Any) throws -> POSIXProcess {
    let process = POSIXProcess()
    process.executableURL = executable
    process.arguments = arguments
    process.standardOutput = output
    try process.run()
    return process
  }

  /// The next line `pipe` carries, without its newline; nil at its end.
  static func readLine(_ pipe: Pipe) -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while read(pipe.fileHandleForReading.fileDescriptor, &byte, 1) == 1 {
      if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
      bytes.append(byte)
    }
    return nil
  }

  /// Runs this program with `arguments` to its end; what it printed, trimmed. Throws when it
  /// fails.
  static func output(of arguments: [String]) throws -> String {
    let pipe = Pipe()
    let probe = try start(arguments, output: pipe)
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    probe.waitUntilExit()
    guard probe.terminationStatus == 0 else { throw BenchError.sqlite("the probe \(arguments[0]) failed: \(output)") }
    return output.trimmingCharacters(in: .whitespacesAndNewlines)
  }
}
