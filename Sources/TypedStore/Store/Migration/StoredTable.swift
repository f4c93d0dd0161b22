/// An entity table as the store has it: the layout of the stored model's attributes (from
/// `ManagedObjectModel(schema:json:)`, which has no relationship descriptions) completed from
/// the stored schema with the key and order columns of its to-ones, their indexes, its compound
/// unique indexes and the join tables its entities own — every name as `TableLayout` makes it.
struct StoredTable {
  let layout: TableLayout
  let columns: [TableColumn]
  let objects: [SchemaObject]

  var root: EntityDescription { layout.root }
  var hierarchy: [EntityDescription] { layout.hierarchy }

  init(_ layout: TableLayout, schema: ModelSchema) {
    self.layout = layout
    let table = layout.root.name
    var columns = layout.columns.filter { $0.role == .attribute }
    var orderColumns: [TableColumn] = []
    // The key columns' indexes come from the schema below (a model read from a schema lays
    // them out too, as `SchemaLayout` does).
    let keyColumns = Set(layout.columns.filter { $0.role == .foreignKey }.map(\.name))
    var objects = layout.objects.filter { object in
      object.kind == .index && (object.isUnique || object.columns.count != 1 || !keyColumns.contains(object.columns[0]))
    }
    var joins: [SchemaObject] = []
    let entities = schema.entities.filter { $0.table == table }
    for entity in entities {
      for relationship in entity.relationships ?? [] {
        if let column = relationship.column {
          columns.append(
            TableColumn(
              name: column, type: "INTEGER", isNotNull: false, entityName: entity.name, property: relationship.name,
              role: .foreignKey))
          objects.append(
            SchemaObject(
              kind: .index, name: "_index_\(table)_\(column)", table: table, columns: [column], isUnique: false,
              sql: "CREATE INDEX \"_index_\(table)_\(column)\" ON \"\(table)\"(\"\(column)\")"))
          if let order = relationship.orderColumn {
            orderColumns.append(
              TableColumn(
                name: order, type: "INTEGER", isNotNull: false, entityName: entity.name, property: relationship.name,
                role: .order))
          }
        }
        if let join = relationship.ownedJoinTable { joins += Self.joinObjects(join) }
      }
    }
    objects += Self.compoundIndexes(table: table, entities: entities, schema: schema, existing: objects)
    self.columns = columns + orderColumns
    self.objects = objects + joins
  }

  /// The compound unique indexes the stored schema's constraints make (one-column ones are
  /// the attributes' unique indexes, already in the layout).
  private static func compoundIndexes(
    table: String, entities: [ModelSchema.Entity], schema: ModelSchema, existing: [SchemaObject]
  ) -> [SchemaObject] {
    var indexes: [SchemaObject] = []
    for entity in entities {
      for constraint in entity.uniquenessConstraints ?? [] {
        let names = constraint.compactMap { column(of: $0, in: entity, schema: schema) }
        guard names.count == constraint.count else { continue }
        let name = "_unique_\(table)_\(names.joined(separator: "_"))"
        guard !existing.contains(where: { $0.name == name }), !indexes.contains(where: { $0.name == name }) else {
          continue
        }
        indexes.append(
          SchemaObject(
            kind: .index, name: name, table: table, columns: names, isUnique: true,
            sql: "CREATE UNIQUE INDEX \"\(name)\" ON \"\(table)\"("
              + names.map { "\"\($0)\"" }.joined(separator: ", ") + ")"))
      }
    }
    return indexes
  }

  /// The column of a property of `entity` or one of its superentities.
  private static func column(of property: String, in entity: ModelSchema.Entity, schema: ModelSchema) -> String? {
    var current: ModelSchema.Entity? = entity
    while let candidate = current {
      if let attribute = candidate.attributes.first(where: { $0.name == property }) { return attribute.column }
      if let relationship = candidate.relationships?.first(where: { $0.name == property }),
        let column = relationship.column
      {
        return column
      }
      current = candidate.superentity.flatMap { name in schema.entities.first { $0.name == name } }
    }
    return nil
  }

  static func joinObjects(_ table: String) -> [SchemaObject] {
    [
      SchemaObject(
        kind: .joinTable, name: table, table: table, columns: [], isUnique: false,
        sql: "CREATE TABLE \"\(table)\" (source INTEGER NOT NULL, target INTEGER NOT NULL, "
          + "source_order INTEGER, target_order INTEGER, PRIMARY KEY (source, target)) WITHOUT ROWID"),
      SchemaObject(
        kind: .joinIndex, name: "_index_\(table)_target", table: table, columns: ["target", "source"], isUnique: false,
        sql: "CREATE INDEX \"_index_\(table)_target\" ON \"\(table)\"(target, source)"),
    ]
  }
}
