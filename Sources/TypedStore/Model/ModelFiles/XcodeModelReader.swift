import Foundation

/// Reads a `contents` file's elements into an ``XcodeModel``: every element and attribute
/// Xcode writes since Xcode 4 is honoured, ignored (where that changes nothing stored or
/// checked; noted in `ignored`) or refused by name with its line.
struct XcodeModelReader {
  let file: String
  private var ignored: [String] = []

  init(file: String) { self.file = file }

  private static let modelAttributes: Set<String> = [
    "type", "documentVersion", "lastSavedToolsVersion", "systemVersion", "minimumToolsVersion", "sourceLanguage",
    "userDefinedModelVersionIdentifier", "iOSVersion", "macOSVersion",
  ]
  private static let entityAttributes: Set<String> = [
    "name", "representedClassName", "parentEntity", "isAbstract", "elementID", "versionHashModifier", "syncable",
    "codeGenerationType", "renamingIdentifier",
  ]
  private static let attributeAttributes: Set<String> = [
    "name", "optional", "attributeType", "defaultValueString", "defaultDateTimeInterval", "usesScalarValueType",
    "transient", "indexed", "minValueString", "maxValueString", "preserveAfterDeletion",
    "allowsExternalBinaryDataStorage", "allowsCloudEncryption", "valueTransformerName", "customClassName", "derived",
    "derivationExpression", "elementID", "versionHashModifier", "syncable", "spotlightIndexingEnabled",
    "storedInTruthFile", "regularExpressionString", "composite", "renamingIdentifier",
  ]
  private static let relationshipAttributes: Set<String> = [
    "name", "optional", "minCount", "maxCount", "toMany", "ordered", "deletionRule", "destinationEntity",
    "inverseName", "inverseEntity", "elementID", "syncable", "transient", "versionHashModifier",
    "spotlightIndexingEnabled", "storedInTruthFile", "renamingIdentifier",
  ]

  // MARK: - Model

  mutating func model(_ root: XMLNode, name: String) throws(ModelFileError) -> XcodeModel {
    guard root.name == "model" else {
      throw error(root, reason: .malformedXML("the root element is <\(root.name)>, not <model>"))
    }
    noteUnknownAttributes(of: root, known: Self.modelAttributes, in: "the model")
    var model = XcodeModel(
      name: name, file: file, versionIdentifier: root.attributes["userDefinedModelVersionIdentifier"],
      entities: [], fetchRequestTemplates: [], configurations: [:], ignored: [])
    for child in root.children {
      switch child.name {
      case "entity": model.entities.append(try entity(child))
      case "configuration":
        let configuration = try required("name", of: child)
        model.configurations[configuration] = child.children(named: "memberEntity").compactMap { $0.attributes["name"] }
        ignored.append(
          "configuration \(configuration) (line \(child.line)): a TypedStore store holds every entity")
      case "fetchRequest":
        model.fetchRequestTemplates.append(
          XcodeModel.FetchRequestTemplate(
            name: try required("name", of: child), entity: try required("entity", of: child),
            predicate: child.attributes["predicateString"]))
      case "elements": break  // the diagram's layout
      case "composite": model.composites.append(try composite(child))
      default: throw error(child, reason: .unsupported("the element <\(child.name)>"))
      }
    }
    model.ignored = ignored
    try checkReferences(model)
    return model
  }

  // MARK: - Composites

  /// A `<composite>`: its elements are attributes (nested composites included), stored in
  /// the columns of each entity whose attribute stores it.
  private mutating func composite(_ node: XMLNode) throws(ModelFileError) -> XcodeModel.Composite {
    let name = try required("name", of: node)
    var composite = XcodeModel.Composite(name: name, attributes: [], line: node.line)
    for child in node.children {
      switch child.name {
      case "attribute":
        let element = try attribute(child, entity: name)
        if element.isTransient {
          throw error(
            child, entity: name, element: "attribute \(element.name)",
            reason: .unsupported("a transient element of a composite; declare it on the entity"))
        }
        try checkElement(element, of: name, node: child)
        composite.attributes.append(element)
        composite.attributes[composite.attributes.count - 1].isIndexed = false
      case "userInfo": break
      default:
        throw error(
          child, entity: name, element: "composite \(name)", reason: .unsupported("the element <\(child.name)>"))
      }
    }
    guard !composite.attributes.isEmpty else {
      throw error(
        node, entity: name, element: "composite \(name)", reason: .invalidValue("a composite has no elements"))
    }
    return composite
  }

