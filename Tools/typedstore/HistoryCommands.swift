import ArgumentParsing
import Dispatch
import Foundation
import Synchronization
import TypedStore

/// `typedstore history export|watch|prune|stats`.
enum HistoryCommands {
  // MARK: - Requests

  /// The request the filters of `export` and `watch` describe, checked against the store:
  /// an unknown entity or author is an error, not an empty export.
  /// `checksAuthors`: whether an author no kept transaction has is refused (an export of
  /// history that exists), or allowed (a watch for commits still to come).
  static func request(
    _ command: ParsedCommand, store: PersistentStore, defaultStart: HistoryToken, checksAuthors: Bool = true
  ) throws(Failure) -> HistoryRequest {
    if command.has("--after") && command.has("--since") {
      throw .usage(command.error("Give --after or --since, not both"))
    }
    var request = HistoryRequest(after: defaultStart)
    if let after = command.value("--after") {
      request.start = .after(try Values.token(after, option: "--after", store: store, command: command))
    }
    if let since = command.value("--since") {
      request.start = .afterDate(try Values.date(since, option: "--since", command: command))
    }
    if let until = command.value("--until") {
      if Int64(until) != nil || HistoryToken(stringRepresentation: until) != nil {
        request.end = try Values.token(until, option: "--until", store: store, command: command)
      } else if let date = Values.date(until) {
        request.endDate = date
      } else {
        throw .usage(
          command.error(
            "The value '\(until)' is invalid for '--until': expected a token, a transaction number or a date"))
      }
    }
    let entities = command.values("--entity")
    for name in entities where store.model.entity(named: name) == nil {
      let known = store.model.entities.map(\.name).joined(separator: ", ")
      throw .failed("the store has no entity named '\(name)' (its entities: \(known))")
    }
    if !entities.isEmpty { request.entityNames = Set(entities) }
    let authors = command.values("--author") + command.values("--exclude-author")
    if checksAuthors && !authors.isEmpty {
      let known = try perform("cannot read the history") { try store.historyStatistics().transactionsByAuthor }
      for author in authors where known[author] == nil {
        throw .failed(
          "no transaction kept in the store's history has the author '\(author)' (authors: "
            + (known.keys.sorted().joined(separator: ", ").nilIfEmpty ?? "none") + ")")
      }
    }
    if !command.values("--author").isEmpty { request.authors = Set(command.values("--author")) }
    request.excludedAuthors = Set(command.values("--exclude-author"))
    if let limit = try usage({ try command.integer("--limit", in: 0...Int.max) }) { request.transactionLimit = limit }
    return request
  }

  // MARK: - export

  static func export(_ command: ParsedCommand) async throws(Failure) {
    let store = try openStore(try usage { try command.required("--store") })
    let format: HistoryExportFormat
    switch command.value("--format") ?? "ndjson" {
    case "ndjson": format = .ndjson
    case "json": format = .json
    case let other:
      throw .usage(command.error("The value '\(other)' is invalid for '--format': expected ndjson or json"))
    }
    let horizon = try perform("cannot read the history") { try store.historyHorizon() }
    let request = try request(command, store: store, defaultStart: horizon)
    let outputPath = command.value("--output") ?? "-"
    try refuseStoreFile(outputPath, store: store)
    let output = try OutputFile(path: outputPath, gzip: command.flag("--gzip"))
    // Read before the export: when an export after a date writes nothing, every transaction
    // up to this one was committed at or before the date, so a script resumes after it.
    let newest = try perform("cannot read the history") { try store.currentHistoryToken() }
    let summary: HistoryExportSummary
    do {
      summary = try store.exportHistory(request, format: format) { chunk in try output.write(chunk) }
      try output.close()
    } catch {
      output.discard()
      if let error = error as? Failure { throw error }
      throw .failed("cannot export the history: \(error)")
    }
    // Where to resume: the last transaction written, or where this export started.
    let resume: HistoryToken
    switch (summary.lastToken, request.start) {
    case (let last?, _): resume = last
    case (nil, .after(let start)): resume = start
    case (nil, .afterDate): resume = newest
    case (nil, .beginning): resume = horizon
    }
    printError("exported \(summary.transactions) transactions, \(summary.changes) changes")
    printError("last token: \(resume.stringRepresentation)")
  }

  // MARK: - watch

