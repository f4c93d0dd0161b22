import Foundation

// Relationships in `#Predicate`, translated to correlated subqueries so that SQL answers as
// Swift does:
//
// - a to-one (`$0.folder`) is the related row's key: its key column, or for the side of a
//   one-to-one that holds no key, `(SELECT pk FROM <destination> WHERE <key column> = <row>)`;
//   `$0.folder == nil` is `IS NULL`, and `$0.folder?.managedID == id` compares the key with
//   the ID's (`#Predicate` cannot compare the objects themselves: they are not `Codable`);
// - an attribute of a related object (`$0.folder?.name`, inside `OptionalFlatMap`) is
//   `(SELECT name FROM <destination> WHERE pk = <key>)`, NULL when there is no related row,
//   which is what optional chaining gives in Swift;
// - a to-many's `count` is `(SELECT count(*) …)`, `isEmpty` is `NOT EXISTS (…)`,
//   `contains(where:)` is `EXISTS (… AND <test>)` and `allSatisfy` is
//   `NOT EXISTS (… AND NOT <test>)`, the test reading the related row's columns directly.
//
// Every identifier comes from the model; each subquery gets an alias of its own (`t1`, `t2`,
// …) so that a relationship of an entity to itself reads the right row.

/// What a fragment stands for in the object graph, beyond its SQL value.
enum GraphReference {
  /// A related object: the fragment's SQL is its row's key. `alias` names that row when it
  /// is in scope (inside `contains(where:)`), so its columns are read directly.
  case object(EntityDescription, alias: String?)
  /// A to-many relationship of the row whose key is the fragment's SQL.
  case toMany(RelationshipDescription)
}

extension PredicateTranslator {
  /// What `keyPath` names on an object of `entity` (`ManagedObjectModel.resolve(_:on:)`): a
  /// computed property is no attribute, even when it reads one.
  func target(of keyPath: AnyKeyPath, on entity: EntityDescription) throws -> ResolvedKeyPath.Target {
    let resolved =
      if let parts = joinedParts[ObjectIdentifier(keyPath)] {
        model.resolve(parts: parts, joined: keyPath, on: entity)
      } else {
        model.resolve(keyPath, on: entity, maximumDepth: 0)
      }
    guard let resolved else {
      throw PredicateTranslationError.unknownKeyPath(model.describe(keyPath, on: entity))
    }
    return resolved.target
  }

  mutating func nextAlias() -> String {
    aliasCount += 1
    return "t\(aliasCount)"
  }

  /// A key path applied to a fragment of the graph: a property of a related object, or
  /// `count`/`isEmpty` of a to-many.
  mutating func graphProperty(_ keyPath: AnyKeyPath, of base: SQLFragment) throws -> SQLFragment {
    switch base.graph {
    case .object(let entity, let alias)?:
      return try property(keyPath, of: entity, key: base.sql, alias: alias, arguments: base.arguments)
    case .toMany(let relationship)?:
      return try collectionProperty(keyPath, of: relationship, owner: base)
    case nil:
      throw PredicateTranslationError.unsupportedExpression("a key path on \(base.kind) value")
    }
  }

  /// `keyPath` on an object of `entity` whose row's key is `key` (its row is `alias` when in
  /// scope; the predicate's own object when `key` is nil).
  mutating func property(
    _ keyPath: AnyKeyPath, of entity: EntityDescription, key: String?, alias: String?, arguments: [PrimitiveValue]
  ) throws -> SQLFragment {
    let index: Int
    switch try target(of: keyPath, on: entity) {
    case .identity:
      // `managedID`: the row's key, compared with captured IDs by their primary keys.
      let sql = alias.map { "\($0).pk" } ?? key ?? "\"\(entity.tableName)\".pk"
      return SQLFragment(
        sql: sql, arguments: alias == nil ? arguments : [], kind: .number, codec: nil, literal: nil,
        isNullable: key != nil && alias == nil)
    case .attribute(let slot):
      var fragment = try attributeFragment(entity.storedAttributes[slot], of: entity)
      if key == nil {
        slots.insert(Int32(slot))
        return fragment
      }
      fragment.sql = try readColumn(fragment.sql, of: entity, key: key, alias: alias)
      fragment.arguments = arguments
      fragment.isNullable = true
      return fragment
    case .relationship(let found):
      index = found
    }
    let relationship = entity.relationships[index]
    // An unsaved change of the predicate's object's side makes a fetch evaluate it in Swift.
    if key == nil { slots.insert(ManagedObject.relationshipMarker(Int32(index))) }
    guard let destination = model.entity(named: relationship.destinationEntityName) else {
      throw PredicateTranslationError.unknownKeyPath(model.describe(keyPath, on: entity))
    }
    let ownerKey = key ?? "\"\(entity.tableName)\".pk"
    switch relationship.storage {
    case .foreignKey(let column, _):
      if key == nil, let keySlot = relationship.foreignKeySlot { slots.insert(keySlot) }
      let sql = key == nil ? "\"\(column)\"" : try readColumn("\"\(column)\"", of: entity, key: key, alias: alias)
      return SQLFragment(
        sql: sql, arguments: arguments, kind: .number, codec: nil, literal: nil, isNullable: true,
        graph: .object(destination, alias: nil))
    case .inverseForeignKey(let column, _) where !relationship.kind.isToMany:
      let inner = nextAlias()
      return SQLFragment(
        sql:
          "(SELECT \(inner).pk FROM \"\(destination.tableName)\" \(inner) WHERE \(inner).\"\(column)\" = \(ownerKey))",
        arguments: arguments, kind: .number, codec: nil, literal: nil, isNullable: true,
        graph: .object(destination, alias: nil))
    default:
      return SQLFragment(
        sql: ownerKey, arguments: arguments, kind: .unknown, codec: nil, literal: nil, isNullable: false,
        graph: .toMany(relationship))
    }
  }

