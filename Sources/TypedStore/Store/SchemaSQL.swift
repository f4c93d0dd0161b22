/// A store's tables, indexes and join tables in the SQL of one engine: what creating a store
/// and migrating one write, from the validated model's `TableLayout`.
///
/// On SQLite it is the file format's SQL (`docs/file-format.md`), as `TableLayout` writes it.
/// On PostgreSQL the same tables have the attribute types' own column types
/// (`AttributeType.postgreSQLType`; keys and positions are `bigint`), an index name longer than
/// PostgreSQL keeps (63 bytes) is shortened with a hash of the whole name, and a value bound
/// where PostgreSQL cannot infer its type (a `CASE`, a `SELECT` list) is cast to its column's.
///
/// ```swift
/// let sql = SchemaSQL(.postgreSQL)
/// let statements = [sql.createTable(named: layout.root.name, columns: layout.columns)]
///   + layout.objects.flatMap(sql.create)
/// ```
package struct SchemaSQL: Sendable {
  package let dialect: SQLDialect

  /// PostgreSQL cuts identifiers to 63 bytes (`NAMEDATALEN` - 1).
  package static let postgreSQLIdentifierLimit = 63

  package init(_ dialect: SQLDialect) {
    self.dialect = dialect
  }

  /// The column's type: SQLite's declared type, or PostgreSQL's by attribute type.
  package func type(of column: TableColumn) -> String {
    switch dialect {
    case .sqlite: column.type
    case .postgreSQL: column.attributeType?.postgreSQLType ?? "bigint"
    }
  }

  /// The column's definition in `CREATE TABLE` and `ALTER TABLE … ADD COLUMN`.
  package func definition(_ column: TableColumn) -> String {
    "\"\(column.name)\" \(type(of: column))\(column.isNotNull ? " NOT NULL" : "")"
  }

  /// `CREATE TABLE` of an entity table: `pk`, `_version`, `_entity`, then `columns`.
  package func createTable(named name: String, columns: [TableColumn]) -> String {
    let integer = dialect == .sqlite ? "INTEGER" : "bigint"
    let definitions =
      ["pk \(integer) PRIMARY KEY", "_version \(integer) NOT NULL DEFAULT 1", "_entity \(integer) NOT NULL"]
      + columns.map(definition)
    return "CREATE TABLE \"\(name)\" (\(definitions.joined(separator: ", ")))"
  }

  /// The statement that makes `object`: an index, a join table or a join table's index.
  package func create(_ object: SchemaObject) -> [String] {
    guard dialect == .postgreSQL else { return [object.sql] }
    switch object.kind {
    case .index, .joinIndex:
      let columns = object.columns.map { "\"\($0)\"" }.joined(separator: ", ")
      return [
        "CREATE \(object.isUnique ? "UNIQUE " : "")INDEX \"\(indexName(object.name))\" ON \"\(object.table)\" (\(columns))"
      ]
    case .joinTable:
      return [joinTable(named: object.name)]
    }
  }

  /// `CREATE TABLE` of a join table (its index is a `SchemaObject` of its own).
  package func joinTable(named name: String) -> String {
    switch dialect {
    case .sqlite:
      "CREATE TABLE \"\(name)\" (source INTEGER NOT NULL, target INTEGER NOT NULL, "
        + "source_order INTEGER, target_order INTEGER, PRIMARY KEY (source, target)) WITHOUT ROWID"
    case .postgreSQL:
      "CREATE TABLE \"\(name)\" (source bigint NOT NULL, target bigint NOT NULL, "
        + "source_order bigint, target_order bigint, PRIMARY KEY (source, target))"
    }
  }

  /// A join table and its index.
  package func joinTableWithIndex(named name: String) -> [String] {
    StoredTable.joinObjects(name).flatMap(create)
  }

  /// `DROP INDEX` of the index the model names `name`.
  package func dropIndex(named name: String) -> String {
    "DROP INDEX \"\(indexName(name))\""
  }

  /// An index's name as the engine keeps it. On PostgreSQL, a name longer than 63 bytes is its
  /// first 46 bytes, `_` and 16 hex digits of its FNV-1a hash (so that two long names that
  /// share a prefix stay two indexes).
  package func indexName(_ name: String) -> String {
    guard dialect == .postgreSQL, name.utf8.count > Self.postgreSQLIdentifierLimit else { return name }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in name.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x0100_0000_01b3
    }
    let digits = String(hash, radix: 16)
    return String(decoding: name.utf8.prefix(46), as: UTF8.self) + "_"
      + String(repeating: "0", count: 16 - digits.count) + digits
  }

  /// A parameter holding a value of `column`: `?`, cast to the column's type on PostgreSQL,
  /// which infers no type for a parameter in a `CASE` result or a `SELECT` list.
  package func parameter(for column: TableColumn) -> String {
    dialect == .sqlite ? "?" : "CAST(? AS \(type(of: column)))"
  }

  /// SQL that writes the value of `expression`, of `column`'s type, as an SQL literal, the
  /// way SQLite's `quote()` writes what the store file keeps (`'text'`, `12`, `X'0A'`): how a
  /// migration's refusal shows the values it found.
  package func literal(_ expression: String, of column: TableColumn) -> String {
    guard dialect == .postgreSQL else { return "quote(\(expression))" }
    switch column.attributeType {
    case .string, .uri, .codable, .decimal: return "quote_nullable(\(expression))"
    case .boolean: return "CAST(CAST(\(expression) AS integer) AS text)"
    case .binaryData: return "'X''' || upper(encode(\(expression), 'hex')) || ''''"
    case .uuid: return "'X''' || upper(replace(CAST(\(expression) AS text), '-', '')) || ''''"
    case .integer16, .integer32, .integer64, .double, .float, .date, nil: return "CAST(\(expression) AS text)"
    }
  }

  /// NULL as a value of `column`: PostgreSQL gives an untyped NULL (a `CASE` of NULLs) the
  /// type `text`, which a column of another type refuses.
  package func null(for column: TableColumn) -> String {
    dialect == .sqlite ? "NULL" : "CAST(NULL AS \(type(of: column)))"
  }

  /// A parameter holding an integer (an entity code): `?`, or `CAST(? AS bigint)`.
  package var integerParameter: String {
    dialect == .sqlite ? "?" : "CAST(? AS bigint)"
  }
}
