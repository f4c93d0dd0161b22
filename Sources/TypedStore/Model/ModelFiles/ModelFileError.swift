/// A problem with an Xcode model file (`.xcdatamodeld` or `.xcdatamodel`), found while reading
/// it or binding it to classes: the file, the line where one applies, the entity and the
/// element at fault.
///
/// ```swift
/// do {
///   _ = try ManagedObjectModel(contentsOf: URL(filePath: "Model.xcdatamodeld"))
/// } catch let error as ModelFileError {
///   print(error)   // Model.xcdatamodel/contents:12: entity Note, attribute body: …
/// }
/// ```
public struct ModelFileError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is wrong.
  public enum Reason: Sendable, Equatable {
    /// The path names neither a `.xcdatamodeld` bundle nor a `.xcdatamodel` folder with a
    /// `contents` file.
    case notAModel
    /// A model saved by Xcode 3 (binary `elements` and `layout` files, no `contents`): open
    /// and save it in a current Xcode first.
    case preXcode4Format
    /// The bundle has several versions and no `.xccurrentversion` naming one: the names.
    case noCurrentVersion([String])
    /// `.xccurrentversion` (or the caller) names a version the bundle does not have.
    case missingVersion(String)
    /// The file is not well-formed XML.
    case malformedXML(String)
    /// An attribute type that Core Data does not have.
    case unknownAttributeType(String)
    /// A name that refers to nothing: a parent entity, a destination, an inverse, an indexed
    /// or constrained property.
    case danglingReference(String)
    /// A value that cannot be read (a default that is not a number, a count that is not one).
    case invalidValue(String)
    /// Something Core Data has that TypedStore does not honour yet, and that cannot be
    /// ignored without changing what is stored or checked: what it is and what to do.
    case unsupported(String)
    /// The model the file describes is not a valid TypedStore model.
    case invalidModel(ModelError)
    /// The classes differ from the file: every difference, at once.
    case mismatches([ModelMismatch])
  }

  /// The file at fault: a `contents` file, a `.xccurrentversion`, or the bundle.
  public let file: String
  /// The line in `file`, when the problem is one element's.
  public let line: Int?
  /// The entity at fault, when there is one.
  public let entity: String?
  /// The element or property at fault (`attribute body`, `fetchedProperty recent`).
  public let element: String?
  /// What is wrong.
  public let reason: Reason

  /// An error about `file` (at `line`, in `entity`'s `element`, when they apply).
  public init(file: String, line: Int? = nil, entity: String? = nil, element: String? = nil, reason: Reason) {
    self.file = file
    self.line = line
    self.entity = entity
    self.element = element
    self.reason = reason
  }

  /// The problem in one line: where, then what.
  public var description: String {
    var place = file
    if let line { place += ":\(line)" }
    let subject = [entity.map { "entity \($0)" }, element].compactMap { $0 }.joined(separator: ", ")
    if !subject.isEmpty { place += ": \(subject)" }
    return "\(place): \(reasonDescription)"
  }

  private var reasonDescription: String {
    switch reason {
    case .notAModel: "not an Xcode model (a .xcdatamodeld bundle or a .xcdatamodel folder with a contents file)"
    case .preXcode4Format:
      "a model saved by Xcode 3 (binary elements and layout files, no contents file) is not read; "
        + "open it in a current Xcode and save it"
    case .noCurrentVersion(let names):
      "the bundle has \(names.count) versions (\(names.joined(separator: ", "))) and no .xccurrentversion naming one"
    case .missingVersion(let name): "the bundle has no version named \(name)"
    case .malformedXML(let message): "malformed XML: \(message)"
    case .unknownAttributeType(let type): "unknown attribute type \"\(type)\""
    case .danglingReference(let message): message
    case .invalidValue(let message): message
    case .unsupported(let message): "not supported: \(message)"
    case .invalidModel(let error): "not a valid model: \(error)"
    case .mismatches(let mismatches):
      "the classes differ from the model in \(mismatches.count) "
        + (mismatches.count == 1 ? "place" : "places") + ": "
        + mismatches.map(\.description).joined(separator: "; ")
    }
  }
}
