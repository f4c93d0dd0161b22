import Foundation

/// What one sort descriptor reads: an attribute of the fetched object (`\Note.title`), or of
/// an object reached through to-one relationships (`\Note.folder?.name`), as
/// `ManagedObjectModel.sortPath(for:)` finds it.
struct SortPath: Sendable, Equatable {
  /// How many to-one relationships a sort key path may follow.
  static let maximumDepth = 3

  /// The to-one relationships followed, by index in each entity on the way.
  var relationships: [Int]
  /// The attribute's slot in the last entity.
  var slot: Int
}

extension ValueCodec {
  /// Whether SQL's order of the stored values is Swift's `<` on the values: for an enum that
  /// is `CaseIterable`, its cases' raw values ascend, with no two cases tied.
  var storesCasesInTheirOrder: Bool {
    guard let cases = caseOrder else { return false }
    let text = attributeType == .string
    return zip(cases, cases.dropFirst()).allSatisfy { left, right in
      left.rank < right.rank
        && (text ? compareSwift(left.value, right.value) < 0 : compareSQLite(left.value, right.value) < 0)
    }
  }
}

extension ManagedObjectModel {
  /// What a sort key path reads: one attribute of the root object (`\Note.title`), or of an
  /// object reached through to-one relationships (`\Note.folder?.name`, at most
  /// `SortPath.maximumDepth` of them); nil for anything else (see `resolve(_:on:)`).
  func sortPath<Root: ManagedObject>(for keyPath: PartialKeyPath<Root>) -> SortPath? {
    guard let entity = entity(for: Root.self),
      let resolved = resolve(keyPath, on: entity, maximumDepth: SortPath.maximumDepth),
      case .attribute(let slot) = resolved.target
    else { return nil }
    return SortPath(relationships: resolved.relationships, slot: slot)
  }
}

/// How the store orders a sort key's values so that the order is Swift's.
enum SQLSortOrder: Sendable, Equatable {
  /// The column (or related column) as stored, compared with a collation when given:
  /// numbers, dates and UUIDs as stored; strings as Swift's `<` (`SWIFT`) or as
  /// `String.StandardComparator.lexical` (`SWIFT_LEXICAL`).
  case column(collation: String?)
  /// A `CaseIterable` enum whose `<` is not its raw values' order: each case's stored raw
  /// value with its rank in Swift's order of the cases (cases `<` ties share one), ranked by
  /// a `CASE`.
  case ranked([RankedCase])
  /// No SQL gives Swift's order (a `Codable` value's own `<`, an enum that is not
  /// `CaseIterable`, a comparator SQLite has no collation for): the objects are ordered in
  /// memory with the descriptor itself.
  case inMemory
}

/// A resolved sort descriptor: what it reads, how SQL orders it, and the descriptor's own
/// comparison, which orders objects in memory.
struct SortKey: Sendable {
  var path: SortPath
  var ascending: Bool
  var order: SQLSortOrder
  /// `descriptor.compare` on the objects: Swift's order, by definition.
  var compare: @Sendable (ManagedObject, ManagedObject) -> ComparisonResult

  /// The attribute slot, for a key that reads the fetched object itself.
  var ownSlot: Int? { path.relationships.isEmpty ? path.slot : nil }
}

extension ContextState {
  /// The sort keys of `descriptors`, resolved before the store is read.
  ///
  /// - Throws: `FetchError.unsupportedSortKey` for a key path that is not an attribute of the
  ///   object or of an object reached through to-one relationships (a computed property is
  ///   none, even one that reads an attribute), naming the key path readably.
  func sortKeys<Entity: ManagedObject>(_ descriptors: [SortDescriptor<Entity>]) throws -> [SortKey] {
    let model = store.model
    return try descriptors.map { descriptor in
      guard let keyPath = descriptor.keyPath, let path = model.sortPath(for: keyPath) else {
        let described = descriptor.keyPath.map { model.describe($0, on: model.entity(for: Entity.self)) }
        throw FetchError.unsupportedSortKey(described ?? String(describing: descriptor))
      }
      return SortKey(
        path: path, ascending: descriptor.order == .forward,
        order: sqlOrder(of: path, from: Entity.self, comparator: descriptor.stringComparator),
        compare: { descriptor.compare(unsafeDowncast($0, to: Entity.self), unsafeDowncast($1, to: Entity.self)) })
    }
  }

  /// How SQL orders the attribute `path` reads as Swift orders it (see `SQLSortOrder`).
  private func sqlOrder<Entity: ManagedObject>(
    of path: SortPath, from type: Entity.Type, comparator: String.StandardComparator?
  ) -> SQLSortOrder {
    let order = sqliteOrder(of: path, from: type, comparator: comparator)
    // Only SQLite runs `String.StandardComparator.lexical`: another engine orders by it in memory.
    if store.dialect != .sqlite, case .column(let collation) = order, collation == "SWIFT_LEXICAL" { return .inMemory }
    return order
  }

