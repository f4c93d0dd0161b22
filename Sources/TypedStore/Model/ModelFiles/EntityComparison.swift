import Foundation

/// Compares one entity of a model file with the class bound to it, property by property,
/// collecting every difference (`XcodeModel.mismatches(against:)`).
struct EntityComparison {
  let file: XcodeModel
  let entity: XcodeModel.Entity
  let classEntity: EntityDescription
  private(set) var mismatches: [ModelMismatch] = []

  init(file: XcodeModel, entity: XcodeModel.Entity, classEntity: EntityDescription) {
    self.file = file
    self.entity = entity
    self.classEntity = classEntity
  }

  mutating func compare() throws(ModelFileError) {
    let className = String(describing: classEntity.objectType)
    if classEntity.name != entity.name {
      note(
        .entityName, file: "entity \(entity.name)", classes: "class \(className) names its entity \(classEntity.name)")
    }
    compareRename(entity.renamingIdentifier, entity.name, classEntity.originalName, property: nil)
    if classEntity.superentityName != entity.parentEntity {
      note(.parentEntity, file: entity.parentEntity ?? "no parent", classes: classEntity.superentityName ?? "no parent")
    }
    try compareAttributes()
    compareRelationships()
    compareUniqueness()
  }

  // MARK: - Attributes

  private mutating func compareAttributes() throws(ModelFileError) {
    let own = classEntity.attributes.filter { $0.entityName == classEntity.name }
    let ownRelationships = Set(classEntity.relationships.filter { $0.entityName == classEntity.name }.map(\.name))
    let attributes = file.flatAttributes(of: entity)
    for attribute in attributes {
      guard let declared = own.first(where: { $0.name == attribute.name }) else {
        if attribute.isTransient {
          if !storedPropertyNames.contains(attribute.name) {
            note(
              .missingProperty, attribute.name, file: "transient attribute",
              classes: "no stored property (a transient attribute is a plain var)")
          }
        } else {
          note(.missingProperty, attribute.name, file: "attribute", classes: "no @Attribute")
        }
        continue
      }
      guard !attribute.isTransient else {
        note(.transient, attribute.name, file: "transient", classes: "stored (@Attribute)")
        continue
      }
      try compare(attribute, with: declared)
    }
    let fileNames = Set(attributes.map(\.name))
    for declared in own where !fileNames.contains(declared.name) && !ownRelationships.contains(declared.name) {
      note(.extraProperty, declared.name, file: "no attribute", classes: "@Attribute of type \(declared.attributeType)")
    }
  }

  private mutating func compare(_ attribute: XcodeModel.Attribute, with declared: AttributeDescription)
    throws(ModelFileError)
  {
    let name = attribute.name
    if let type = attribute.attributeType, type != declared.attributeType {
      let kind: ModelMismatch.Kind =
        type == .codable || declared.attributeType == .codable ? .transformer : .attributeType
      note(kind, name, file: attribute.typeName ?? "Undefined", classes: Self.words(declared.attributeType))
    }
    if attribute.isOptional != declared.isOptional {
      note(
        .optionality, name, file: attribute.isOptional ? "optional" : "required",
        classes: declared.isOptional ? "optional" : "required")
    }
    let column = name.replacingOccurrences(of: ".", with: "_")  // a composite's element: address_city
    if declared.columnName != column {
      note(.storageName, name, file: "column \(column)", classes: "column \(declared.columnName) (persistentName:)")
    }
    if attribute.isIndexed != declared.isIndexed {
      note(
        .indexed, name, file: attribute.isIndexed ? "indexed" : "not indexed",
        classes: declared.isIndexed ? "indexed" : "not indexed")
    }
    if attribute.isPreservedOnDeletion != declared.isPreservedOnDeletion {
      note(
        .preservedOnDeletion, name, file: attribute.isPreservedOnDeletion ? "preserved" : "not preserved",
        classes: declared.isPreservedOnDeletion ? "preserved" : "not preserved")
    }
    let bounds = try attribute.boundsDescription(entity: entity.name, file: file.file)
    if bounds != declared.bounds.map(ModelSchema.Attribute.canonicalBounds) {
      note(.bounds, name, file: bounds ?? "no bounds", classes: declared.bounds.map { "bounds: \($0)" } ?? "no bounds")
    }
    try compareDefault(of: attribute, with: declared)
    compareRename(attribute.renamingIdentifier, name, declared.originalName, property: name)
  }

  /// The file's renaming identifier (when it is not the name itself) against the class's
  /// `originalName`.
  private mutating func compareRename(_ identifier: String?, _ name: String, _ original: String?, property: String?) {
    let fileRename = identifier == name ? nil : identifier
    let classRename = original == name ? nil : original
    guard fileRename != classRename else { return }
    note(
      .renamingIdentifier, property, file: fileRename.map { "renamed from \($0)" } ?? "no renaming identifier",
      classes: classRename.map { "originalName \($0)" } ?? "no originalName")
  }

