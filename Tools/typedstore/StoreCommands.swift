import ArgumentParsing
import Foundation
import TypedStore

/// `typedstore consumers list|remove`, `inspect` and `check`.
enum StoreCommands {
  // MARK: - consumers

  static func listConsumers(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let store = try openStore(path)
    let (consumers, current, horizon) = try perform("cannot read the consumers") {
      (try store.historyConsumers(), try store.currentHistoryToken(), try store.historyHorizon())
    }
    let now = Date()
    if command.flag("--json") {
      print(
        try Values.json(
          consumers.map { consumer -> [String: Any] in
            [
              "name": consumer.name, "checkpoint": consumer.checkpoint.stringRepresentation,
              "lag": current.transactionNumber - consumer.checkpoint.transactionNumber,
              "advancedAt": Values.timestamp(consumer.advancedAt), "seenAt": Values.timestamp(consumer.seenAt),
              "leaseSeconds": Self.seconds(consumer.lease),
              "status": consumer.isStale(at: now) ? "stale" : "live",
              "state": Self.stateName(consumer.state(newest: current, horizon: horizon, at: now)),
              "error": consumer.failure?.message ?? NSNull(),
              "errorTransaction": consumer.failure.map { $0.transactionNumber as Any } ?? NSNull(),
            ]
          }))
      return
    }
    guard !consumers.isEmpty else {
      print("no consumers (newest transaction \(current.transactionNumber))")
      return
    }
    let header = ["NAME", "CHECKPOINT", "LAG", "ADVANCED", "SEEN", "LEASE", "STATE"]
    let rows = consumers.map { consumer in
      [
        consumer.name, String(consumer.checkpoint.transactionNumber),
        String(current.transactionNumber - consumer.checkpoint.transactionNumber),
        Values.age(since: consumer.advancedAt, now: now) + " ago",
        Values.age(since: consumer.seenAt, now: now) + " ago",
        Values.age(since: now.addingTimeInterval(-Self.seconds(consumer.lease)), now: now),
        Self.stateDescription(consumer.state(newest: current, horizon: horizon, at: now)),
      ]
    }
    print(table([header] + rows))
  }

  /// A consumer's state as `--json` names it.
  static func stateName(_ state: HistoryConsumer.State) -> String {
    switch state {
    case .upToDate: "up-to-date"
    case .behind: "behind"
    case .stale: "stale"
    case .expired: "expired"
    case .failing: "failing"
    }
  }

  /// A consumer's state for the table: a failing one with its transaction and error.
  static func stateDescription(_ state: HistoryConsumer.State) -> String {
    switch state {
    case .upToDate: "up to date"
    case .behind(let count): "behind (\(count))"
    case .stale: "stale"
    case .expired: "expired (its history was pruned)"
    case .failing(let failure): "failing at \(failure.transactionNumber): \(failure.message)"
    }
  }

  static func addConsumer(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let name = command.positionals[0]
    guard !(command.flag("--from-beginning") && command.has("--after")) else {
      throw .usage(command.error("Give --from-beginning or --after, not both"))
    }
    let store = try openStore(path, writable: true)
    var start = HistoryConsumer.Start.now
    if command.flag("--from-beginning") {
      start = .beginning
    } else if let after = command.value("--after") {
      start = .after(try Values.token(after, option: "--after", store: store, command: command))
    }
    var lease = Duration.seconds(3600)
    if let text = command.value("--lease") { lease = try Values.duration(text, option: "--lease", command: command) }
    let consumer = try perform("cannot add the consumer") { [start, lease] in
      try store.registerHistoryConsumer(name: name, startingAt: start, lease: lease)
    }
    if command.flag("--json") {
      print(
        try Values.json([
          "name": consumer.name, "checkpoint": consumer.checkpoint.stringRepresentation,
          "leaseSeconds": Self.seconds(consumer.lease),
        ]))
      return
    }
    print("consumer \(consumer.name) at transaction \(consumer.checkpoint.transactionNumber)")
  }

  static func removeConsumer(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let name = command.positionals[0]
    let store = try openStore(path, writable: true)
    try perform("cannot remove the consumer") { try store.removeHistoryConsumer(named: name) }
    print("removed consumer \(name)")
  }