  /// What an element may not have, since a composite's Swift struct cannot state it for one
  /// element: its own bounds, renaming or preservation (set those on the composite attribute).
  /// An index is ignored.
  private mutating func checkElement(_ element: XcodeModel.Attribute, of composite: String, node: XMLNode)
    throws(ModelFileError)
  {
    let refused: [(Bool, String)] = [
      (
        element.attributeType == .codable,
        "a Transformable element of a composite; a composite's elements are stored as their own types"
      ),
      (element.minimum != nil || element.maximum != nil, "minimum and maximum on an element of a composite"),
      (
        element.renamingIdentifier.map { $0 != element.name } ?? false,
        "a renaming identifier on an element of a composite; rename the composite attribute"
      ),
      (
        element.isPreservedOnDeletion,
        "preserveAfterDeletion on an element of a composite; set it on the composite attribute"
      ),
    ]
    for (present, what) in refused where present {
      throw error(node, entity: composite, element: "attribute \(element.name)", reason: .unsupported(what))
    }
    if element.isIndexed {
      ignored.append("\(composite).\(element.name): indexed (an element of a composite has no index of its own)")
    }
  }

  // MARK: - Entities

  private mutating func entity(_ node: XMLNode) throws(ModelFileError) -> XcodeModel.Entity {
    let name = try required("name", of: node)
    noteUnknownAttributes(of: node, known: Self.entityAttributes, in: "entity \(name)")
    if let modifier = node.attributes["versionHashModifier"] {
      ignored.append(
        "entity \(name): versionHashModifier \"\(modifier)\" (TypedStore's version hash is the stored shape's)")
    }
    var entity = XcodeModel.Entity(
      name: name, representedClassName: node.attributes["representedClassName"],
      parentEntity: node.attributes["parentEntity"], isAbstract: flag("isAbstract", of: node),
      renamingIdentifier: node.attributes["elementID"] ?? node.attributes["renamingIdentifier"], attributes: [],
      relationships: [], uniquenessConstraints: [], userInfo: try userInfo(node), line: node.line)
    if entity.isAbstract {
      ignored.append("entity \(name): isAbstract (TypedStore does not stop objects of an abstract entity)")
    }
    var indexes: [(names: [String], line: Int)] = []
    for child in node.children {
      switch child.name {
      case "attribute": entity.attributes.append(try attribute(child, entity: name))
      case "relationship": entity.relationships.append(try relationship(child, entity: name))
      case "fetchIndex":
        if let names = try fetchIndex(child, entity: name) { indexes.append((names, child.line)) }
      case "compoundIndexes":
        for index in child.children(named: "compoundIndex") {
          indexes.append((index.children(named: "index").compactMap { $0.attributes["value"] }, index.line))
        }
      case "uniquenessConstraints":
        for constraint in child.children(named: "uniquenessConstraint") {
          entity.uniquenessConstraints.append(
            constraint.children(named: "constraint").compactMap { $0.attributes["value"] })
        }
      case "userInfo": break
      case "fetchedProperty":
        throw error(
          child, entity: name, element: "fetchedProperty \(child.attributes["name"] ?? "")",
          reason: .unsupported("fetched properties; fetch with a FetchRequest instead"))
      default: throw error(child, entity: name, reason: .unsupported("the element <\(child.name)>"))
      }
    }
    try applyIndexes(indexes, to: &entity)
    return entity
  }

  /// A fetch index's attribute names; nil for the forms TypedStore does not make (an index on
  /// an expression, an R-tree index), which are noted as ignored: an index changes how fast a
  /// fetch is, never what it finds.
  private mutating func fetchIndex(_ node: XMLNode, entity: String) throws(ModelFileError) -> [String]? {
    let indexName = node.attributes["name"] ?? ""
    var names: [String] = []
    for part in node.children(named: "fetchIndexElement") {
      if part.attributes["expression"] != nil || (part.attributes["type"].map { $0 != "Binary" } ?? false) {
        ignored.append(
          "entity \(entity): fetchIndex \(indexName) (line \(node.line)): an index on an expression or an R-tree "
            + "index is not made; fetches find the same objects")
        return nil
      }
      names.append(try required("property", of: part))
    }
    return names
  }

