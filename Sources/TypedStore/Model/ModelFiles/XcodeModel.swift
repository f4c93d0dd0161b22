import Foundation

/// One version of a Core Data model drawn in Xcode: a `.xcdatamodel` folder's `contents` file,
/// read as written (docs/apple-models.md). ``ManagedObjectModel/init(contentsOf:)`` turns it
/// into a model; this form keeps what a model has no place for (class names, renaming
/// identifiers, user info, defaults as written, fetch request templates).
///
/// ```swift
/// let file = try XcodeModel(contentsOf: URL(filePath: "Shop.xcdatamodeld"))   // the current version
/// for entity in file.entities { print(entity.name, entity.attributes.map(\.name)) }
/// ```
public struct XcodeModel: Sendable, Equatable {
  /// The version's name: its folder's name without `.xcdatamodel` (`Shop 2`).
  public var name: String
  /// The path of the `contents` file it was read from.
  public var file: String
  /// Xcode's "Model Version Identifier" (`userDefinedModelVersionIdentifier`), when set.
  public var versionIdentifier: String?
  /// The entities, in the file's order.
  public var entities: [Entity]
  /// The fetch request templates (Xcode's "Fetch Requests"): kept as written, never run.
  public var fetchRequestTemplates: [FetchRequestTemplate]
  /// The configurations and the entities each lists: kept as written; a TypedStore store
  /// holds every entity.
  public var configurations: [String: [String]]
  /// What was read and ignored because it does not change what is stored or checked, one
  /// line each (docs/apple-models.md lists what is ignored and why).
  public var ignored: [String]
  /// The composites (Xcode's composite attributes, Core Data's
  /// `NSCompositeAttributeDescription`): named groups of attributes, which an entity's
  /// attribute of type Composite stores as columns of the entity's table.
  public var composites: [Composite] = []

  /// One composite as the file declares it (`<composite name="Address">`).
  public struct Composite: Sendable, Equatable {
    /// The composite's name: the Swift struct generated for it.
    public var name: String
    /// Its elements; an element of type Composite nests another composite.
    public var attributes: [Attribute]
    /// The line of its `<composite>` element.
    public var line: Int
  }

  /// One entity as the file declares it.
  public struct Entity: Sendable, Equatable {
    /// The entity name.
    public var name: String
    /// `representedClassName` as written (`Note`, `Shop.Note`, `.Note`), if any.
    public var representedClassName: String?
    /// The parent entity's name.
    public var parentEntity: String?
    /// Xcode's "Abstract Entity" box.
    public var isAbstract: Bool
    /// The renaming identifier (`elementID`): the entity's name in the version before.
    public var renamingIdentifier: String?
    /// Its own attributes, transient ones included.
    public var attributes: [Attribute]
    /// Its own relationships.
    public var relationships: [Relationship]
    /// Its uniqueness constraints, each a list of property names.
    public var uniquenessConstraints: [[String]]
    /// The user info entries.
    public var userInfo: [String: String]
    /// The line of its `<entity>` element.
    public var line: Int

    /// The class name the entity binds to: the last part of `representedClassName`, or the
    /// entity name when there is none (or it is `NSManagedObject`).
    public var className: String {
      guard let written = representedClassName, !written.isEmpty, written != "NSManagedObject" else { return name }
      return String(written.split(separator: ".").last ?? Substring(name))
    }
  }

  /// One attribute as the file declares it.
  public struct Attribute: Sendable, Equatable {
    /// The attribute name.
    public var name: String
    /// The type, as written (`Integer 64`, `Transformable`); nil for Xcode's *Undefined*.
    public var typeName: String?
    /// How TypedStore stores it; nil for a transient attribute of undefined type.
    public var attributeType: AttributeType?
    /// Whether nil is allowed (`optional="YES"`; absent means required).
    public var isOptional: Bool
    /// Whether it is transient: never stored, a plain `var` of the class.
    public var isTransient: Bool
    /// The default as written (`defaultValueString`, or `defaultDateTimeInterval` for a date).
    public var defaultValue: String?
    /// The minimum as written (`minValueString`): a number's least value.
    public var minimum: String?
    /// The maximum as written (`maxValueString`): a number's greatest value.
    public var maximum: String?
    /// Whether it has an index (`indexed="YES"` or a one-attribute fetch index).
    public var isIndexed: Bool
    /// Whether its value is kept in a deleted object's tombstone (`preserveAfterDeletion`).
    public var isPreservedOnDeletion: Bool
    /// The renaming identifier (`elementID`): the attribute's name in the version before.
    public var renamingIdentifier: String?
    /// For a transformable: the transformer's name, as written.
    public var valueTransformerName: String?
    /// For a transformable: the value's class (`customClassName`), the Swift type generated.
    public var customClassName: String?
    /// Whether Xcode generates a scalar (`Int64`) rather than an `NSNumber`.
    public var usesScalarValueType: Bool
    /// The user info entries.
    public var userInfo: [String: String]
    /// The line of its `<attribute>` element.
    public var line: Int
    /// For an attribute of type Composite, the composite it stores (`composite="Address"`);
    /// its ``attributeType`` is nil.
    public var composite: String? = nil
  }

