import ArgumentParsing
import Foundation
import TypedStore

/// `typedstore demo`: a new store, two writer processes and one merging process (the tool
/// running itself as `demo-writer` and `demo-merger`), a progress line, then what each saw
/// (`DemoSummary`) and commands to try on the store.
enum DemoCommand {
  static func run(_ command: ParsedCommand) async throws(Failure) {
    let seconds = try usage { try command.integer("--seconds", in: 1...3600) } ?? 3
    let path = URL(fileURLWithPath: try folder(command.value("--dir"))).appendingPathComponent("demo.sqlite").path
    try claim(path)
    printError("typedstore demo: store \(path); 2 writers for \(seconds) s, 1 merger")
    _ = try DemoStore.container(path)  // created here, so the processes all open an existing store

    let merger = try DemoProcess(["demo-merger", "--store", path], input: true)
    guard await merger.readLine() == "ready" else {
      throw .failed("the merging process did not start: \(await merger.finish().errors)")
    }
    let writers = try ["writer-1", "writer-2"].map { (name) throws(Failure) in
      try DemoProcess(["demo-writer", "--store", path, "--name", name, "--seconds", String(seconds)], input: false)
    }
    let store = try openStore(path)
    await showProgress(of: store, while: writers)

    var writerReports: [WriterReport] = []
    for (index, writer) in writers.enumerated() {
      let ending = await writer.finish()
      guard ending.status == 0 else {
        merger.process.terminate()
        throw .failed("writer-\(index + 1) failed: \(ending.errors)")
      }
      writerReports.append(
        try DemoReport.decode(WriterReport.self, from: ending.output, process: "writer-\(index + 1)"))
    }
    let newest = try perform("cannot read the history") { try store.currentHistoryToken() }
    merger.send("stop \(newest.transactionNumber)\n")
    let ending = await merger.finish()
    guard ending.status == 0 else { throw .failed("the merging process failed: \(ending.errors)") }
    let mergerReport = try DemoReport.decode(MergerReport.self, from: ending.output, process: "the merger")

    let stats = try perform("cannot read the history") { try store.historyStatistics() }
    let history =
      "\(stats.transactions) transactions, \(stats.changes) changes ("
      + stats.changesByEntity.sorted { $0.key < $1.key }.map {
        "\($0.key): \($0.value.inserts) inserted, \($0.value.updates) updated, \($0.value.deletes) deleted"
      }.joined(separator: "; ") + ")"
    let summary = DemoSummary(
      path: path, writers: writerReports, merger: mergerReport, history: history,
      newestToken: stats.currentToken.stringRepresentation)
    print(summary.text(tool: ToolInvocation.command))
    if !mergerReport.matchesStore { throw .failed("the demo's merger did not converge") }
  }

  /// The folder for the store: the one given (made if missing), or a new temporary one.
  private static func folder(_ given: String?) throws(Failure) -> String {
    if let given {
      do {
        try FileManager.default.createDirectory(atPath: given, withIntermediateDirectories: true)
      } catch {
        throw .failed("cannot make the folder \(given): \(error.localizedDescription)")
      }
      return given
    }
    let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("typedstore-demo-XXXXXX")
    var template = Array(base.path.utf8CString)
    guard let made = mkdtemp(&template) else {
      throw .failed("cannot make a temporary folder: \(String(cString: strerror(errno)))")
    }
    return String(cString: made)
  }

  /// Claims the store's file with O_EXCL, so that of two demos started on one folder at once
  /// one refuses; the store is then created in the empty file (closed before SQLite opens it,
  /// so no lock of SQLite's is dropped).
  private static func claim(_ path: String) throws(Failure) {
    let claim = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard claim >= 0 else {
      throw errno == EEXIST
        ? .failed("\(path) exists already: give the demo a new folder with --dir")
        : .failed("cannot create \(path): \(String(cString: strerror(errno)))")
    }
    close(claim)
  }

  /// Until the writers end; on a terminal, a line of the transactions committed and merged.
  private static func showProgress(of store: PersistentStore, while writers: [DemoProcess]) async {
    let started = Date()
    let showsProgress = isatty(2) == 1
    while writers.contains(where: { $0.process.isRunning }) {
      if showsProgress, let current = try? store.currentHistoryToken(),
        let checkpoint = try? store.historyConsumers().first(where: { $0.name == "demo-merger" })?.checkpoint
      {
        FileHandle.standardError.write(
          Data(
            String(
              format: "\r  %.1f s  %d transactions committed, %d merged   ", Date().timeIntervalSince(started),
              current.transactionNumber, checkpoint.transactionNumber
            ).utf8))
      }
      try? await Task.sleep(for: .milliseconds(100))
    }
    if showsProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
  }
}
