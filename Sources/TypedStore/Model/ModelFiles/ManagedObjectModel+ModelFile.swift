import Foundation

// Models read from Xcode model files (docs/apple-models.md): without classes, for tools, or
// bound to the application's classes and checked against them.

extension ManagedObjectModel {
  /// The model a `.xcdatamodeld` bundle's current version (or a lone `.xcdatamodel`)
  /// describes, without classes: for tools that check, compare or export it, and for
  /// opening a store without the application's code (as ``init(schema:json:)``).
  ///
  /// ```swift
  /// let model = try ManagedObjectModel(contentsOf: URL(filePath: "Shop.xcdatamodeld"))
  /// print(model.entities.map(\.name))
  /// ```
  ///
  /// - Throws: ``ModelFileError`` naming the file, line, entity and element at fault.
  public convenience init(contentsOf url: URL) throws {
    try self.init(xcodeModel: XcodeModel(contentsOf: url))
  }

  /// The model of `file`, without classes.
  ///
  /// ```swift
  /// let model = try ManagedObjectModel(xcodeModel: bundle.model(named: "Shop 2"))
  /// ```
  ///
  /// - Throws: ``ModelFileError`` for a file whose model TypedStore cannot store.
  public convenience init(xcodeModel file: XcodeModel) throws {
    try self.init(xcodeModel: file, storageLike: nil)
  }

  /// The model of `file`, without classes, whose attributes are stored raw where `model`'s
  /// attribute of the same entity, name and type is (a Swift enum: a model file cannot say
  /// so), as an earlier version of a plan whose last version `model` is.
  convenience init(xcodeModel file: XcodeModel, storageLike model: ManagedObjectModel?) throws {
    var schema = try file.schema()
    if let model {
      for (index, entity) in schema.entities.enumerated() {
        guard let later = model.entity(named: entity.name) else { continue }
        for (slot, attribute) in entity.attributes.enumerated() {
          if let match = later.attribute(named: attribute.name), match.storage == .raw,
            match.attributeType == attribute.type
          {
            schema.entities[index].attributes[slot].storage = .raw
          }
        }
      }
    }
    let model: ManagedObjectModel
    do {
      model = try ManagedObjectModel(schema: schema, json: Self.canonicalJSON(schema), details: try file.details())
    } catch let error as ModelError {
      let entity = file.entities.first { $0.name == error.entity }
      throw ModelFileError(
        file: file.file, line: entity?.line, entity: error.entity.isEmpty ? nil : error.entity,
        reason: .invalidModel(error))
    }
    self.init(entities: model.entities, schema: model.schema, json: model.jsonRepresentation)
  }

  /// The model of `classes`, checked against the current version of a model file: each
  /// entity of the file is bound to the class its `representedClassName` (or name) names,
  /// and every difference between the two is reported at once. The model is the classes'
  /// (their property order, their version hash).
  ///
  /// ```swift
  /// let model = try ManagedObjectModel(
  ///   contentsOf: URL(filePath: "Shop.xcdatamodeld"), classes: [Customer.self, Order.self])
  /// let container = try PersistentContainer(name: "Shop", model: model, storeURL: storeURL)
  /// ```
  ///
  /// - Throws: ``ModelFileError`` for a file that cannot be read, or with
  ///   ``ModelFileError/Reason/mismatches(_:)`` listing every difference; `ModelError` for
  ///   classes that are no valid model.
  public convenience init(contentsOf url: URL, classes: [ManagedObject.Type]) throws {
    try self.init(xcodeModel: XcodeModel(contentsOf: url), classes: classes)
  }

  /// The model of `classes`, checked against `file` (see ``init(contentsOf:classes:)``).
  ///
  /// ```swift
  /// let model = try ManagedObjectModel(xcodeModel: file, classes: [Customer.self, Order.self])
  /// ```
  ///
  /// - Throws: ``ModelFileError`` with every difference; `ModelError` for invalid classes.
  public convenience init(xcodeModel file: XcodeModel, classes: [ManagedObject.Type]) throws {
    let model = try ManagedObjectModel(classes)
    let mismatches = try file.mismatches(against: model)
    guard mismatches.isEmpty else {
      throw ModelFileError(file: file.file, reason: .mismatches(mismatches))
    }
    self.init(entities: model.entities, schema: model.schema, json: model.jsonRepresentation)
  }

  /// `schema` as a store keeps it: JSON with sorted keys.
  static func canonicalJSON(_ schema: ModelSchema) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try encoder.encode(schema)
  }
}

extension XcodeModel {
  /// The defaults and renaming identifiers of the file's entities and properties.
  func details() throws(ModelFileError) -> SchemaDetails {
    var details = SchemaDetails()
    for entity in entities {
      if let original = entity.renamingIdentifier, original != entity.name {
        details.originalEntityNames[entity.name] = original
      }
      for attribute in flatAttributes(of: entity) where !attribute.isTransient {
        if let value = try attribute.storedDefault(entity: entity.name, file: file) {
          details.defaults[entity.name, default: [:]][attribute.name] = value
        }
        if let original = attribute.renamingIdentifier, original != attribute.name {
          details.originalNames[entity.name, default: [:]][attribute.name] = original
        }
      }
      for relationship in entity.relationships {
        if let original = relationship.renamingIdentifier, original != relationship.name {
          details.originalNames[entity.name, default: [:]][relationship.name] = original
        }
      }
    }
    return details
  }

  /// Every difference between this file and `model`'s classes (see ``ModelMismatch``).
  ///
  /// ```swift
  /// let mismatches = try file.mismatches(against: ManagedObjectModel(Customer.self, Order.self))
  /// ```
  ///
  /// - Throws: ``ModelFileError`` for a default or bound the file cannot state.
  public func mismatches(against model: ManagedObjectModel) throws(ModelFileError) -> [ModelMismatch] {
    var mismatches: [ModelMismatch] = []
    var bound = Set<String>()
    let classEntities = model.entities.filter(\.hasClass)
    for entity in entities {
      guard
        let classEntity = classEntities.first(where: { String(describing: $0.objectType) == entity.className })
          ?? model.entity(named: entity.name).flatMap({ $0.hasClass ? $0 : nil })
      else {
        mismatches.append(
          ModelMismatch(
            kind: .missingEntity, entity: entity.name, file: "entity of class \(entity.className)",
            classes: "no class"))
        continue
      }
      bound.insert(classEntity.name)
      var comparison = EntityComparison(file: self, entity: entity, classEntity: classEntity)
      try comparison.compare()
      mismatches += comparison.mismatches
    }
    for classEntity in classEntities where !bound.contains(classEntity.name) {
      mismatches.append(
        ModelMismatch(
          kind: .extraEntity, entity: classEntity.name, file: "no entity",
          classes: "class \(String(describing: classEntity.objectType))"))
    }
    return mismatches
  }
}
