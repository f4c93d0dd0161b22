import Foundation

/// The JSON form of history (schema version 1), as `HistoryTransaction.jsonData()` writes one
/// transaction and `PersistentStore.exportHistory` streams many. `docs/history.md` documents
/// it field by field; tools parse it, so a field is only ever added, and a change of meaning
/// raises `version`.
///
/// Every transaction is one JSON object on one line:
///
/// ```json
/// {"version":1,"store":"<UUID>","number":7,"token":"<UUID>:7","timestamp":"2026-12-02T10:00:00.125Z",
///  "author":"importer","contextName":null,"processID":4242,"changes":[
///   {"kind":"update","entity":"Note","pk":3,"uri":"typedstore://<UUID>/Note/p3",
///    "changedAttributes":["title"],"tombstone":null}]}
/// ```
///
/// The writer appends bytes to a buffer and hands full chunks to a sink, so a transaction of a
/// million changes is written without being held.
struct HistoryJSONWriter {
  static let schemaVersion = 1
  /// Bytes gathered before the sink sees them.
  static let chunkSize = 1 << 16

  private(set) var buffer: [UInt8] = []
  private let sink: (UnsafeRawBufferPointer) throws -> Void
  private var changesInTransaction = 0
  let storeIdentifier: UUID
  private let storeText: String

  init(storeIdentifier: UUID, sink: @escaping (UnsafeRawBufferPointer) throws -> Void) {
    self.storeIdentifier = storeIdentifier
    self.storeText = storeIdentifier.uuidString
    self.sink = sink
    buffer.reserveCapacity(Self.chunkSize + 4096)
  }

  // MARK: - Transactions

  mutating func beginTransaction(
    number: Int64, timestamp: Date, author: String?, contextName: String?, processID: Int64
  ) throws {
    append("{\"version\":\(Self.schemaVersion),\"store\":\"\(storeText)\",\"number\":\(number),")
    append("\"token\":\"\(storeText):\(number)\",\"timestamp\":")
    appendString(Self.timestampText(timestamp))
    append(",\"author\":")
    appendOptionalString(author)
    append(",\"contextName\":")
    appendOptionalString(contextName)
    append(",\"processID\":\(processID),\"changes\":[")
    changesInTransaction = 0
  }

  mutating func change(
    _ kind: HistoryChange.Kind, entity: String, key: Int64, changed: [String], tombstone: HistoryTombstone?
  ) throws {
    if changesInTransaction > 0 { buffer.append(UInt8(ascii: ",")) }
    changesInTransaction += 1
    append("{\"kind\":\"\(Self.kindName(kind))\",\"entity\":")
    appendString(entity)
    append(",\"pk\":\(key),\"uri\":\"typedstore://\(storeText)/")
    // Entity names are validated identifiers: nothing to escape in a URI or a JSON string.
    append(entity)
    append("/p\(key)\",\"changedAttributes\":[")
    for (index, name) in changed.enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: ",")) }
      appendString(name)
    }
    append("],\"tombstone\":")
    if let tombstone {
      appendObject(tombstone.jsonObject)
    } else {
      append("null")
    }
    buffer.append(UInt8(ascii: "}"))
    if buffer.count >= Self.chunkSize { try flush() }
  }

  mutating func endTransaction() throws {
    append("]}")
    if buffer.count >= Self.chunkSize { try flush() }
  }

  /// Writes raw text between transactions (a newline, an array bracket).
  mutating func raw(_ text: String) throws {
    append(text)
    if buffer.count >= Self.chunkSize { try flush() }
  }

  /// Hands what is buffered to the sink.
  mutating func flush() throws {
    guard !buffer.isEmpty else { return }
    try buffer.withUnsafeBytes { try sink($0) }
    buffer.removeAll(keepingCapacity: true)
  }

  // MARK: - Values

  static func kindName(_ kind: HistoryChange.Kind) -> String {
    switch kind {
    case .insert: "insert"
    case .update: "update"
    case .delete: "delete"
    }
  }

  /// ISO 8601 in UTC with milliseconds, e.g. `2026-12-02T10:00:00.125Z`.
  static func timestampText(_ date: Date) -> String {
    date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
  }

  private mutating func append(_ text: String) {
    buffer.append(contentsOf: text.utf8)
  }

  private mutating func appendOptionalString(_ text: String?) {
    if let text { appendString(text) } else { append("null") }
  }

  private mutating func appendObject(_ object: [String: HistoryTombstone.Value]) {
    buffer.append(UInt8(ascii: "{"))
    for (index, name) in object.keys.sorted().enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: ",")) }
      appendString(name)
      buffer.append(UInt8(ascii: ":"))
      switch object[name] ?? .null {
      case .null: append("null")
      case .bool(let value): append(value ? "true" : "false")
      case .integer(let value): append(String(value))
      case .double(let value): append(value.isFinite ? "\(value)" : "null")
      case .string(let value): appendString(value)
      }
    }
    buffer.append(UInt8(ascii: "}"))
  }

  /// A JSON string: quotes, backslashes and control characters escaped, everything else as
  /// UTF-8.
  private mutating func appendString(_ text: String) {
    buffer.append(UInt8(ascii: "\""))
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""): append("\\\"")
      case UInt8(ascii: "\\"): append("\\\\")
      case 0x0A: append("\\n")
      case 0x0D: append("\\r")
      case 0x09: append("\\t")
      case 0..<0x20:
        let hex = String(byte, radix: 16)
        append("\\u00" + (hex.count == 1 ? "0" + hex : hex))
      default: buffer.append(byte)
      }
    }
    buffer.append(UInt8(ascii: "\""))
  }
}