  // MARK: - inspect

  static func inspect(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let store = try openStore(path)
    let inspection = try perform("cannot inspect the store") { try store.inspect() }
    if command.flag("--json") {
      try printJSON(inspection)
    } else {
      printText(inspection, path: path)
    }
  }

  /// `typedstore inspect --json`.
  private static func printJSON(_ inspection: PersistentStore.Inspection) throws(Failure) {
    let schema = inspection.metadata.schema
    let entities = schema.entities.map { entity -> [String: Any] in
      [
        "name": entity.name, "superentity": entity.superentity ?? NSNull(), "table": entity.table,
        "rows": inspection.rowCounts[entity.name] ?? 0,
        "attributes": entity.attributes.map { attribute -> [String: Any] in
          [
            "name": attribute.name, "column": attribute.column, "type": attribute.type.rawValue,
            "optional": attribute.optional, "preservedOnDeletion": attribute.preservedOnDeletion,
            "indexed": attribute.indexed, "unique": attribute.unique,
          ]
        },
        "relationships": (entity.relationships ?? []).map { relationship -> [String: Any] in
          [
            "name": relationship.name, "destination": relationship.destination, "inverse": relationship.inverse,
            "kind": relationship.kind.rawValue, "manyToMany": relationship.joinTable != nil,
            "deleteRule": relationship.deleteRule.rawValue, "required": relationship.required,
            "minimumCount": relationship.minimumCount ?? NSNull(),
            "maximumCount": relationship.maximumCount ?? NSNull(), "column": relationship.column ?? NSNull(),
            "orderColumn": relationship.orderColumn ?? NSNull(), "joinTable": relationship.joinTable ?? NSNull(),
            "links": inspection.linkCounts["\(entity.name).\(relationship.name)"] ?? NSNull(),
          ]
        },
      ]
    }
    var files: [String: Any] = ["database": inspection.fileSizes.database]
    files["wal"] = inspection.fileSizes.writeAheadLog ?? NSNull()
    files["shm"] = inspection.fileSizes.sharedMemory ?? NSNull()
    print(
      try Values.json([
        "store": inspection.metadata.storeIdentifier.uuidString, "formatVersion": inspection.metadata.formatVersion,
        "modelHash": inspection.metadata.modelHash, "entities": entities, "files": files,
        "pageSize": inspection.pageSize, "pageCount": inspection.pageCount, "freePages": inspection.freePages,
        "journalMode": inspection.journalMode, "horizon": inspection.horizon.stringRepresentation,
        "newestToken": inspection.currentToken.stringRepresentation, "consumers": inspection.consumers.map(\.name),
        "modelVersions": inspection.modelVersions.map { version -> [String: Any] in
          [
            "number": version.number, "hash": version.versionHash,
            "date": version.date.map(Values.timestamp) ?? NSNull(),
            "migrationTransaction": version.migrationTransaction?.transactionNumber ?? NSNull(),
            "identifier": version.versionIdentifier ?? NSNull(),
          ]
        },
      ]))
  }

