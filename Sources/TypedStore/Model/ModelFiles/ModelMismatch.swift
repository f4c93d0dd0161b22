/// One difference between a model file and the classes bound to it, found by
/// ``ManagedObjectModel/init(contentsOf:classes:)``; every difference is reported at once in
/// ``ModelFileError/Reason/mismatches(_:)``.
///
/// ```swift
/// catch let error as ModelFileError {
///   if case .mismatches(let mismatches) = error.reason {
///     for mismatch in mismatches { print(mismatch) }   // Note.title: type: String in the file, Integer 64 in the class
///   }
/// }
/// ```
public struct ModelMismatch: Sendable, Equatable, Codable, CustomStringConvertible {
  /// What differs.
  public enum Kind: String, Sendable, Equatable, Codable, CaseIterable {
    /// An entity of the file has no class among those given.
    case missingEntity
    /// A class given is no entity of the file.
    case extraEntity
    /// The class bound to an entity (by `representedClassName`) names its entity otherwise.
    case entityName
    /// The parent entity differs from the class's superclass entity.
    case parentEntity
    /// A property of the file is not declared by the class.
    case missingProperty
    /// A property of the class is not in the file.
    case extraProperty
    /// An attribute's type differs.
    case attributeType
    /// One side allows nil and the other does not.
    case optionality
    /// The value a new object gets differs.
    case defaultValue
    /// The class stores the attribute under another column name (`persistentName:`).
    case storageName
    /// The uniqueness constraints differ.
    case uniqueness
    /// One side indexes the attribute and the other does not.
    case indexed
    /// The file's attribute is transient and the class stores it, or the other way round.
    case transient
    /// The file's attribute is transformable and the class's is not `.codable`, or the
    /// other way round.
    case transformer
    /// One side keeps the value in tombstones and the other does not.
    case preservedOnDeletion
    /// The minimum and maximum differ from `@Attribute(bounds:)`.
    case bounds
    /// A relationship's destination differs.
    case destination
    /// A relationship's inverse differs.
    case inverse
    /// A relationship's delete rule differs.
    case deleteRule
    /// One side is to-one and the other to-many.
    case cardinality
    /// Required (to-one) or the minimum and maximum counts (to-many) differ.
    case counts
    /// One side is ordered and the other is not.
    case ordered
    /// The renaming identifier (`elementID`) differs from `originalName:` (or
    /// `originalEntityName`): a migration would lose the values the file says to keep.
    case renamingIdentifier
  }

  /// What differs.
  public let kind: Kind
  /// The file's entity (or the class's, for an extra entity).
  public let entity: String
  /// The property, when the difference is one property's.
  public let property: String?
  /// The file's side, in words.
  public let file: String
  /// The class's side, in words.
  public let classes: String

  /// A difference of `kind` at `entity` (and `property`), with each side in words.
  public init(kind: Kind, entity: String, property: String? = nil, file: String, classes: String) {
    self.kind = kind
    self.entity = entity
    self.property = property
    self.file = file
    self.classes = classes
  }

  /// `Note.title: attributeType: String in the file, Integer 64 in the class`.
  public var description: String {
    let place = property.map { "\(entity).\($0)" } ?? entity
    return "\(place): \(kind.rawValue): \(file) in the file, \(classes) in the class"
  }
}