  /// `sqlOrder(of:from:comparator:)` on SQLite.
  private func sqliteOrder<Entity: ManagedObject>(
    of path: SortPath, from type: Entity.Type, comparator: String.StandardComparator?
  ) -> SQLSortOrder {
    guard var entity = store.model.entity(for: type) else { return .inMemory }
    for index in path.relationships {
      guard let next = store.model.entity(named: entity.relationships[index].destinationEntityName) else {
        return .inMemory
      }
      entity = next
    }
    let attribute = entity.storedAttributes[path.slot]
    let codec = attribute.accessor.codec
    if let cases = codec.caseOrder {
      // The cases' raw values in Swift's order: the column as stored when that is SQL's
      // order of the raw values too, with no two cases tied.
      let text = attribute.attributeType == .string
      return codec.storesCasesInTheirOrder ? .column(collation: text ? "SWIFT" : nil) : .ranked(cases)
    }
    guard codec.isStandard else { return .inMemory }  // a Codable value's or an enum's own `<`
    switch attribute.attributeType {
    case .string:
      guard var comparator else { return .column(collation: "SWIFT") }  // `String`'s `<`
      comparator.order = .forward
      return comparator == .lexical ? .column(collation: "SWIFT_LEXICAL") : .inMemory
    case .integer16, .integer32, .integer64, .double, .float, .date, .uuid, .boolean:
      return .column(collation: nil)
    case .decimal:
      return .column(collation: "SWIFT_DECIMAL")  // Decimal's `<`, whatever the text's spelling
    default:
      return .inMemory
    }
  }

  /// The ORDER BY term of a sort key on rows of `entity`'s table, with its bound values: the
  /// column, or for a related object's attribute, correlated subqueries that follow the keys
  /// (NULL when a relationship holds no object, which SQLite sorts first, as Swift orders
  /// nil); nil for a key only memory can order.
  func orderTerm(_ key: SortKey, of entity: EntityDescription) throws -> (sql: String, arguments: [PrimitiveValue])? {
    var current = entity
    /// The key of the row reached so far, as SQL (nil while it is the fetched row itself).
    var reached: String? = nil
    for (depth, index) in key.path.relationships.enumerated() {
      let relationship = current.relationships[index]
      guard let destination = store.model.entity(named: relationship.destinationEntityName) else {
        throw FetchError.unsupportedSortKey(relationship.name)
      }
      let alias = "_sort\(depth)"
      switch relationship.storage {
      case .foreignKey(let column, _):
        reached =
          reached.map {
            "(SELECT \(alias).\"\(column)\" FROM \"\(current.tableName)\" \(alias) WHERE \(alias).pk = \($0))"
          }
          ?? "\"\(current.tableName)\".\"\(column)\""
      case .inverseForeignKey(let column, _):
        // The side of a one-to-one that holds no key: the row that names this one.
        reached =
          "(SELECT \(alias).pk FROM \"\(destination.tableName)\" \(alias) "
          + "WHERE \(alias).\"\(column)\" = \(reached ?? "\"\(entity.tableName)\".pk"))"
      case .joinTable:
        throw FetchError.unsupportedSortKey(relationship.name)
      }
      current = destination
    }
    let attribute = current.storedAttributes[key.path.slot]
    // NULL (nil) first, as SQLite orders it and Swift's optionals sort.
    let direction =
      store.dialect == .sqlite
      ? (key.ascending ? "ASC" : "DESC") : (key.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")
    let value: String
    if let reached {
      let alias = "_sort\(key.path.relationships.count)"
      value =
        "(SELECT \(alias).\"\(attribute.columnName)\" FROM \"\(current.tableName)\" \(alias) "
        + "WHERE \(alias).pk = \(reached))"
    } else {
      value = "\"\(attribute.columnName)\""
    }
    switch key.order {
    case .column(let collation) where store.dialect == .postgreSQL:
      // Swift's order of strings (NFC scalars) and decimals (NaN first), as predicates compare.
      switch collation {
      case "SWIFT": return ("normalize(\(value), NFC) COLLATE \"C\" \(direction)", [])
      case "SWIFT_DECIMAL":
        return ("(CASE WHEN \(value) = 'NaN' THEN CAST('-Infinity' AS numeric) ELSE \(value) END) \(direction)", [])
      default: return ("\(value) \(direction)", [])
      }
    case .column(let collation):
      return ("\(value)\(collation.map { " COLLATE \($0)" } ?? "") \(direction)", [])
    case .ranked(let cases):
      // The ranks are integers counted here, not values: only the raw values are bound.
      let whens = cases.map { "WHEN ? THEN \($0.rank)" }.joined(separator: " ")
      return ("CASE \(value) \(whens) END \(direction)", cases.map(\.value))
    case .inMemory:
      return nil
    }
  }
}
