/// The SQL shape of one root entity's table, derived once from the validated model.
///
/// Every identifier here comes from the model, which accepts only `[A-Za-z][A-Za-z0-9_]*`
/// names, and is double-quoted; every value is bound. The layout is the documented file
/// format (`docs/file-format.md`):
///
/// ```sql
/// CREATE TABLE "Note" (pk INTEGER PRIMARY KEY, _version INTEGER NOT NULL DEFAULT 1,
///                      _entity INTEGER NOT NULL, "title" TEXT NOT NULL, "created" REAL, ...)
/// ```
final class TableLayout: Sendable {
  /// Whether `selectSQL` reads `_entity`: only a table with subentities needs it (every row of
  /// a single-entity table is of the root entity), and an unread column is time saved on every
  /// row of a fetch.
  let selectsEntity: Bool

  let root: EntityDescription
  /// The entities stored in the table: the root and its subentities.
  let hierarchy: [EntityDescription]
  /// For each entity of the model (by `EntityDescription.index`), the reader of its rows;
  /// nil for entities of other tables.
  private let rowReaders: [RowReader?]
  /// `SELECT pk, _version, [_entity,] <every column> FROM "<table>"`
  let selectSQL: String
  /// For each entity, its INSERT statement: pk, then _entity, then its attributes.
  let insertSQL: [String: String]
  let deleteSQL: String
  let createSQL: [String]

  init(root: EntityDescription, hierarchy: [EntityDescription], entityCount: Int) {
    self.root = root
    self.hierarchy = hierarchy
    var columns: [(name: String, type: String, notNull: Bool)] = []
    var indexByColumn: [String: Int] = [:]
    var createIndexes: [String] = []
    for entity in hierarchy {
      for attribute in entity.storedAttributes where attribute.entityName == entity.name {
        indexByColumn[attribute.columnName] = columns.count
        // Only the root's non-optional attributes can be NOT NULL: a subentity's columns are
        // empty in the rows of its siblings.
        columns.append(
          (attribute.columnName, attribute.attributeType.columnType, entity.isRoot && !attribute.isOptional))
        if attribute.isUnique {
          createIndexes.append(
            "CREATE UNIQUE INDEX \"_unique_\(root.name)_\(attribute.columnName)\" "
              + "ON \"\(root.name)\"(\"\(attribute.columnName)\")")
        } else if attribute.isIndexed {
          createIndexes.append(
            "CREATE INDEX \"_index_\(root.name)_\(attribute.columnName)\" "
              + "ON \"\(root.name)\"(\"\(attribute.columnName)\")")
        }
      }
    }
    if hierarchy.count > 1 {
      createIndexes.append("CREATE INDEX \"_index_\(root.name)__entity\" ON \"\(root.name)\"(_entity)")
    }
    // Compound uniqueness constraints (one-column ones are the attributes' unique indexes).
    var compound: [[Int32]] = []
    for entity in hierarchy {
      for constraint in entity.ownCompoundUniqueness where !compound.contains(constraint) {
        compound.append(constraint)
        let columns = constraint.map { entity.storedAttributes[Int($0)].columnName }
        createIndexes.append(
          "CREATE UNIQUE INDEX \"_unique_\(root.name)_\(columns.joined(separator: "_"))\" ON \"\(root.name)\"("
            + columns.map { "\"\($0)\"" }.joined(separator: ", ") + ")")
      }
    }
    // Relationships: the order column of a to-one whose inverse is ordered (in this table),
    // and the join tables this table's entities own.
    var extraColumns: [String] = []
    for entity in hierarchy {
      for relationship in entity.relationships where relationship.entityName == entity.name {
        switch relationship.storage {
        case .foreignKey(_, let orderColumn?):
          extraColumns.append("\"\(orderColumn)\" INTEGER")
        case .joinTable(let table, _, _, _, true):
          createIndexes.append(
            "CREATE TABLE \"\(table)\" (source INTEGER NOT NULL, target INTEGER NOT NULL, "
              + "source_order INTEGER, target_order INTEGER, PRIMARY KEY (source, target)) WITHOUT ROWID")
          createIndexes.append("CREATE INDEX \"_index_\(table)_target\" ON \"\(table)\"(target, source)")
        default: break
        }
      }
    }
    selectsEntity = hierarchy.count > 1
    let leadingColumns: Int32 = selectsEntity ? 3 : 2  // pk, _version[, _entity]
    var readers = [RowReader?](repeating: nil, count: entityCount)
    var insertSQL: [String: String] = [:]
    for entity in hierarchy {
      let indexes = entity.storedAttributes.map { indexByColumn[$0.columnName] ?? 0 }
      readers[Int(entity.index)] = RowReader(
        entity: entity, positions: indexes.map { Int32($0) + leadingColumns })
      let names = entity.storedAttributes.map { "\"\($0.columnName)\"" }
      let placeholders = Array(repeating: "?", count: names.count + 2)
      insertSQL[entity.name] =
        "INSERT INTO \"\(root.name)\" (\((["pk", "_entity"] + names).joined(separator: ", "))) "
        + "VALUES (\(placeholders.joined(separator: ", ")))"
    }
    self.rowReaders = readers
    self.insertSQL = insertSQL
    let selectList = ["pk", "_version"] + (selectsEntity ? ["_entity"] : []) + columns.map { "\"\($0.name)\"" }
    self.selectSQL = "SELECT \(selectList.joined(separator: ", ")) FROM \"\(root.name)\""
    self.deleteSQL = "DELETE FROM \"\(root.name)\" WHERE pk = ? AND _version = ?"
    let definitions =
      ["pk INTEGER PRIMARY KEY", "_version INTEGER NOT NULL DEFAULT 1", "_entity INTEGER NOT NULL"]
      + columns.map { "\"\($0.name)\" \($0.type)\($0.notNull ? " NOT NULL" : "")" } + extraColumns
    self.createSQL =
      ["CREATE TABLE \"\(root.name)\" (\(definitions.joined(separator: ", ")))"] + createIndexes
  }

  /// The entity of this table whose rows carry `code` in `_entity`.
  func entity(code: Int64) -> EntityDescription? {
    hierarchy.first { $0.code == code }
  }

  /// The reader of `entity`'s rows; `entity` is stored in this table.
  func reader(for entity: EntityDescription) -> RowReader {
    guard let reader = rowReaders[Int(entity.index)] else {
      preconditionFailure("TypedStore: entity \(entity.name) is not stored in table \(root.name)")
    }
    return reader
  }

  /// `UPDATE` of some attributes of one row, guarded by its version.
  func updateSQL(entity: EntityDescription, slots: [Int32]) -> String {
    let assignments = slots.map { "\"\(entity.storedAttributes[Int($0)].columnName)\" = ?" }
    return
      "UPDATE \"\(root.name)\" SET \((assignments + ["_version = _version + 1"]).joined(separator: ", ")) "
      + "WHERE pk = ? AND _version = ?"
  }
}
