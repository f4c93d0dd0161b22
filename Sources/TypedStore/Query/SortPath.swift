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

/// A resolved sort descriptor: what it reads, and which way it orders.
struct SortKey: Sendable {
  var path: SortPath
  var ascending: Bool

  /// The attribute slot, for a key that reads the fetched object itself.
  var ownSlot: Int? { path.relationships.isEmpty ? path.slot : nil }
}

extension ContextState {
  /// A sort key's value for `object`, as the store's ORDER BY sees it: the related objects
  /// are followed in memory (and loaded, like any read of them); a missing one gives NULL,
  /// as optional chaining gives nil.
  func sortValue(_ key: SortKey, of object: ManagedObject) -> PrimitiveValue {
    var current = object
    for index in key.path.relationships {
      guard let entity = current.entity, index < entity.relationships.count else { return .null }
      current.loadRelationship(index)
      guard let next = entity.relationships[index].accessor.objects(in: current).first else { return .null }
      current = next
    }
    if current.isFault { fulfillFault(of: current) }  // as reading the attribute would
    guard let entity = current.entity, key.path.slot < entity.accessors.count else { return .null }
    return (try? entity.accessors[key.path.slot].encode(current)) ?? .null
  }

  /// The ORDER BY term of a sort key on rows of `entity`'s table: the column, or for a
  /// related object's attribute, correlated subqueries that follow the keys (NULL when a
  /// relationship holds no object, which SQLite sorts first, as Swift orders nil).
  func orderTerm(_ key: SortKey, of entity: EntityDescription) throws -> String {
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
          "(SELECT \(alias).pk FROM \"\(destination.tableName)\" \(alias) WHERE \(alias).\"\(column)\" = \(reached ?? "\"\(entity.tableName)\".pk"))"
      case .joinTable:
        throw FetchError.unsupportedSortKey(relationship.name)
      }
      current = destination
    }
    let attribute = current.storedAttributes[key.path.slot]
    let direction = key.ascending ? "ASC" : "DESC"
    guard let reached else { return "\"\(attribute.columnName)\" \(direction)" }
    let alias = "_sort\(key.path.relationships.count)"
    return
      "(SELECT \(alias).\"\(attribute.columnName)\" FROM \"\(current.tableName)\" \(alias) WHERE \(alias).pk = \(reached)) \(direction)"
  }
}