  /// `(SELECT <column> FROM <entity's table> WHERE pk = <key>)`, or the aliased column when
  /// the row is in scope.
  private mutating func readColumn(_ column: String, of entity: EntityDescription, key: String?, alias: String?) throws
    -> String
  {
    if let alias { return "\(alias).\(column)" }
    guard let key else { return column }
    let inner = nextAlias()
    return "(SELECT \(inner).\(column) FROM \"\(entity.tableName)\" \(inner) WHERE \(inner).pk = \(key))"
  }

  /// The FROM and WHERE of the rows a to-many relates to its owner, with the alias that names
  /// each related row.
  mutating func relatedRows(of relationship: RelationshipDescription, owner: SQLFragment) throws -> (
    from: String, alias: String, destination: EntityDescription
  ) {
    guard let destination = model.entity(named: relationship.destinationEntityName) else {
      throw PredicateTranslationError.unknownKeyPath(relationship.name)
    }
    let row = nextAlias()
    switch relationship.storage {
    case .inverseForeignKey(let column, _):
      return ("FROM \"\(destination.tableName)\" \(row) WHERE \(row).\"\(column)\" = \(owner.sql)", row, destination)
    case .joinTable(let table, let own, let other, _, _):
      let link = nextAlias()
      return (
        "FROM \"\(table)\" \(link) JOIN \"\(destination.tableName)\" \(row) ON \(row).pk = \(link).\(other) "
          + "WHERE \(link).\(own) = \(owner.sql)", row, destination
      )
    case .foreignKey:
      throw PredicateTranslationError.unsupportedExpression("a to-one used as a collection")
    }
  }

  /// `count` or `isEmpty` of a to-many, told apart by applying the key path to the
  /// relationship's Swift value with no object and with one.
  private mutating func collectionProperty(
    _ keyPath: AnyKeyPath, of relationship: RelationshipDescription, owner: SQLFragment
  ) throws -> SQLFragment {
    guard let destination = model.entity(named: relationship.destinationEntityName), destination.hasClass else {
      throw PredicateTranslationError.unknownKeyPath(ManagedObjectModel.readable(keyPath.debugDescription, reading: []))
    }
    let empty = relationship.accessor.boxedValue(holding: [])
    let one = relationship.accessor.boxedValue(holding: [destination.objectType.init()])
    let (rows, _, _) = try relatedRows(of: relationship, owner: owner)
    switch (empty[keyPath: keyPath], one[keyPath: keyPath]) {
    case (let none as Int, let some as Int) where none == 0 && some == 1:  // count
      return SQLFragment(
        sql: "(SELECT count(*) \(rows))", arguments: owner.arguments, kind: .number, codec: nil, literal: nil,
        isNullable: false)
    case (let none as Bool, let some as Bool) where none && !some:  // isEmpty
      return SQLFragment(
        sql: "(NOT EXISTS (SELECT 1 \(rows)))", arguments: owner.arguments, kind: .boolean, codec: nil, literal: nil,
        isNullable: false)
    default:
      throw PredicateTranslationError.unsupportedExpression(
        "\(ManagedObjectModel.readable(keyPath.debugDescription, reading: [])) of a to-many relationship "
          + "(count, isEmpty, contains(where:) and allSatisfy translate)")
    }
  }

  /// `EXISTS` over the related rows of a to-many with `test` on each, negated for
  /// `allSatisfy` (no related row fails the test).
  mutating func quantified(
    _ sequence: Any, variable: PredicateExpressions.VariableID, test: Any, all: Bool
  ) throws -> SQLFragment {
    let base = try fragment(sequence)
    guard case .toMany(let relationship)? = base.graph else {
      throw PredicateTranslationError.unsupportedExpression(
        all
          ? "allSatisfy on a value that is not a to-many relationship"
          : "contains(where:) on a value that is not a to-many relationship")
    }
    let (rows, row, destination) = try relatedRows(of: relationship, owner: base)
    variables[variable] = SQLFragment(
      sql: "\(row).pk", kind: .number, codec: nil, literal: nil, isNullable: false,
      graph: .object(destination, alias: row))
    defer { variables[variable] = nil }
    let condition = try self.condition(test)
    // Some related row passing a superset of the test is a superset; every related row
    // passing it is none (`NOT` of a superset).
    if all && condition.exactness != .exact {
      return SQLFragment(sql: literal(true), kind: .boolean, isNullable: false, exactness: .superset)
    }
    let sql =
      all
      ? "(NOT EXISTS (SELECT 1 \(rows) AND NOT \(condition.sql)))"
      : "(EXISTS (SELECT 1 \(rows) AND \(condition.sql)))"
    return SQLFragment(
      sql: sql, arguments: base.arguments + condition.arguments, kind: .boolean, codec: nil, literal: nil,
      isNullable: false, exactness: condition.exactness)
  }
}

extension PredicateExpressions.SequenceContainsWhere: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    try translator.quantified(sequence, variable: variable.key, test: test, all: false)
  }
}

extension PredicateExpressions.SequenceAllSatisfy: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    try translator.quantified(sequence, variable: variable.key, test: test, all: true)
  }
}