  /// `typedstore inspect`.
  private static func printText(_ inspection: PersistentStore.Inspection, path: String) {
    let schema = inspection.metadata.schema
    var lines = [
      "store          \(path)",
      "uuid           \(inspection.metadata.storeIdentifier.uuidString)",
      "format         version \(inspection.metadata.formatVersion), journal \(inspection.journalMode)",
      "model hash     \(inspection.metadata.modelHash)",
      "files          database \(Values.bytes(inspection.fileSizes.database)), "
        + "wal \(inspection.fileSizes.writeAheadLog.map(Values.bytes) ?? "none"), "
        + "shm \(inspection.fileSizes.sharedMemory.map(Values.bytes) ?? "none")",
      "pages          \(inspection.pageCount) of \(Values.bytes(inspection.pageSize)), \(inspection.freePages) free",
      "history        horizon \(inspection.horizon.transactionNumber), "
        + "newest \(inspection.currentToken.transactionNumber)",
      "consumers      "
        + "\(inspection.consumers.isEmpty ? "none" : inspection.consumers.map(\.name).joined(separator: ", "))",
      "",
      "model versions:",
    ]
    for version in inspection.modelVersions {
      let when = version.date.map(Values.timestamp) ?? "date unknown"
      let how = version.migrationTransaction.map { "migrated in transaction \($0.transactionNumber)" } ?? "created"
      let identifier = version.versionIdentifier.map { "  version \($0)" } ?? ""
      lines.append("  \(version.number)  \(version.versionHash.prefix(12))  \(when)  \(how)\(identifier)")
    }
    if inspection.modelVersions.isEmpty { lines.append("  none recorded (a store made before versions were)") }
    lines += ["", "entities:"]
    for entity in schema.entities {
      let parent = entity.superentity.map { " : \($0)" } ?? ""
      let rows = inspection.rowCounts[entity.name] ?? 0
      lines.append("  \(entity.name)\(parent) — table \"\(entity.table)\", \(rows) \(rows == 1 ? "row" : "rows")")
      for attribute in entity.attributes {
        var traits = [attribute.type.rawValue + (attribute.optional ? "?" : "")]
        if attribute.column != attribute.name { traits.append("column \(attribute.column)") }
        if attribute.preservedOnDeletion { traits.append("preserved on deletion") }
        if attribute.unique { traits.append("unique") } else if attribute.indexed { traits.append("indexed") }
        lines.append("    \(attribute.name): \(traits.joined(separator: ", "))")
      }
      for relationship in entity.relationships ?? [] {
        lines.append(
          "    \(relationship.name): "
            + Self.traits(of: relationship, links: inspection.linkCounts["\(entity.name).\(relationship.name)"])
            .joined(separator: ", "))
      }
    }
    print(lines.joined(separator: "\n"))
  }

  // MARK: - check

  static func check(_ command: ParsedCommand) async throws(Failure) {
    let path = try usage { try command.required("--store") }
    let store = try openStore(path)
    let report = try perform("cannot check the store") { try store.checkConsistency() }
    if command.flag("--json") {
      print(
        try Values.json([
          "passed": report.passed, "rowsChecked": report.rowsChecked, "transactionsChecked": report.transactionsChecked,
          "problems": report.problems.map { ["kind": $0.kind.rawValue, "message": $0.message] },
        ]))
    } else if report.passed {
      // A PostgreSQL store's pages are the server's: its integrity is its counter and indexes.
      let integrity = store.url.isFileURL ? "integrity_check" : "the history counter, the indexes"
      print(
        "ok: \(integrity), metadata, \(report.rowsChecked) rows against \(report.transactionsChecked) "
          + "transactions of history, relationships, consumers' checkpoints")
    } else {
      for problem in report.problems { print("problem: \(problem)") }
      print("\(report.problems.count) problem(s) found")
    }
    if !report.passed { throw .failed("check failed: \(report.problems.count) problem(s) in \(path)") }
  }

  // MARK: - Helpers

  /// How `inspect` describes a relationship: `to-one → Folder.notes, nullify, column folder,
  /// 3 links`.
  static func traits(of relationship: ModelSchema.Relationship, links: Int?) -> [String] {
    let kind: String
    switch (relationship.kind, relationship.joinTable != nil) {
    case (.toOne, _): kind = "to-one"
    case (.toMany, false): kind = "to-many"
    case (.ordered, false): kind = "ordered to-many"
    case (.toMany, true): kind = "many-to-many"
    case (.ordered, true): kind = "ordered many-to-many"
    }
    var traits = ["\(kind) → \(relationship.destination).\(relationship.inverse)", relationship.deleteRule.rawValue]
    if relationship.required { traits.append("required") }
    if let minimum = relationship.minimumCount { traits.append("at least \(minimum)") }
    if let maximum = relationship.maximumCount { traits.append("at most \(maximum)") }
    if let column = relationship.column { traits.append("column \(column)") }
    if let table = relationship.joinTable { traits.append("join table \(table)") }
    if let column = relationship.orderColumn { traits.append("order column \(column)") }
    if let links { traits.append("\(links) \(links == 1 ? "link" : "links")") }
    return traits
  }

  static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  /// Columns padded to their widest cell.
  static func table(_ rows: [[String]]) -> String {
    let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
      row.enumerated().map { index, cell in
        index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
      }.joined(separator: "  ")
    }.joined(separator: "\n")
  }
}
