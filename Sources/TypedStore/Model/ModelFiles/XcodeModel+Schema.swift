import Foundation

// A model file's entities laid out as TypedStore lays out classes: the same tables, columns,
// key columns and join tables (`RelationshipLinks.storage`), so that a file and the classes
// that match it describe one stored shape.

extension XcodeModel {
  /// The model's schema: entities with their stored (not transient) attributes and their
  /// relationships, superentities first and otherwise by name, as a class model orders them.
  ///
  /// ```swift
  /// let schema = try XcodeModel(contentsOf: url).schema()
  /// ```
  ///
  /// - Throws: ``ModelFileError`` for a default, minimum or maximum that is not a value of
  ///   its attribute's type.
  public func schema() throws(ModelFileError) -> ModelSchema {
    let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    func root(of name: String) -> String {
      byName[name]?.parentEntity.map(root) ?? name
    }
    var result: [ModelSchema.Entity] = []
    for entity in superentitiesFirst() {
      let singles = Set(
        entity.uniquenessConstraints.filter { $0.count == 1 }.joined().filter { name in
          entity.attributes.contains { $0.name == name }
        })
      let compound = entity.uniquenessConstraints.filter { $0.count != 1 || !singles.contains($0[0]) }
      var attributes: [ModelSchema.Attribute] = []
      for attribute in flatAttributes(of: entity) where !attribute.isTransient {
        guard let type = attribute.attributeType else { continue }
        attributes.append(
          ModelSchema.Attribute(
            name: attribute.name, column: attribute.name.replacingOccurrences(of: ".", with: "_"), type: type,
            storage: type == .codable ? .codable : .standard,
            optional: attribute.isOptional, preservedOnDeletion: attribute.isPreservedOnDeletion,
            indexed: attribute.isIndexed, unique: singles.contains(attribute.name),
            bounds: try attribute.boundsDescription(entity: entity.name, file: file)))
      }
      let relationships = entity.relationships.map { relationship($0, of: entity.name, byName: byName) }
      result.append(
        ModelSchema.Entity(
          name: entity.name, superentity: entity.parentEntity, table: root(of: entity.name), attributes: attributes,
          relationships: relationships.isEmpty ? nil : relationships,
          uniquenessConstraints: compound.isEmpty ? nil : compound))
    }
    let schema = ModelSchema(entities: result)
    try checkUniquenessStorage(schema)
    return schema
  }

  /// Each name of a uniqueness constraint is a stored attribute or a to-one whose row holds
  /// the key, as for classes: a to-many, the other side of a one-to-one, or a transient
  /// attribute has no column to index.
  private func checkUniquenessStorage(_ schema: ModelSchema) throws(ModelFileError) {
    let byName = Dictionary(schema.entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    func columns(of name: String) -> Set<String> {
      guard let entity = byName[name] else { return [] }
      return (entity.superentity.map(columns) ?? []).union(entity.attributes.map(\.name))
        .union((entity.relationships ?? []).filter { $0.column != nil }.map(\.name))
    }
    for entity in entities {
      let stored = columns(of: entity.name)
      for constraint in entity.uniquenessConstraints {
        let element = "uniquenessConstraint (\(constraint.joined(separator: ", ")))"
        guard !constraint.isEmpty else {
          throw ModelFileError(
            file: file, line: entity.line, entity: entity.name, element: element,
            reason: .invalidValue("a uniqueness constraint names no property"))
        }
        for name in constraint where !stored.contains(name) {
          throw ModelFileError(
            file: file, line: entity.line, entity: entity.name, element: element,
            reason: .unsupported(
              "a constraint on \(name), which is no stored attribute or to-one whose row holds the key"))
        }
      }
    }
  }

  /// The entities, superentities before subentities, otherwise by name.
  func superentitiesFirst() -> [Entity] {
    var ordered: [Entity] = []
    var placed = Set<String>()
    var pending = entities
    while !pending.isEmpty {
      let ready = pending.filter { $0.parentEntity.map(placed.contains) ?? true }.sorted { $0.name < $1.name }
      guard !ready.isEmpty else { break }  // a cycle of parents: the model's check names it
      ordered += ready
      placed.formUnion(ready.map(\.name))
      pending.removeAll { placed.contains($0.name) }
    }
    return ordered + pending
  }

  /// The schema form of one relationship, with its storage laid out from both sides.
  private func relationship(_ relationship: Relationship, of entity: String, byName: [String: Entity])
    -> ModelSchema.Relationship
  {
    // The inverse's declaring entity: the destination or one of its ancestors.
    var inverseEntity = relationship.destination
    var inverse: Relationship?
    var current: String? = relationship.destination
    while let name = current, let candidate = byName[name] {
      if let found = candidate.relationships.first(where: { $0.name == relationship.inverse }) {
        inverse = found
        inverseEntity = name
        break
      }
      current = candidate.parentEntity
    }
    let inverseKind = inverse?.kind ?? .toOne
    let owns =
      (inverseEntity == entity && relationship.inverse == relationship.name)
      || RelationshipLinks.owns(relationship.name, of: entity, inverse: relationship.inverse, of: inverseEntity)
    let storage = RelationshipLinks.storage(
      name: relationship.name, kind: relationship.kind, in: entity, inverseName: relationship.inverse,
      inverseKind: inverseKind, of: inverseEntity, owns: owns)
    var schema = ModelSchema.Relationship(
      name: relationship.name, destination: relationship.destination, inverse: relationship.inverse,
      kind: relationship.kind, deleteRule: relationship.deleteRule, required: relationship.isRequired,
      minimumCount: relationship.minimumCount, maximumCount: relationship.maximumCount)
    schema.store(storage)
    return schema
  }
}

extension XcodeModel.Relationship {
  /// For a to-one: whether a save needs it set (`optional` absent).
  public var isRequired: Bool { kind == .toOne && !isOptional }