  /// One-property indexes mark their attribute; an index on several properties is checked and
  /// noted as ignored (TypedStore makes one-property indexes only; fetches find the same
  /// objects, perhaps more slowly).
  private mutating func applyIndexes(_ indexes: [(names: [String], line: Int)], to entity: inout XcodeModel.Entity)
    throws(ModelFileError)
  {
    for (names, line) in indexes {
      let known = Set(entity.attributes.map(\.name) + entity.relationships.map(\.name))
      if let unknown = names.first(where: { !known.contains($0) }) {
        // A subentity's index may name an inherited property, which its root's table indexes
        // as the parent declares; its parent is read later, so it is noted, not checked.
        guard entity.parentEntity != nil else {
          throw ModelFileError(
            file: file, line: line, entity: entity.name, element: "index (\(names.joined(separator: ", ")))",
            reason: .danglingReference("the index names \(unknown), which is no property of \(entity.name)"))
        }
        ignored.append(
          "entity \(entity.name): index (\(names.joined(separator: ", "))) (line \(line)): an index on an inherited "
            + "property is not made; fetches find the same objects")
        continue
      }
      guard names.count == 1, let name = names.first else {
        ignored.append(
          "entity \(entity.name): index (\(names.joined(separator: ", "))) (line \(line)): an index on several "
            + "properties is not made; fetches find the same objects")
        continue
      }
      if let index = entity.attributes.firstIndex(where: { $0.name == name }) {
        entity.attributes[index].isIndexed = true
      } else if !entity.relationships.contains(where: { $0.name == name && $0.kind == .toOne }) {
        throw ModelFileError(
          file: file, line: line, entity: entity.name, element: "index (\(name))",
          reason: .danglingReference("the index names \(name), which is no attribute or to-one of \(entity.name)"))
      }  // a to-one's key column is always indexed
    }
  }

  // MARK: - Properties

  private mutating func attribute(_ node: XMLNode, entity: String) throws(ModelFileError) -> XcodeModel.Attribute {
    let name = try required("name", of: node)
    let element = "attribute \(name)"
    noteUnknownAttributes(of: node, known: Self.attributeAttributes, in: "\(entity).\(name)")
    try checkChildren(of: node, entity: entity, element: element)
    for (key, what) in [
      ("derived", "a derived attribute; compute it in Swift, or store it and set it in willSave()"),
      ("regularExpressionString", "a regular expression check; use @Attribute(validate:)"),
    ] where node.attributes[key] != nil && (key != "derived" || flag(key, of: node)) {
      throw error(node, entity: entity, element: element, reason: .unsupported(what))
    }
    let typeName = node.attributes["attributeType"]
    let isTransient = flag("transient", of: node)
    if typeName == "Composite" { return try compositeAttribute(node, name: name, entity: entity) }
    let type = try attributeType(typeName, node: node, entity: entity, element: element, isTransient: isTransient)
    var attribute = XcodeModel.Attribute(
      name: name, typeName: typeName, attributeType: type, isOptional: flag("optional", of: node),
      isTransient: isTransient,
      defaultValue: type == .date ? node.attributes["defaultDateTimeInterval"] : node.attributes["defaultValueString"],
      minimum: node.attributes["minValueString"], maximum: node.attributes["maxValueString"],
      isIndexed: flag("indexed", of: node), isPreservedOnDeletion: flag("preserveAfterDeletion", of: node),
      renamingIdentifier: node.attributes["elementID"] ?? node.attributes["renamingIdentifier"],
      valueTransformerName: node.attributes["valueTransformerName"],
      customClassName: node.attributes["customClassName"], usesScalarValueType: flag("usesScalarValueType", of: node),
      userInfo: try userInfo(node), line: node.line)
    if (attribute.minimum != nil || attribute.maximum != nil) && !(type?.hasNumericBounds ?? false) {
      throw error(
        node, entity: entity, element: element,
        reason: .unsupported(
          "minimum and maximum on a \(typeName ?? "Undefined") attribute (only numbers); use @Attribute(validate:)"))
    }
    if type == .codable, let transformer = attribute.valueTransformerName,
      !["NSSecureUnarchiveFromData", "NSSecureUnarchiveFromDataTransformer"].contains(transformer)
    {
      ignored.append("\(entity).\(name): valueTransformerName \(transformer) (TypedStore stores the value as JSON)")
    }
    if flag("allowsExternalBinaryDataStorage", of: node) {
      ignored.append("\(entity).\(name): allowsExternalBinaryDataStorage (the bytes are stored in the row)")
    }
    if isTransient { attribute.isIndexed = false }
    return attribute
  }

