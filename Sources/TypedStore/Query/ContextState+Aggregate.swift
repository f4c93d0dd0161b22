import Foundation

// Aggregates: one SELECT of an aggregate function over the request's saved rows (grouped by
// an attribute or a to-one relationship when asked), decoded into the function's typed
// result. Unsaved changes do not count.
extension ContextState {
  /// One aggregate of the request's saved rows.
  func aggregate<Entity: ManagedObject, Result>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity>
  ) throws -> Result {
    let (_, rows) = try aggregateRows(function, for: request, groupedBy: nil)
    guard let result = rows.first?.value ?? function.emptyResult as? Result else {
      throw FetchError.unsupportedAggregate("\(function.kind): no result")
    }
    return result
  }

  /// The aggregate for each value of an attribute.
  func aggregate<Entity: ManagedObject, Result, Key: Hashable>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity>,
    groupedBy keyPath: KeyPath<Entity, Key>
  ) throws -> [Key: Result] {
    let (grouping, rows) = try aggregateRows(function, for: request, groupedBy: .attribute(keyPath))
    guard case .attribute(let attribute)? = grouping else { return [:] }
    var groups: [Key: Result] = [:]
    for (key, value) in rows {
      guard let key = try attribute.accessor.codec.decodeAny(key[0]) as? Key else {
        let described = store.model.describe(keyPath, on: store.model.entity(for: Entity.self))
        throw FetchError.unsupportedAggregate("a group key of \(described) that cannot be read")
      }
      groups[key] = value
    }
    return groups
  }

  /// The aggregate for each object a to-one relationship relates the rows to, by its ID; the
  /// rows that relate to none are the group of the `nil` key.
  func aggregate<Entity: ManagedObject, Result, Destination: ManagedObject>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity>,
    groupedBy keyPath: KeyPath<Entity, Destination?>
  ) throws -> [ManagedID<Destination>?: Result] {
    let (grouping, rows) = try aggregateRows(function, for: request, groupedBy: .relationship(keyPath))
    guard case .relationship(_, let destination)? = grouping else { return [:] }
    let table = store.layout(of: destination)
    var groups: [ManagedID<Destination>?: Result] = [:]
    for (key, value) in rows {
      guard case .integer(let primaryKey) = key[0] else {
        groups[nil] = value
        continue
      }
      // The concrete entity of the related row, which names it in its ID.
      var entity = destination
      if case .integer(let code) = key[1] {
        guard let concrete = table.entity(code: code) else {
          throw FetchError.unsupportedAggregate("\(keyPath): the related row \(primaryKey) has an unknown entity")
        }
        entity = concrete
      }
      let id = AnyManagedID(storeIdentifier: store.identifier, entityName: entity.name, key: .permanent(primaryKey))
      groups[ManagedID(unchecked: id)] = value
    }
    return groups
  }

  /// What an aggregate groups its rows by, as the caller named it.
  private enum GroupKeyPath<Entity: ManagedObject> {
    case attribute(PartialKeyPath<Entity>)
    case relationship(PartialKeyPath<Entity>)
  }

  /// What an aggregate groups its rows by, found in the model.
  private enum Grouping {
    /// An attribute's value: each row's key is that value.
    case attribute(AttributeDescription)
    /// A to-one relationship: each row's key is the related row's primary key (NULL for none)
    /// and its entity code (NULL when `destination` has no subentities).
    case relationship(RelationshipDescription, destination: EntityDescription)
  }

  /// The to-one relationship of `entity` a group key path names.
  ///
  /// The one place aggregates turn a key path into a relationship, so that a resolver of key
  /// paths can take its place.
  private func groupRelationship<Entity: ManagedObject>(_ keyPath: PartialKeyPath<Entity>, of entity: EntityDescription)
    throws -> RelationshipDescription
  {
    guard let index = store.model.relationshipIndex(for: keyPath), index < entity.relationships.count else {
      throw FetchError.unsupportedAggregate("\(store.model.describe(keyPath, on: entity)): it is not a relationship")
    }
    let relationship = entity.relationships[index]
    guard !relationship.kind.isToMany else {
      throw FetchError.unsupportedAggregate(
        "\(entity.name).\(relationship.name): grouping by a to-many relationship (group by a to-one)")
    }
    return relationship
  }

  /// One aggregate over the request's saved rows, grouped by `groupedBy` when given; each
  /// result decoded by the attribute's codec into the function's `Result`, each row's group
  /// key as `Grouping` says.
  private func aggregateRows<Entity: ManagedObject, Result>(
    _ function: AggregateFunction<Entity, Result>, for request: FetchRequest<Entity>,
    groupedBy group: GroupKeyPath<Entity>?
  ) throws -> (grouping: Grouping?, rows: [(key: [PrimitiveValue], value: Result)]) {
    let resolved = try resolve(request)
    let entity = resolved.entity
    let valueAttribute = try function.keyPath.map { try aggregatedAttribute($0, of: entity) }
    let grouping = try self.grouping(group, of: entity)
    let inSwift = aggregatesInSwift(valueAttribute, grouping)
    let expression =
      inSwift
      ? "" : try valueAttribute.map { try aggregateExpression(function, of: $0, in: entity) } ?? "count(*)"
    if inSwift, let valueAttribute { try checkAggregatable(function.kind, of: valueAttribute, in: entity) }
    let table = "\"\(entity.tableName)\""
    let (source, arguments) = try aggregateSource(request, resolved, table: table)
    if inSwift {
      let rows = try aggregateInSwift(
        SwiftAggregate(kind: function.kind, type: valueAttribute?.attributeType), of: valueAttribute, from: source,
        table: table, groupedBy: grouping, of: entity, arguments: arguments)
      return (
        grouping, try rows.map { ($0.key, try aggregateResult($0.value, of: function, valueAttribute: valueAttribute)) }
      )
    }
    let sql = try aggregateSQL(expression, from: source, table: table, groupedBy: grouping, of: entity)
    let rows: [[PrimitiveValue]]
    do {
      rows = try store.selectRows(sql, arguments: arguments, connection: reader())
    } catch let error as SQLiteError where error.message.contains(SwiftDecimalFunctions.orderDependentSum) {
      throw FetchError.unsupportedAggregate(
        "\(function.kind) of \(entity.name).\(valueAttribute?.name ?? "?"): \(SwiftDecimalFunctions.orderDependentSum)")
    }
    let results = try rows.map { row -> (key: [PrimitiveValue], value: Result) in
      guard let value = row.last else { throw FetchError.unsupportedAggregate("\(function.kind): no result") }
      return (Array(row.dropLast()), try aggregateResult(value, of: function, valueAttribute: valueAttribute))
    }
    return (grouping, results)
  }

  /// The attribute an aggregate reads or groups by.
  ///
  /// - Throws: `FetchError.unsupportedAggregate` for a key path that is not an attribute.
  private func aggregatedAttribute<Entity: ManagedObject>(
    _ keyPath: PartialKeyPath<Entity>, of entity: EntityDescription
  )
    throws -> AttributeDescription
  {
    guard let slot = store.model.attributeSlot(for: keyPath) else {
      throw FetchError.unsupportedAggregate("\(store.model.describe(keyPath, on: entity)): it is not an attribute")
    }
    return entity.storedAttributes[Int(slot)]
  }

  /// The SQL of an aggregate of one attribute, with the collation or function that gives
  /// Swift's answer (strings by Swift's `<`, decimals by value).
  private func aggregateExpression<Entity: ManagedObject, Result>(
    _ function: AggregateFunction<Entity, Result>, of attribute: AttributeDescription, in entity: EntityDescription
  ) throws -> String {
    let column = "\"\(attribute.columnName)\""
    try checkAggregatable(function.kind, of: attribute, in: entity)
    switch (function.kind, attribute.attributeType) {
    case (_, .string) where store.dialect != .sqlite, (_, .decimal) where store.dialect != .sqlite:
      // Another engine's strings and decimals are aggregated in Swift (`aggregateInSwift`).
      throw FetchError.unsupportedAggregate(
        "\(attribute.attributeType.rawValue) values of \(entity.name).\(attribute.name) with \(function.kind) in SQL")
    case (.sum, .integer16) where store.dialect != .sqlite, (.sum, .integer32) where store.dialect != .sqlite,
      (.sum, .integer64) where store.dialect != .sqlite:
      return "CAST(sum(\(column)) AS bigint)"  // PostgreSQL sums integers as numeric
    case (.average, _) where store.dialect != .sqlite:
      return "CAST(avg(\(column)) AS double precision)"
    case (.min, .string): return "min(\(column) COLLATE SWIFT)"
    case (.max, .string): return "max(\(column) COLLATE SWIFT)"
    case (.min, .decimal): return "min(\(column) COLLATE SWIFT_DECIMAL)"
    case (.max, .decimal): return "max(\(column) COLLATE SWIFT_DECIMAL)"
    case (.sum, .decimal): return "swift_decimal_sum(\(column))"
    case (.average, .decimal): return "swift_decimal_avg(\(column))"
    case (.min, _): return "min(\(column))"
    case (.max, _): return "max(\(column))"
    case (.sum, _): return "sum(\(column))"
    case (.average, _): return "avg(\(column))"
    case (.count, _): return "count(\(column))"
    }
  }

  /// The rows an aggregate reads (SQL after `FROM`) and their arguments: the request's rows
  /// by its predicate; those of its range, by a subquery with its order and range; or, when
  /// only Swift can decide which rows the request returns (a predicate SQL only narrows, a
  /// range of a sort only Swift orders), the saved rows Swift found, by their keys.
  private func aggregateSource<Entity: ManagedObject>(
    _ request: FetchRequest<Entity>, _ resolved: ResolvedFetch, table: String
  ) throws -> (String, [PrimitiveValue]) {
    let ranged = request.fetchLimit > 0 || request.fetchOffset > 0
    if resolved.checksInSwift || (ranged && resolved.sortsInMemory) {
      // Aggregates read the saved rows: with unsaved changes, a context without them finds them.
      let keys =
        hasChanges
        ? try ContextState(store: store, name: nil).fetch(request).compactMap { $0.objectKey?.value }
        : try fetchObjectIDs(for: request).compactMap(\.primaryKey)
      return ("\(table) WHERE pk IN (\(store.dialect.jsonIntegerValues))", [.text(HistorySchema.jsonArray(keys))])
    }
    guard ranged else { return ("\(table)\(resolved.whereClause)", resolved.arguments) }
    // A subquery named as the table, so that a group key can name its rows' keys.
    let range = clauses(resolved, limit: request.fetchLimit, offset: request.fetchOffset)
    return ("(SELECT * FROM \(table)\(range)) AS \(table)", resolved.clauseArguments)
  }

  /// Throws `FetchError.unsupportedAggregate` for an aggregate of values it has no answer for
  /// (bytes, UUIDs, URLs, `Codable` values; sums and averages of strings, dates, booleans).
  private func checkAggregatable(
    _ kind: AggregateFunctionKind, of attribute: AttributeDescription, in entity: EntityDescription
  ) throws {
    switch (kind, attribute.attributeType) {
    case (_, .uri), (_, .codable), (_, .binaryData), (_, .uuid), (.sum, .string), (.average, .string),
      (.sum, .date), (.average, .date), (.sum, .boolean), (.average, .boolean):
      throw FetchError.unsupportedAggregate(
        "\(attribute.attributeType.rawValue) values of \(entity.name).\(attribute.name) with \(kind)")
    default: return
    }
  }

  /// Whether the aggregate is computed in Swift over the values SQL reads: on an engine whose
  /// SQL orders strings and decimals, groups strings and sums decimals otherwise than Swift.
  private func aggregatesInSwift(_ value: AttributeDescription?, _ grouping: Grouping?) -> Bool {
    guard store.dialect != .sqlite else { return false }
    let swiftOnly: [AttributeType] = [.string, .decimal]
    if let value, swiftOnly.contains(value.attributeType) { return true }
    if case .attribute(let key)? = grouping, swiftOnly.contains(key.attributeType) { return true }
    return false
  }

  /// What an aggregate's rows are grouped by, found in the model.
  private func grouping<Entity: ManagedObject>(_ group: GroupKeyPath<Entity>?, of entity: EntityDescription) throws
    -> Grouping?
  {
    switch group {
    case .attribute(let keyPath)?: return .attribute(try aggregatedAttribute(keyPath, of: entity))
    case .relationship(let keyPath)?:
      let relationship = try groupRelationship(keyPath, of: entity)
      guard let destination = store.model.entity(named: relationship.destinationEntityName) else {
        throw FetchError.unknownEntity(relationship.destinationEntityName)
      }
      return .relationship(relationship, destination: destination)
    case nil: return nil
    }
  }

  /// The SELECT of an aggregate over `source`, one row per group (the group's key first).
  private func aggregateSQL(
    _ expression: String, from source: String, table: String, groupedBy grouping: Grouping?,
    of entity: EntityDescription
  ) throws -> String {
    switch grouping {
    case nil:
      return "SELECT \(expression) FROM \(source)"
    case .attribute(let attribute):
      let column = "\"\(attribute.columnName)\""
      // Keys equal in Swift are one group: strings by Swift's `==`, decimals by value.
      if store.dialect != .sqlite && [.string, .decimal].contains(attribute.attributeType) {
        throw FetchError.unsupportedAggregate(
          "\(entity.name).\(attribute.name): grouping by strings or decimals on PostgreSQL (not yet)")
      }
      let collation =
        switch attribute.attributeType {
        case .string: " COLLATE SWIFT"
        case .decimal: " COLLATE SWIFT_DECIMAL"
        default: ""
        }
      return "SELECT \(column), \(expression) FROM \(source) GROUP BY \(column)\(collation)"
    case .relationship(let relationship, let destination):
      let key = try relationshipKey(relationship, destination: destination, table: table, of: entity)
      let concreteEntity =
        destination.selfAndDescendantNames.count > 1
        ? "(SELECT _entity FROM \"\(destination.tableName)\" WHERE pk = _groups._key)" : "NULL"
      return "SELECT _groups._key, \(concreteEntity), _groups._value FROM "
        + "(SELECT \(key) AS _key, \(expression) AS _value FROM \(source) GROUP BY _key) _groups"
    }
  }

  /// The SQL of a row's group key for a to-one relationship: the related row's primary key.
  private func relationshipKey(
    _ relationship: RelationshipDescription, destination: EntityDescription, table: String, of entity: EntityDescription
  ) throws -> String {
    switch relationship.storage {
    case .foreignKey(let column, _):
      return "\"\(column)\""
    case .inverseForeignKey(let column, _):
      // A one-to-one whose key is in the related row.
      return
        "(SELECT _related.pk FROM \"\(destination.tableName)\" _related WHERE _related.\"\(column)\" = \(table).pk)"
    case .joinTable:
      throw FetchError.unsupportedAggregate("\(entity.name).\(relationship.name): grouping by a to-many relationship")
    }
  }

  /// An aggregate computed in Swift (`SwiftAggregate`): the rows' group keys and values read in
  /// primary-key order, grouped by Swift's `==` of the key (strings by canonical equivalence,
  /// decimals by value), each group's first key standing for it.
  private func aggregateInSwift(
    _ aggregate: SwiftAggregate, of value: AttributeDescription?, from source: String, table: String,
    groupedBy grouping: Grouping?, of entity: EntityDescription, arguments: [PrimitiveValue]
  ) throws -> [(key: [PrimitiveValue], value: PrimitiveValue)] {
    var keys: [String] = []
    switch grouping {
    case nil: break
    case .attribute(let attribute): keys = ["\"\(attribute.columnName)\""]
    case .relationship(let relationship, let destination):
      let key = try relationshipKey(relationship, destination: destination, table: table, of: entity)
      let concrete =
        destination.selfAndDescendantNames.count > 1
        ? "(SELECT _entity FROM \"\(destination.tableName)\" WHERE pk = \(key))" : "NULL"
      keys = [key, concrete]
    }
    let column = value.map { "\"\($0.columnName)\"" } ?? "1"
    let sql = "SELECT \((keys + [column]).joined(separator: ", ")) FROM \(source) ORDER BY \(table).pk"
    var groups: [(key: [PrimitiveValue], values: [PrimitiveValue])] = []
    var index: [String: Int] = [:]
    for row in try store.selectRows(sql, arguments: arguments, connection: reader()) {
      let key = Array(row.dropLast())
      let name: String
      if case .attribute(let attribute)? = grouping, let first = key.first {
        name = try Self.groupName(first, type: attribute.attributeType)
      } else {
        name = "\(key)"
      }
      if let existing = index[name] {
        groups[existing].values.append(row.last ?? .null)
      } else {
        index[name] = groups.count
        groups.append((key, [row.last ?? .null]))
      }
    }
    if grouping == nil && groups.isEmpty { groups = [([], [])] }  // an aggregate over no rows
    return try groups.map { ($0.key, try aggregate.result(of: $0.values)) }
  }

  /// A group key's identity under Swift's `==`: a string's canonical form, a decimal's
  /// compacted value (`1.0` is `1`; NaN is one group), other values as they are.
  private static func groupName(_ value: PrimitiveValue, type: AttributeType) throws -> String {
    guard value != .null else { return "nil" }
    switch type {
    case .string:
      let string = try String(primitiveValue: value)
      return "s" + string.decomposedStringWithCanonicalMapping
    case .decimal:
      var decimal = try Decimal(primitiveValue: value)
      if decimal.isNaN { return "NaN" }
      NSDecimalCompact(&decimal)
      return "d" + decimal.description
    case .double, .float, .date:
      if case .real(let number) = value, number == 0 { return "\(PrimitiveValue.real(0))" }  // -0.0 is 0.0
      return "\(value)"
    default: return "\(value)"
    }
  }

  /// One aggregate value, as the function's `Result`.
  private func aggregateResult<Entity: ManagedObject, Result>(
    _ value: PrimitiveValue, of function: AggregateFunction<Entity, Result>, valueAttribute: AttributeDescription?
  ) throws -> Result {
    let result: Result?
    switch value {
    case .null: result = function.emptyResult as? Result
    case .integer(let count) where function.kind == .count: result = Int(count) as? Result
    case .integer(let number) where function.kind == .average: result = Double(number) as? Result
    case .real(let number) where function.kind == .average: result = Double?.some(number) as? Result
    case .text(let text) where function.kind == .average && valueAttribute?.attributeType == .decimal:
      // `average(_:)` of a `Decimal` gives a `Decimal?`; its `Double?` form the nearest `Double`.
      let average = try Decimal(primitiveValue: value)
      result = Decimal?.some(average) as? Result ?? Double?.some(Double(text) ?? .nan) as? Result
    default: result = try valueAttribute.flatMap { try $0.accessor.codec.decodeAny(value) as? Result }
    }
    guard let result else {
      throw FetchError.unsupportedAggregate("\(function.kind) of \(valueAttribute?.name ?? "rows"): got \(value)")
    }
    return result
  }
}