/// Streams what `HistoryReader.visit` reads into a `HistoryJSONWriter`: one line per
/// transaction (NDJSON), or the same objects as the elements of one JSON array.
struct HistoryJSONExporter: HistoryVisitor {
  var writer: HistoryJSONWriter
  let format: HistoryExportFormat
  var summary = HistoryExportSummary()

  mutating func beginTransaction(_ header: HistoryReader.Header) throws {
    if format == .json { try writer.raw(summary.transactions == 0 ? "[\n" : ",\n") }
    try writer.beginTransaction(
      number: header.number, timestamp: Date(timeIntervalSinceReferenceDate: header.timestamp),
      author: header.author, contextName: header.contextName, processID: header.processID)
    summary.transactions += 1
    summary.lastToken = HistoryToken(storeIdentifier: writer.storeIdentifier, transactionNumber: header.number)
  }

  mutating func change(
    _ kind: HistoryChange.Kind, entity: String, key: Int64, changed: [String], tombstone: String?, index: Int
  ) throws {
    try writer.change(
      kind, entity: entity, key: key, changed: changed,
      tombstone: tombstone.map {
        HistoryTombstone(entityName: entity, json: $0, storeIdentifier: writer.storeIdentifier)
      })
    summary.changes += 1
  }

  mutating func endTransaction() throws {
    try writer.endTransaction()
    if format == .ndjson { try writer.raw("\n") }
  }

  /// Closes the array of the JSON format and flushes.
  mutating func finish() throws {
    if format == .json { try writer.raw(summary.transactions == 0 ? "[]\n" : "\n]\n") }
    try writer.flush()
  }
}

extension HistoryTransaction {
  /// The transaction in the library's JSON form (schema version 1, one line without its
  /// newline), as `typedstore history export` writes it.
  ///
  /// ```swift
  /// for transaction in try container.fetchHistory(HistoryRequest(after: token)) {
  ///   try handle.write(contentsOf: transaction.jsonData() + Data("\n".utf8))
  /// }
  /// ```
  public func jsonData() -> Data {
    var output = Data()
    var writer = HistoryJSONWriter(storeIdentifier: token.storeIdentifier) { output.append(contentsOf: $0) }
    // The sink only appends to memory: nothing here throws.
    try? writer.beginTransaction(
      number: transactionNumber, timestamp: timestamp, author: author, contextName: contextName,
      processID: Int64(processID))
    for change in changes {
      try? writer.change(
        change.changeType, entity: change.objectID.entityName, key: change.objectID.primaryKey ?? 0,
        changed: change.updatedProperties, tombstone: change.tombstone)
    }
    try? writer.endTransaction()
    try? writer.flush()
    return output
  }
}