  static func watch(_ command: ParsedCommand) async throws(Failure) {
    var store = try await follow(command)
    // A read-only open gives the -wal and -shm files it made SQLite create back when the
    // store's last connection closes. The remote-change monitor's thread closes its own as it
    // ends, a moment after the container goes: the store is let go here, once nothing else
    // holds it, so that this happens before the process exits.
    let deadline = ContinuousClock.now + .seconds(2)
    while !isKnownUniquelyReferenced(&store) && ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(1))
    }
  }

  /// Prints each new transaction until a signal; returns the store it followed.
  private static func follow(_ command: ParsedCommand) async throws(Failure) -> PersistentStore {
    let path = try usage { try command.required("--store") }
    let container = try openContainer(path)
    let store = container.persistentStore
    let now = try perform("cannot read the history") { try store.currentHistoryToken() }
    var request = try request(command, store: store, defaultStart: now, checksAuthors: false)
    guard case HistoryRequest.Start.after(var position) = request.start else {
      throw .usage(command.error("watch starts after a token: give --after, not --since"))
    }
    let output = try OutputFile(path: "-", gzip: false)

    // Wake-ups: every commit of another process (the remote-change monitor), the signals
    // that end the watch, and a poll every second as a backstop.
    let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    let stopped = Atomic<Bool>(false)
    let observation = container.addStoreChangesObserver { _ in wake.yield() }
    defer { withExtendedLifetime(observation) {} }
    let sources = stopOnSignals {
      stopped.store(true, ordering: .relaxed)
    } then: {
      wake.yield()
    }
    defer { for source in sources { source.cancel() } }
    let poll = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(1))
        wake.yield()
      }
    }
    defer { poll.cancel() }
    printError("watching \(path) after transaction \(position.transactionNumber); Ctrl-C stops")
    var next = wakes.makeAsyncIterator()
    while !stopped.load(ordering: .relaxed) {
      // Up to the newest transaction now, so that filtered-out transactions move the position too.
      let newest = try perform("cannot read the history") { try store.currentHistoryToken() }
      if newest.transactionNumber > position.transactionNumber {
        request.start = .after(position)
        request.end = newest
        _ = try perform("cannot read the history") {
          try store.exportHistory(request) { chunk in try output.write(chunk) }
        }
        position = newest
      }
      _ = await next.next()
    }
    printError("last token: \(position.stringRepresentation)")
    return store
  }

  /// SIGINT and SIGTERM, ignored by default, call `stop` then `wake` instead. Returns once
  /// both are caught: libdispatch installs its handler on its own thread after `resume()`,
  /// and a signal that came in between would be ignored, leaving the watch running.
  private static func stopOnSignals(
    _ stop: @escaping @Sendable () -> Void, then wake: @escaping @Sendable () -> Void
  ) -> [any DispatchSourceSignal] {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let sources = [SIGINT, SIGTERM].map { number in
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        stop()
        wake()
      }
      source.resume()
      return source
    }
    let deadline = ContinuousClock.now + .seconds(5)
    while !caughtSignals().isSuperset(of: [SIGINT, SIGTERM]) && ContinuousClock.now < deadline {
      Thread.sleep(forTimeInterval: 0.001)
    }
    return sources
  }

  /// The signals this process has a handler for (`SigCgt` in `/proc/self/status`).
  private static func caughtSignals() -> Set<Int32> {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
      let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
    else { return [] }
    return Set((1...64).filter { mask & (1 << UInt64($0 - 1)) != 0 }.map(Int32.init))
  }

  // MARK: - prune

  static func prune(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let policies = ["--consumed", "--before", "--older-than", "--keep-last"].filter { command.has($0) }
    guard policies.count == 1 else {
      throw .usage(
        command.error(
          policies.isEmpty
            ? "Give one policy: --consumed, --before, --older-than or --keep-last"
            : "Give one policy, not \(policies.joined(separator: " and "))"))
    }
    let dryRun = command.flag("--dry-run")
    // A dry run only reads (one snapshot), so it opens the store read-only: no byte of its
    // files changes.
    let store = try openStore(path, writable: !dryRun)
    let policy: HistoryPruningPolicy
    if command.flag("--consumed") {
      policy = .consumed
    } else if let before = command.value("--before") {
      // Strictly before, as `deleteHistory(before:)`: the token's own transaction is kept.
      policy = .before(try Values.token(before, option: "--before", store: store, command: command))
    } else if let age = command.value("--older-than") {
      policy = .olderThan(try Values.duration(age, option: "--older-than", command: command))
    } else {
      policy = .keepLast(try usage({ try command.integer("--keep-last", in: 0...Int.max) }) ?? 0)
    }
    let archive = try command.value("--archive").map { (name) throws(Failure) in
      try refuseStoreFile(name, store: store)
      return try OutputFile(path: name, gzip: name.hasSuffix(".gz"))
    }
    let pruner = HistoryPruner(store: store)
    let archived = Atomic<Int>(0)
    var write: (@Sendable (HistoryTransaction) throws -> Void)?
    var finish: (@Sendable (HistoryPruningReport) throws -> Void)?
    if let archive {
      write = { transaction in
        try archive.write(transaction.jsonData() + Data("\n".utf8))
        archived.add(1, ordering: .relaxed)
      }
      // Flushed to disk, closed and in place before anything is deleted.
      finish = { _ in try archive.close() }
    }
    let report: HistoryPruningReport
    do {
      let authors = command.values("--author")
      report = try pruner.prune(
        policy, includingStale: command.flag("--include-stale"), authors: authors.isEmpty ? nil : Set(authors),
        dryRun: dryRun, archive: write, willDelete: finish)
    } catch {
      archive?.discard()
      throw .failed("nothing was pruned: \((error as? Failure)?.message ?? "\(error)")")
    }
    let mode = dryRun ? "would delete" : "deleted"
    if command.flag("--json") {
      print(
        try Values.json([
          "dryRun": dryRun, "deletedTransactions": report.deletedTransactions,
          "horizon": report.horizon.stringRepresentation, "heldBackBy": report.heldBackBy,
          "staleConsumers": report.staleConsumers, "prunedPastStale": report.prunedPastStale,
          "archived": archived.load(ordering: .relaxed),
          "heldBackByTransaction": report.heldBackByTransaction.map { held -> [String: Any] in
            ["transactionNumber": held.transactionNumber, "author": held.author ?? NSNull()]
          } ?? NSNull(),
        ]))
      return
    }
    print("\(mode) \(report.deletedTransactions) transactions; horizon \(report.horizon.transactionNumber)")
    if let name = command.value("--archive") {
      print("archived \(archived.load(ordering: .relaxed)) transactions to \(name)")
    }
    if !report.heldBackBy.isEmpty {
      print("held back by consumers that have not read further: \(report.heldBackBy.joined(separator: ", "))")
    }
    if let held = report.heldBackByTransaction {
      print(
        "held back by transaction \(held.transactionNumber), whose author (\(held.author ?? "none")) is not an --author; "
          + "it and what follows are kept")
    }
    let staleHolding = report.staleConsumers.filter { !report.prunedPastStale.contains($0) }
    if !report.prunedPastStale.isEmpty {
      print(
        "pruned past stale consumers (their unread history is gone): \(report.prunedPastStale.joined(separator: ", "))")
    } else if !staleHolding.isEmpty && !command.flag("--include-stale") {
      print("stale consumers (pass --include-stale to prune past them): \(staleHolding.joined(separator: ", "))")
    }
  }

  // MARK: - stats

  static func stats(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let store = try openStore(path)
    let stats = try perform("cannot read the history") { try store.historyStatistics() }
    if command.flag("--json") {
      var entities: [String: Any] = [:]
      for (name, counts) in stats.changesByEntity {
        entities[name] = ["inserts": counts.inserts, "updates": counts.updates, "deletes": counts.deletes]
      }
      var object: [String: Any] = [
        "store": store.identifier.uuidString, "transactions": stats.transactions, "changes": stats.changes,
        "changesByEntity": entities, "transactionsByAuthor": stats.transactionsByAuthor,
        "unattributedTransactions": stats.unattributedTransactions,
        "horizon": stats.horizon.stringRepresentation, "newestToken": stats.currentToken.stringRepresentation,
      ]
      object["oldestTimestamp"] = stats.oldestTimestamp.map(Values.timestamp) ?? NSNull()
      object["newestTimestamp"] = stats.newestTimestamp.map(Values.timestamp) ?? NSNull()
      object["bytesOnDisk"] = stats.bytesOnDisk ?? NSNull()
      print(try Values.json(object))
      return
    }
    var lines = [
      "store         \(path) (\(store.identifier.uuidString))",
      "transactions  \(stats.transactions) kept"
        + (stats.transactions > 0
          ? " (\(stats.horizon.transactionNumber + 1)…\(stats.currentToken.transactionNumber))" : ""),
      "changes       \(stats.changes)",
    ]
    for (name, counts) in stats.changesByEntity.sorted(by: { $0.key < $1.key }) {
      lines.append(
        "  \(name.padding(toLength: 12, withPad: " ", startingAt: 0))"
          + "\(counts.inserts) inserted, \(counts.updates) updated, \(counts.deletes) deleted"
      )
    }
    var authors = stats.transactionsByAuthor.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
    if stats.unattributedTransactions > 0 { authors.append("(none) \(stats.unattributedTransactions)") }
    lines.append("authors       \(authors.isEmpty ? "none" : authors.joined(separator: ", "))")
    if let oldest = stats.oldestTimestamp, let newest = stats.newestTimestamp {
      lines.append("committed     \(Values.timestamp(oldest)) … \(Values.timestamp(newest))")
    }
    lines.append("horizon       \(stats.horizon.transactionNumber) (history after it is complete)")
    lines.append("newest token  \(stats.currentToken.stringRepresentation)")
    lines.append("on disk       \(stats.bytesOnDisk.map(Values.bytes) ?? "unknown (SQLite without dbstat)")")
    print(lines.joined(separator: "\n"))
  }
}

extension String {
  var nilIfEmpty: String? { isEmpty ? nil : self }
}
