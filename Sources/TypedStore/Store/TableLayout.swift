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
package final class TableLayout: Sendable {
  /// Whether `selectSQL` reads `_entity`: only a table with subentities needs it (every row of
  /// a single-entity table is of the root entity), and an unread column is time saved on every
  /// row of a fetch.
  let selectsEntity: Bool

  package let root: EntityDescription
  /// The entities stored in the table: the root and its subentities.
  package let hierarchy: [EntityDescription]
  /// For each entity of the model (by `EntityDescription.index`), the reader of its rows;
  /// nil for entities of other tables.
  private let rowReaders: [RowReader?]
  /// `SELECT pk, _version, [_entity,] <every column> FROM "<table>"`
  let selectSQL: String
  /// For each entity of the model (by `EntityDescription.index`), its INSERT statement: pk,
  /// then _entity, then its attributes; nil for entities of other tables.
  let insertSQL: [PreparedSQL?]
  let deleteSQL: PreparedSQL
  /// The table's largest key and its key floor (`PersistentStore.nextPrimaryKey`).
  let nextKeySQL: PreparedSQL
  let createSQL: [String]
  /// The table's columns after `pk`, `_version` and `_entity`, in the order `createSQL`
  /// declares them: what a migration maps from the old table to the new.
  package let columns: [TableColumn]
  /// The indexes of the table, and the join tables (with their indexes) its entities own, in
  /// `createSQL`'s order after the table itself.
  package let objects: [SchemaObject]

  package init(root: EntityDescription, hierarchy: [EntityDescription], entityCount: Int) {
    self.root = root
    self.hierarchy = hierarchy
    var columns: [TableColumn] = []
    var indexByColumn: [String: Int] = [:]
    var objects: [SchemaObject] = []
    func index(_ name: String, unique: Bool = false, _ indexed: [String]) {
      let list = indexed.map { $0 == "_entity" ? $0 : "\"\($0)\"" }.joined(separator: ", ")
      objects.append(
        SchemaObject(
          kind: .index, name: name, table: root.name, columns: indexed, isUnique: unique,
          sql: "CREATE \(unique ? "UNIQUE " : "")INDEX \"\(name)\" ON \"\(root.name)\"(\(list))"))
    }
    for entity in hierarchy {
      for attribute in entity.storedAttributes where attribute.entityName == entity.name {
        indexByColumn[attribute.columnName] = columns.count
        // Only the root's non-optional attributes can be NOT NULL: a subentity's columns are
        // empty in the rows of its siblings.
        columns.append(
          TableColumn(
            name: attribute.columnName, type: attribute.attributeType.columnType,
            isNotNull: entity.isRoot && !attribute.isOptional, entityName: entity.name, property: attribute.name,
            role: attribute.foreignKeyOf == nil ? .attribute : .foreignKey,
            attributeType: attribute.foreignKeyOf == nil ? attribute.attributeType : nil))
        if attribute.isUnique {
          index("_unique_\(root.name)_\(attribute.columnName)", unique: true, [attribute.columnName])
        } else if attribute.isIndexed {
          index("_index_\(root.name)_\(attribute.columnName)", [attribute.columnName])
        }
      }
    }
    if hierarchy.count > 1 { index("_index_\(root.name)__entity", ["_entity"]) }
    // Compound uniqueness constraints (one-column ones are the attributes' unique indexes).
    var compound: [[Int32]] = []
    for entity in hierarchy {
      for constraint in entity.ownCompoundUniqueness where !compound.contains(constraint) {
        compound.append(constraint)
        let names = constraint.map { entity.storedAttributes[Int($0)].columnName }
        index("_unique_\(root.name)_\(names.joined(separator: "_"))", unique: true, names)
      }
    }
    let (orderColumns, joinObjects) = Self.relationshipStorage(of: hierarchy)
    objects += joinObjects
    selectsEntity = hierarchy.count > 1
    let leadingColumns: Int32 = selectsEntity ? 3 : 2  // pk, _version[, _entity]
    var readers = [RowReader?](repeating: nil, count: entityCount)
    var insertSQL = [PreparedSQL?](repeating: nil, count: entityCount)
    for entity in hierarchy {
      let indexes = entity.storedAttributes.map { indexByColumn[$0.columnName] ?? 0 }
      readers[Int(entity.index)] = RowReader(
        entity: entity, positions: indexes.map { Int32($0) + leadingColumns })
      let names = entity.storedAttributes.map { "\"\($0.columnName)\"" }
      let placeholders = Array(repeating: "?", count: names.count + 2)
      insertSQL[Int(entity.index)] = PreparedSQL(
        "INSERT INTO \"\(root.name)\" (\((["pk", "_entity"] + names).joined(separator: ", "))) "
          + "VALUES (\(placeholders.joined(separator: ", ")))")
    }
    self.rowReaders = readers
    self.insertSQL = insertSQL
    let selectList = ["pk", "_version"] + (selectsEntity ? ["_entity"] : []) + columns.map { "\"\($0.name)\"" }
    self.selectSQL = "SELECT \(selectList.joined(separator: ", ")) FROM \"\(root.name)\""
    self.deleteSQL = PreparedSQL("DELETE FROM \"\(root.name)\" WHERE pk = ? AND _version = ?")
    self.nextKeySQL = PreparedSQL(
      "SELECT (SELECT max(pk) FROM \"\(root.name)\"), (SELECT key_floor FROM _primary_key WHERE entity = ?)")
    self.columns = columns + orderColumns
    self.objects = objects
    self.createSQL = [Self.tableSQL(named: root.name, columns: columns + orderColumns)] + objects.map(\.sql)
  }

  /// The tables of `model`: one per root entity, in the roots' order.
  package static func tables(of model: ManagedObjectModel) -> [TableLayout] {
    model.entities.filter(\.isRoot).map { root in
      TableLayout(
        root: root, hierarchy: model.entities.filter { $0.rootName == root.name }, entityCount: model.entities.count)
    }
  }

  /// The order columns of to-ones whose inverse is ordered (in this table), and the join tables
  /// (with their indexes) this table's entities own.
  private static func relationshipStorage(of hierarchy: [EntityDescription]) -> ([TableColumn], [SchemaObject]) {
    var joins: [SchemaObject] = []
    var orderColumns: [TableColumn] = []
    for entity in hierarchy {
      for relationship in entity.relationships where relationship.entityName == entity.name {
        switch relationship.storage {
        case .foreignKey(_, let orderColumn?):
          orderColumns.append(
            TableColumn(
              name: orderColumn, type: "INTEGER", isNotNull: false, entityName: entity.name,
              property: relationship.name, role: .order))
        case .joinTable(let table, _, _, _, true):
          joins += StoredTable.joinObjects(table)
        default: break
        }
      }
    }
    return (orderColumns, joins)
  }

  /// `CREATE TABLE "<name>" (pk INTEGER PRIMARY KEY, _version ..., _entity ..., <columns>)`.
  static func tableSQL(named name: String, columns: [TableColumn]) -> String {
    let definitions =
      ["pk INTEGER PRIMARY KEY", "_version INTEGER NOT NULL DEFAULT 1", "_entity INTEGER NOT NULL"]
      + columns.map(\.definition)
    return "CREATE TABLE \"\(name)\" (\(definitions.joined(separator: ", ")))"
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

/// One column of an entity table after its leading `pk`, `_version` and `_entity`.
package struct TableColumn: Sendable, Equatable {
  package enum Role: Sendable, Equatable {
    /// An attribute's value.
    case attribute
    /// A to-one relationship's key column (`property` is the relationship).
    case foreignKey
    /// The position of the row in its ordered inverse (`property` is the to-one).
    case order
  }

  package let name: String
  /// The SQLite declared type.
  package let type: String
  package let isNotNull: Bool
  /// The entity that declares the property.
  package let entityName: String
  /// The attribute or relationship the column stores.
  package let property: String
  package let role: Role
  /// The attribute type of an attribute's column (nil for keys and positions, which are
  /// integers): what another engine's column type is chosen by (`SchemaSQL`).
  package var attributeType: AttributeType? = nil

  /// The column's definition in `CREATE TABLE` and `ALTER TABLE ADD COLUMN`, on SQLite.
  var definition: String { "\"\(name)\" \(type)\(isNotNull ? " NOT NULL" : "")" }
}

/// An index of an entity table, or a join table (or its index) that its entities own.
package struct SchemaObject: Sendable, Equatable {
  package enum Kind: Sendable, Equatable { case index, joinTable, joinIndex }
  package let kind: Kind
  package let name: String
  /// The table the index is on; for a join table, its own name.
  package let table: String
  /// The indexed columns, for an index.
  package let columns: [String]
  package let isUnique: Bool
  package let sql: String
}