  /// For a to-many: the fewest objects a save accepts. A to-many that is not optional needs
  /// at least one, as in Core Data.
  public var minimumCount: Int? {
    guard kind.isToMany else { return nil }
    if minCount > 0 { return minCount }
    return isOptional ? nil : 1
  }

  /// For a to-many: the most objects a save accepts (`maxCount`; 0 is no limit).
  public var maximumCount: Int? { kind.isToMany && maxCount > 0 ? maxCount : nil }
}

extension XcodeModel.Attribute {
  /// The value every new object gets, in its stored form: the default as written, `nil` for
  /// an optional attribute without one, and nil (no constant default) for a required one.
  ///
  /// ```swift
  /// let value = try attribute.storedDefault(entity: "Note", file: file.file)   // .integer(3)
  /// ```
  ///
  /// - Throws: ``ModelFileError/Reason/invalidValue(_:)`` for a default that is not a value of
  ///   the attribute's type.
  public func storedDefault(entity: String, file: String) throws(ModelFileError) -> PrimitiveValue? {
    guard let text = defaultValue, let type = attributeType else { return isOptional ? .null : nil }
    guard let value = Self.primitive(text, type: type) else {
      throw ModelFileError(
        file: file, line: line, entity: entity, element: "attribute \(name)",
        reason: .invalidValue("the default \"\(text)\" is not a \(typeName ?? "value")"))
    }
    return value
  }

  /// `text` as a stored value of `type`, as the Swift value's `primitiveValue` gives it.
  static func primitive(_ text: String, type: AttributeType) -> PrimitiveValue? {
    switch type {
    case .integer16: Int16(text)?.primitiveValue
    case .integer32: Int32(text)?.primitiveValue
    case .integer64: Int64(text)?.primitiveValue
    case .double: Double(text)?.primitiveValue
    case .float: Float(text)?.primitiveValue
    case .decimal: Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))?.primitiveValue
    case .boolean:
      switch text {
      case "YES", "1", "true": true.primitiveValue
      case "NO", "0", "false": false.primitiveValue
      default: nil
      }
    case .string: text.primitiveValue
    case .date: Double(text).map { Date(timeIntervalSinceReferenceDate: $0).primitiveValue }
    case .uuid: UUID(uuidString: text)?.primitiveValue
    case .uri: URL(string: text)?.primitiveValue
    case .binaryData, .codable: nil
    }
  }

  /// The bounds as `@Attribute(bounds:)` prints them (`0...150`, `0.5...`), or nil.
  func boundsDescription(entity: String, file: String) throws(ModelFileError) -> String? {
    guard minimum != nil || maximum != nil, let type = attributeType else { return nil }
    func value(_ text: String?) throws(ModelFileError) -> String {
      guard let text else { return "" }
      let printed: String? =
        switch type {
        case .integer16: Int16(text).map { "\($0)" }
        case .integer32: Int32(text).map { "\($0)" }
        case .integer64: Int64(text).map { "\($0)" }
        case .double: Double(text).map { "\($0)" }
        case .float: Float(text).map { "\($0)" }
        case .decimal: Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).map { "\($0)" }
        default: nil
        }
      guard let printed else {
        throw ModelFileError(
          file: file, line: line, entity: entity, element: "attribute \(name)",
          reason: .invalidValue("the bound \"\(text)\" is not a \(typeName ?? "value")"))
      }
      return printed
    }
    return try value(minimum) + "..." + value(maximum)
  }
}