  /// One relationship as the file declares it.
  public struct Relationship: Sendable, Equatable {
    /// The relationship name.
    public var name: String
    /// The destination entity's name.
    public var destination: String
    /// The destination's relationship that points back.
    public var inverse: String
    /// To-one, to-many or ordered to-many.
    public var kind: RelationshipKind
    /// Whether nil (to-one) or no object (to-many) is allowed.
    public var isOptional: Bool
    /// `minCount` as written (0 when absent).
    public var minCount: Int
    /// `maxCount` as written (0 when absent: no limit).
    public var maxCount: Int
    /// The delete rule.
    public var deleteRule: DeleteRule
    /// The renaming identifier (`elementID`): the relationship's name in the version before.
    public var renamingIdentifier: String?
    /// The user info entries.
    public var userInfo: [String: String]
    /// The line of its `<relationship>` element.
    public var line: Int
  }

  /// A fetch request template of the model, as written.
  public struct FetchRequestTemplate: Sendable, Equatable {
    /// The template's name.
    public var name: String
    /// The entity it fetches.
    public var entity: String
    /// Its predicate in Core Data's format syntax, if any.
    public var predicate: String?

    /// A template named `name` that fetches `entity` with `predicate`.
    public init(name: String, entity: String, predicate: String?) {
      self.name = name
      self.entity = entity
      self.predicate = predicate
    }
  }
}

extension XcodeModel {
  /// Reads the current version of a `.xcdatamodeld` bundle (``XcodeModelBundle``), or a lone
  /// `.xcdatamodel` folder.
  ///
  /// ```swift
  /// let file = try XcodeModel(contentsOf: URL(filePath: "Shop.xcdatamodeld"))
  /// ```
  ///
  /// - Throws: ``ModelFileError`` naming the file (and line) at fault.
  public init(contentsOf url: URL) throws(ModelFileError) {
    if url.pathExtension == "xcdatamodeld" {
      self = try XcodeModelBundle(contentsOf: url).currentModel()
    } else {
      try self.init(versionAt: url)
    }
  }

  /// Reads one `.xcdatamodel` folder.
  init(versionAt url: URL) throws(ModelFileError) {
    let contents = url.appendingPathComponent("contents")
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
      throw ModelFileError(file: url.path, reason: .notAModel)
    }
    guard let data = manager.contents(atPath: contents.path) else {
      let legacy = ["elements", "layout"].contains { manager.fileExists(atPath: url.appendingPathComponent($0).path) }
      throw ModelFileError(file: url.path, reason: legacy ? .preXcode4Format : .notAModel)
    }
    let root: XMLNode
    do { root = try XMLReader.read(data) } catch {
      throw ModelFileError(file: contents.path, line: error.line, reason: .malformedXML(error.message))
    }
    var reader = XcodeModelReader(file: contents.path)
    self = try reader.model(root, name: url.deletingPathExtension().lastPathComponent)
  }
}

extension XcodeModel {
  /// `entity`'s attributes with each composite attribute replaced by its elements, as the
  /// store keeps them: `address` storing `Address` becomes `address.street`, `address.city`
  /// and so on (nested composites too), each preserved on deletion when the composite is, and
  /// renamed from the composite's renaming identifier when it has one.
  func flatAttributes(of entity: Entity) -> [Attribute] {
    let byName = Dictionary(composites.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    func flatten(_ attributes: [Attribute], depth: Int) -> [Attribute] {
      attributes.flatMap { attribute -> [Attribute] in
        guard let name = attribute.composite else { return [attribute] }
        // The reader refuses a composite that is missing or holds itself; one edited in
        // afterwards stops here.
        guard let composite = byName[name], depth < 16 else { return [] }
        return flatten(composite.attributes, depth: depth + 1).map { element in
          var element = element
          let original = element.renamingIdentifier ?? element.name
          element.renamingIdentifier =
            attribute.renamingIdentifier.map { "\($0).\(original)" }
            ?? element.renamingIdentifier.map { "\(attribute.name).\($0)" }
          element.name = "\(attribute.name).\(element.name)"
          element.isPreservedOnDeletion = element.isPreservedOnDeletion || attribute.isPreservedOnDeletion
          return element
        }
      }
    }
    return flatten(entity.attributes, depth: 0)
  }
}