  /// An attribute of type Composite: the composite it stores, whose elements are its columns.
  private mutating func compositeAttribute(_ node: XMLNode, name: String, entity: String) throws(ModelFileError)
    -> XcodeModel.Attribute
  {
    let element = "attribute \(name)"
    guard let composite = node.attributes["composite"], !composite.isEmpty else {
      throw error(node, entity: entity, element: element, reason: .danglingReference("it names no composite"))
    }
    if flag("transient", of: node) {
      throw error(node, entity: entity, element: element, reason: .unsupported("a transient composite attribute"))
    }
    for key in ["defaultValueString", "minValueString", "maxValueString", "valueTransformerName"]
    where node.attributes[key] != nil {
      throw error(
        node, entity: entity, element: element,
        reason: .unsupported("\(key) on a composite attribute; give its elements defaults and bounds"))
    }
    if flag("optional", of: node) {
      ignored.append(
        "\(entity).\(name): optional (a composite is stored as its elements; each element's own optional is kept)")
    }
    return XcodeModel.Attribute(
      name: name, typeName: "Composite", attributeType: nil, isOptional: flag("optional", of: node),
      isTransient: false, defaultValue: nil, minimum: nil, maximum: nil, isIndexed: false,
      isPreservedOnDeletion: flag("preserveAfterDeletion", of: node),
      renamingIdentifier: node.attributes["elementID"] ?? node.attributes["renamingIdentifier"],
      valueTransformerName: nil, customClassName: nil, usesScalarValueType: false, userInfo: try userInfo(node),
      line: node.line, composite: composite)
  }

  private func attributeType(
    _ typeName: String?, node: XMLNode, entity: String, element: String, isTransient: Bool
  ) throws(ModelFileError) -> AttributeType? {
    if let typeName, let type = AttributeType(xcodeName: typeName) { return type }
    switch typeName {
    case nil, "Undefined":
      guard isTransient else {
        throw error(
          node, entity: entity, element: element,
          reason: .unsupported("an attribute of Undefined type that is not transient; give it a type"))
      }
      return nil
    case "Object ID":
      throw error(
        node, entity: entity, element: element,
        reason: .unsupported("an Object ID attribute; store a ManagedID's uriRepresentation as a URI"))
    case let other?:
      throw error(node, entity: entity, element: element, reason: .unknownAttributeType(other))
    }
  }

  private mutating func relationship(_ node: XMLNode, entity: String) throws(ModelFileError)
    -> XcodeModel.Relationship
  {
    let name = try required("name", of: node)
    let element = "relationship \(name)"
    noteUnknownAttributes(of: node, known: Self.relationshipAttributes, in: "\(entity).\(name)")
    try checkChildren(of: node, entity: entity, element: element)
    if flag("transient", of: node) {
      throw error(node, entity: entity, element: element, reason: .unsupported("a transient relationship"))
    }
    guard let destination = node.attributes["destinationEntity"] else {
      throw error(
        node, entity: entity, element: element, reason: .danglingReference("the relationship has no destination"))
    }
    guard let inverse = node.attributes["inverseName"] else {
      throw error(
        node, entity: entity, element: element,
        reason: .unsupported("a relationship without an inverse; TypedStore keeps both sides, give it one"))
    }
    if let inverseEntity = node.attributes["inverseEntity"], inverseEntity != destination {
      throw error(
        node, entity: entity, element: element,
        reason: .danglingReference("its inverse is on \(inverseEntity), not on its destination \(destination)"))
    }
    let toMany = flag("toMany", of: node)
    return XcodeModel.Relationship(
      name: name, destination: destination, inverse: inverse,
      kind: toMany ? (flag("ordered", of: node) ? .ordered : .toMany) : .toOne, isOptional: flag("optional", of: node),
      minCount: try count("minCount", of: node, entity: entity, element: element),
      maxCount: try count("maxCount", of: node, entity: entity, element: element),
      deleteRule: try deleteRule(node, entity: entity, element: element),
      renamingIdentifier: node.attributes["elementID"] ?? node.attributes["renamingIdentifier"],
      userInfo: try userInfo(node), line: node.line)
  }

  private func deleteRule(_ node: XMLNode, entity: String, element: String) throws(ModelFileError) -> DeleteRule {
    switch node.attributes["deletionRule"] {
    case nil, "Nullify": return .nullify
    case "Cascade": return .cascade
    case "Deny": return .deny
    case "No Action":
      throw error(
        node, entity: entity, element: element,
        reason: .unsupported("the No Action delete rule (it leaves links to a deleted object); use Nullify"))
    case let other?:
      throw error(node, entity: entity, element: element, reason: .invalidValue("unknown delete rule \"\(other)\""))
    }
  }

