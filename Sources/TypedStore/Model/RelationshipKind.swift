/// The kind of a relationship, from its property's type.
public enum RelationshipKind: String, Sendable, Codable {
  /// `Destination?`
  case toOne
  /// `Set<Destination>`
  case toMany
  /// `[Destination]`: the order is stored.
  case ordered

  /// Whether the relationship holds any number of objects.
  public var isToMany: Bool { self != .toOne }
}