  /// A default the file states must be the class's; an optional attribute without one must
  /// start as nil. A required attribute without one may start as anything.
  private mutating func compareDefault(of attribute: XcodeModel.Attribute, with declared: AttributeDescription)
    throws(ModelFileError)
  {
    guard attribute.attributeType == declared.attributeType,
      let expected = try attribute.storedDefault(entity: entity.name, file: file.file)
    else { return }
    let first = classEntity.objectType.init()
    let second = classEntity.objectType.init()
    let one = try? declared.accessor.encode(first)
    let two = try? declared.accessor.encode(second)
    guard let one, one == two else {
      note(.defaultValue, attribute.name, file: expected.sqlText, classes: "a value that differs between objects")
      return
    }
    if one != expected {
      note(.defaultValue, attribute.name, file: expected.sqlText, classes: one.sqlText)
    }
  }

  /// The class's stored properties, its superclasses' included (a transient attribute is
  /// one that is not an `@Attribute`).
  private var storedPropertyNames: Set<String> {
    var names = Set<String>()
    var mirror: Mirror? = Mirror(reflecting: classEntity.objectType.init())
    while let current = mirror {
      for child in current.children { if let label = child.label { names.insert(label) } }
      mirror = current.superclassMirror
    }
    return names
  }

  // MARK: - Relationships

  private mutating func compareRelationships() {
    let own = classEntity.relationships.filter { $0.entityName == classEntity.name }
    for relationship in entity.relationships {
      guard let declared = own.first(where: { $0.name == relationship.name }) else {
        note(.missingProperty, relationship.name, file: "relationship", classes: "no @Relationship")
        continue
      }
      let name = relationship.name
      if relationship.destination != declared.destinationEntityName {
        note(.destination, name, file: relationship.destination, classes: declared.destinationEntityName)
      }
      if relationship.inverse != declared.inverseName {
        note(.inverse, name, file: relationship.inverse, classes: declared.inverseName)
      }
      if relationship.deleteRule != declared.deleteRule {
        note(.deleteRule, name, file: relationship.deleteRule.rawValue, classes: declared.deleteRule.rawValue)
      }
      if relationship.kind.isToMany != declared.kind.isToMany {
        note(.cardinality, name, file: Self.words(relationship.kind), classes: Self.words(declared.kind))
        continue
      }
      if relationship.kind != declared.kind {
        note(.ordered, name, file: Self.words(relationship.kind), classes: Self.words(declared.kind))
      }
      compareRename(relationship.renamingIdentifier, name, declared.originalName, property: name)
      let fileCounts = Self.counts(
        required: relationship.isRequired, minimum: relationship.minimumCount, maximum: relationship.maximumCount)
      let classCounts = Self.counts(
        required: declared.isRequired, minimum: declared.minimumCount, maximum: declared.maximumCount)
      if fileCounts != classCounts { note(.counts, name, file: fileCounts, classes: classCounts) }
    }
    let fileNames = Set(entity.relationships.map(\.name))
    for declared in own where !fileNames.contains(declared.name) {
      note(
        .extraProperty, declared.name, file: "no relationship",
        classes: "@Relationship to \(declared.destinationEntityName)")
    }
  }

  // MARK: - Uniqueness

  private mutating func compareUniqueness() {
    let fileSets = Set(entity.uniquenessConstraints.map { Set($0) })
    let own = classEntity.attributes.filter { $0.entityName == classEntity.name && $0.isUnique }.map { Set([$0.name]) }
    let compound = classEntity.ownCompoundUniqueness.map { Set($0.map { classEntity.storedAttributes[Int($0)].name }) }
    let classSets = Set(own + compound)
    guard fileSets != classSets else { return }
    func words(_ sets: Set<Set<String>>) -> String {
      sets.isEmpty
        ? "none" : sets.map { "(" + $0.sorted().joined(separator: ", ") + ")" }.sorted().joined(separator: ", ")
    }
    note(.uniqueness, file: words(fileSets), classes: words(classSets))
  }

  // MARK: - Words

  private mutating func note(_ kind: ModelMismatch.Kind, _ property: String? = nil, file: String, classes: String) {
    mismatches.append(ModelMismatch(kind: kind, entity: entity.name, property: property, file: file, classes: classes))
  }

  static func words(_ type: AttributeType) -> String {
    type == .codable ? "Transformable (.codable)" : type.xcodeName
  }

  static func words(_ kind: RelationshipKind) -> String {
    switch kind {
    case .toOne: "to-one"
    case .toMany: "to-many"
    case .ordered: "ordered to-many"
    }
  }

  static func counts(required: Bool, minimum: Int?, maximum: Int?) -> String {
    var parts: [String] = []
    if required { parts.append("required") }
    if let minimum { parts.append("at least \(minimum)") }
    if let maximum { parts.append("at most \(maximum)") }
    return parts.isEmpty ? "optional, no counts" : parts.joined(separator: ", ")
  }
}

extension PrimitiveValue {
  /// The value in words for a message: numbers and text as written, bytes in hex.
  var sqlText: String {
    switch self {
    case .null: "nil"
    case .integer(let value): String(value)
    case .real(let value): String(value)
    case .text(let value): "\"\(value)\""
    case .blob(let data): "x'" + data.map { String(format: "%02x", $0) }.joined() + "'"
    }
  }
}