  private func count(_ key: String, of node: XMLNode, entity: String, element: String) throws(ModelFileError) -> Int {
    guard let text = node.attributes[key] else { return 0 }
    guard let value = Int(text), value >= 0 else {
      throw error(node, entity: entity, element: element, reason: .invalidValue("\(key) \"\(text)\" is not a count"))
    }
    return value
  }

  // MARK: - References

  /// Parents, destinations, inverses and constrained names that name nothing.
  private func checkReferences(_ model: XcodeModel) throws(ModelFileError) {
    var byName: [String: XcodeModel.Entity] = [:]
    for entity in model.entities {
      guard byName.updateValue(entity, forKey: entity.name) == nil else {
        throw ModelFileError(
          file: file, line: entity.line, entity: entity.name,
          reason: .invalidValue("two entities are named \(entity.name)"))
      }
    }
    func properties(of name: String) -> [String] {
      guard let entity = byName[name] else { return [] }
      return (entity.parentEntity.map(properties) ?? []) + entity.attributes.map(\.name)
        + entity.relationships.map(\.name)
    }
    for entity in model.entities {
      if let parent = entity.parentEntity, byName[parent] == nil {
        throw ModelFileError(
          file: file, line: entity.line, entity: entity.name,
          reason: .danglingReference("its parent entity \(parent) is not in the model"))
      }
      var seen: Set<String> = [entity.name]
      var ancestor = entity.parentEntity
      while let name = ancestor {
        guard seen.insert(name).inserted else {
          throw ModelFileError(
            file: file, line: entity.line, entity: entity.name,
            reason: .danglingReference("its parent entities form a cycle through \(name)"))
        }
        ancestor = byName[name]?.parentEntity
      }
    }
    try checkComposites(model)
    for entity in model.entities {
      for relationship in entity.relationships {
        guard let destination = byName[relationship.destination] else {
          throw ModelFileError(
            file: file, line: relationship.line, entity: entity.name, element: "relationship \(relationship.name)",
            reason: .danglingReference("its destination \(relationship.destination) is not in the model"))
        }
        try checkInverse(of: relationship, in: entity, destination: destination, byName: byName)
      }
      for name in entity.uniquenessConstraints.joined() where !properties(of: entity.name).contains(name) {
        throw ModelFileError(
          file: file, line: entity.line, entity: entity.name, element: "uniquenessConstraint",
          reason: .danglingReference("the constraint names \(name), which is no property of \(entity.name)"))
      }
    }
  }

  /// Composites have distinct names, and each composite attribute (of an entity or of a
  /// composite) names one, with no composite holding itself.
  private func checkComposites(_ model: XcodeModel) throws(ModelFileError) {
    var byName: [String: XcodeModel.Composite] = [:]
    let classNames = Set(model.entities.map(\.className))
    for composite in model.composites {
      guard byName.updateValue(composite, forKey: composite.name) == nil, !classNames.contains(composite.name) else {
        throw ModelFileError(
          file: file, line: composite.line, entity: composite.name,
          reason: .invalidValue("two composites, or a composite and an entity's class, are named \(composite.name)"))
      }
    }
    var checked: Set<String> = []  // composites whose nesting was checked already
    func check(_ attributes: [XcodeModel.Attribute], in holder: String, through path: [String])
      throws(ModelFileError)
    {
      for attribute in attributes {
        guard let name = attribute.composite, !checked.contains(name) else { continue }
        let fail = { (reason: ModelFileError.Reason) in
          ModelFileError(
            file: file, line: attribute.line, entity: holder, element: "attribute \(attribute.name)", reason: reason)
        }
        guard let composite = byName[name] else {
          throw fail(.danglingReference("its composite \(name) is not in the model"))
        }
        guard !path.contains(name) else {
          throw fail(.danglingReference("the composite \(name) holds itself"))
        }
        try check(composite.attributes, in: name, through: path + [name])
        checked.insert(name)
      }
    }
    for entity in model.entities { try check(entity.attributes, in: entity.name, through: []) }
    for composite in model.composites { try check(composite.attributes, in: composite.name, through: [composite.name]) }
  }

  /// The inverse exists on the destination (or an ancestor) and names this relationship back.
  private func checkInverse(
    of relationship: XcodeModel.Relationship, in entity: XcodeModel.Entity, destination: XcodeModel.Entity,
    byName: [String: XcodeModel.Entity]
  ) throws(ModelFileError) {
    func fail(_ reason: ModelFileError.Reason) -> ModelFileError {
      ModelFileError(
        file: file, line: relationship.line, entity: entity.name, element: "relationship \(relationship.name)",
        reason: reason)
    }
    var holder: XcodeModel.Entity? = destination
    var inverse: XcodeModel.Relationship?
    while let current = holder, inverse == nil {
      inverse = current.relationships.first { $0.name == relationship.inverse }
      holder = current.parentEntity.flatMap { byName[$0] }
    }
    guard let inverse else {
      throw fail(
        .danglingReference("its inverse \(relationship.inverse) is not a relationship of \(relationship.destination)"))
    }
    if inverse.destination == entity.name && inverse.inverse == relationship.name {
      if relationship.inverse == relationship.name && relationship.destination == entity.name
        && relationship.kind != .toMany
      {
        throw fail(
          .unsupported(
            "a to-one or ordered relationship that is its own inverse; TypedStore keeps unordered to-many ones only"))
      }
      return
    }
    var ancestor: String? = entity.parentEntity
    while let name = ancestor {
      if inverse.destination == name && inverse.inverse == relationship.name { return }
      ancestor = byName[name]?.parentEntity
    }
    throw fail(
      .danglingReference(
        "its inverse \(relationship.destination).\(inverse.name) points at \(inverse.destination).\(inverse.inverse), "
          + "not back at it"))
  }

  // MARK: - Helpers

  private func flag(_ key: String, of node: XMLNode) -> Bool { node.attributes[key] == "YES" }

  private func required(_ key: String, of node: XMLNode) throws(ModelFileError) -> String {
    guard let value = node.attributes[key], !value.isEmpty else {
      throw error(node, reason: .invalidValue("<\(node.name)> has no \(key)"))
    }
    return value
  }

  private func userInfo(_ node: XMLNode) throws(ModelFileError) -> [String: String] {
    var entries: [String: String] = [:]
    for info in node.children(named: "userInfo") {
      for entry in info.children(named: "entry") {
        entries[try required("key", of: entry)] = entry.attributes["value"] ?? ""
      }
    }
    return entries
  }

  private func checkChildren(of node: XMLNode, entity: String, element: String) throws(ModelFileError) {
    for child in node.children where child.name != "userInfo" {
      throw error(child, entity: entity, element: element, reason: .unsupported("the element <\(child.name)>"))
    }
  }

  private mutating func noteUnknownAttributes(of node: XMLNode, known: Set<String>, in place: String) {
    for key in node.attributeOrder where !known.contains(key) {
      ignored.append("\(place): unknown XML attribute \(key)=\"\(node.attributes[key] ?? "")\" (line \(node.line))")
    }
  }

  private func error(
    _ node: XMLNode, entity: String? = nil, element: String? = nil, reason: ModelFileError.Reason
  ) -> ModelFileError {
    ModelFileError(file: file, line: node.line, entity: entity, element: element, reason: reason)
  }
}

extension AttributeType {
  /// Xcode's name of each type (`attributeType` in a `contents` file).
  private static let xcodeNames: [(name: String, type: AttributeType)] = [
    ("Integer 16", .integer16), ("Integer 32", .integer32), ("Integer 64", .integer64), ("Decimal", .decimal),
    ("Double", .double), ("Float", .float), ("String", .string), ("Boolean", .boolean), ("Date", .date),
    ("Binary", .binaryData), ("UUID", .uuid), ("URI", .uri), ("Transformable", .codable),
  ]

  /// The type Xcode names `name`, or nil for a name that is no stored type.
  init?(xcodeName name: String) {
    guard let type = Self.xcodeNames.first(where: { $0.name == name })?.type else { return nil }
    self = type
  }

  /// Xcode's name of the type (`Integer 64`, `Transformable`).
  var xcodeName: String { Self.xcodeNames.first { $0.type == self }?.name ?? rawValue }

  /// Whether Core Data's minimum and maximum are numeric bounds for this type (for strings
  /// and data they are lengths, which `@Attribute(bounds:)` does not express).
  var hasNumericBounds: Bool {
    switch self {
    case .integer16, .integer32, .integer64, .double, .float, .decimal: true
    default: false
    }
  }
}
