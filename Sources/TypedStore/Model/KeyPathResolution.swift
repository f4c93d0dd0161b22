import Foundation

// Which stored property a key path names.
//
// A key path is applied to a probe: a detached object whose `@Attribute` and `@Relationship`
// fields record each read, with the slot and the key path of the wrapped property the
// compiler hands the wrapper. Reading a slot is not enough to name it: a computed property
// (`var shout: String { name.uppercased() }`) reads `name` too, and translated as `name` it
// would answer another question. So a key path names an attribute only when it *is* the
// wrapped property:
//
// - one property of the probe's own class: the key path equals the recorded one (key paths
//   compare by their components);
// - a chain through to-one relationships (`\Note.folder?.name`): its components, as the
//   standard library describes them, are the recorded properties' components joined by
//   optional chaining, and nothing else;
// - a property that a subentity inherits (`\Employee.name` for `Person.name`): Swift gives a
//   subclass's key path components of their own, which compare equal to nothing the
//   superclass's wrapper sees. Such a component is checked by its value type and by being
//   the one read; a lone one must also be settable, which a computed property without a
//   setter is not. `managedID` is exact at every level (`ManagedObjectIdentity`).
//
// The check runs once per request key path (a few microseconds), never per object.

/// One read a probe recorded: the attribute's slot (a relationship as its negative marker,
/// `ManagedObject.relationshipMarker`) and the key path of the wrapped property read.
struct KeyPathRead {
  var slot: Int32
  var keyPath: AnyKeyPath
}

/// What a key path names, as `ManagedObjectModel.resolve(_:on:)` finds it.
struct ResolvedKeyPath: Equatable {
  enum Target: Equatable {
    /// An attribute of the object reached, by slot.
    case attribute(Int)
    /// A relationship of the object reached, by index.
    case relationship(Int)
    /// `managedID` of the object reached.
    case identity
  }

  /// The to-one relationships followed first, by index in each entity on the way.
  var relationships: [Int]
  var target: Target
}

extension ManagedObjectModel {
  /// What `keyPath` names on objects of `entity`: an attribute, a relationship or
  /// `managedID`, of the object itself or of one reached through at most `maximumDepth`
  /// to-one relationships; nil for anything else (a computed property, a plain `var`, a
  /// property of another type, a to-many followed by more).
  func resolve(_ keyPath: AnyKeyPath, on entity: EntityDescription, maximumDepth: Int = 3) -> ResolvedKeyPath? {
    guard entity.hasClass, isRoot(of: keyPath, instance: entity.objectType) else { return nil }
    var relationships: [Int] = []
    while relationships.count <= maximumDepth {
      // Probes along the relationships found so far, the last one's relationships empty.
      guard let root = probe(of: entity) else { return nil }
      var nodes = [root]
      var entities = [entity]
      for index in relationships {
        guard let last = nodes.last, let lastEntity = entities.last,
          let destination = self.entity(named: lastEntity.relationships[index].destinationEntityName),
          let next = probe(of: destination)
        else { return nil }
        lastEntity.relationships[index].accessor.fulfill(last, with: [next])
        nodes.append(next)
        entities.append(destination)
      }
      _ = root[keyPath: keyPath]
      // Each probe on the way must have read its relationship to the next, and nothing else.
      var reads: [KeyPathRead] = []
      for (step, node) in nodes.enumerated().dropLast() {
        guard let read = node.keyPathRecorder, read.count == 1, let only = read.first,
          only.slot == ManagedObject.relationshipMarker(Int32(relationships[step])), !node.recordedIdentityRead
        else { return nil }
        reads.append(only)
      }
      guard let last = nodes.last, let lastEntity = entities.last else { return nil }
      let lastReads = last.keyPathRecorder ?? []
      if lastReads.isEmpty && last.recordedIdentityRead {
        let identity = Self.identityKeyPath(of: type(of: last))
        reads.append(KeyPathRead(slot: 0, keyPath: identity))
        let resolved = ResolvedKeyPath(relationships: relationships, target: .identity)
        return matches(keyPath, reads: reads, path: resolved, from: entity) ? resolved : nil
      }
      if lastReads.isEmpty, let previous = relationships.last {
        // The key path read nothing of the object the relationship holds: it names the
        // relationship itself (whose read the object before recorded).
        let resolved = ResolvedKeyPath(relationships: Array(relationships.dropLast()), target: .relationship(previous))
        return matches(keyPath, reads: reads, path: resolved, from: entity) ? resolved : nil
      }
      guard lastReads.count == 1, let read = lastReads.first, !last.recordedIdentityRead else { return nil }
      if read.slot >= 0 {
        guard Int(read.slot) < lastEntity.storedAttributes.count else { return nil }
        let resolved = ResolvedKeyPath(relationships: relationships, target: .attribute(Int(read.slot)))
        return matches(keyPath, reads: reads + [read], path: resolved, from: entity) ? resolved : nil
      }
      let index = Int(-read.slot - 1)
      guard index < lastEntity.relationships.count else { return nil }
      if lastEntity.relationships[index].kind.isToMany || relationships.count == maximumDepth {
        let resolved = ResolvedKeyPath(relationships: relationships, target: .relationship(index))
        return matches(keyPath, reads: reads + [read], path: resolved, from: entity) ? resolved : nil
      }
      relationships.append(index)  // a to-one: look one level deeper, with a probe there
    }
    return nil
  }

  /// The slot of the attribute `keyPath` names on the object itself, or nil.
  func attributeSlot(for keyPath: AnyKeyPath, on entity: EntityDescription) -> Int? {
    guard let resolved = resolve(keyPath, on: entity, maximumDepth: 0), case .attribute(let slot) = resolved.target
    else { return nil }
    return slot
  }

  /// The index of the relationship `keyPath` names on the object itself, or nil.
  func relationshipIndex(for keyPath: AnyKeyPath, on entity: EntityDescription) -> Int? {
    guard let resolved = resolve(keyPath, on: entity, maximumDepth: 0), case .relationship(let index) = resolved.target
    else { return nil }
    return index
  }

  /// How an error names a key path: by the model's property names when it names some
  /// (`\Note.folder?.name`), otherwise as Swift describes it, with each computed property it
  /// passes through shown by its type and the properties it reads, since Swift keeps no
  /// names of computed properties at run time (`\Person.<computed String reading name>`).
  func describe(_ keyPath: AnyKeyPath, on entity: EntityDescription?) -> String {
    let root = String(describing: type(of: keyPath).rootType)
    if let entity, let resolved = resolve(keyPath, on: entity) {
      var names: [String] = []
      var current = entity
      for index in resolved.relationships {
        names.append(current.relationships[index].name)
        guard let next = self.entity(named: current.relationships[index].destinationEntityName) else { break }
        current = next
      }
      switch resolved.target {
      case .attribute(let slot): names.append(current.storedAttributes[slot].name)
      case .relationship(let index): names.append(current.relationships[index].name)
      case .identity: names.append("managedID")
      }
      return "\\\(root)." + names.joined(separator: "?.")
    }
    var reads: [String] = []
    if let entity, let probe = probe(of: entity), isRoot(of: keyPath, instance: entity.objectType) {
      _ = probe[keyPath: keyPath]
      for read in probe.keyPathRecorder ?? [] {
        if read.slot >= 0, Int(read.slot) < entity.storedAttributes.count {
          reads.append(entity.storedAttributes[Int(read.slot)].name)
        } else if read.slot < 0, Int(-read.slot - 1) < entity.relationships.count {
          reads.append(entity.relationships[Int(-read.slot - 1)].name)
        }
      }
      if probe.recordedIdentityRead { reads.append("managedID") }
    }
    return Self.readable(keyPath.debugDescription, reading: reads)
  }

  // MARK: - Helpers

  /// Whether objects of `type` are what `keyPath` applies to.
  private func isRoot(of keyPath: AnyKeyPath, instance type: ManagedObject.Type) -> Bool {
    func check<Root>(_ root: Root.Type) -> Bool { type is Root.Type }
    return _openExistential(Swift.type(of: keyPath).rootType, do: check)
  }

  /// Whether `keyPath` is exactly the chain of wrapped properties `reads` recorded (see the
  /// comment at the top of this file).
  private func matches(
    _ keyPath: AnyKeyPath, reads: [KeyPathRead], path: ResolvedKeyPath, from entity: EntityDescription
  ) -> Bool {
    guard let first = reads.first else { return false }
    let userRoot = type(of: keyPath).rootType
    if reads.count == 1 {
      if case .identity = path.target { return keyPath == first.keyPath }  // rooted at the class itself
      return Self.isWrappedProperty(keyPath, read: first)
    }
    // The static type each component is applied to: the key path's root, then each
    // relationship's destination class.
    var roots: [Any.Type] = [userRoot]
    var current = entity
    for index in path.relationships {
      guard let destination = self.entity(named: current.relationships[index].destinationEntityName),
        destination.hasClass
      else { return false }
      roots.append(current.relationships[index].accessor.destinationType)
      current = destination
    }
    guard roots.count == reads.count else { return false }
    let inherited = zip(roots, reads).map { root, read in
      ObjectIdentifier(type(of: read.keyPath).rootType) != ObjectIdentifier(root)
    }
    return Self.components(keyPath, equal: reads, inherited: inherited)
  }

  /// `\\T.managedID` for the class `type`, rooted at that class itself.
  private static func identityKeyPath(of type: ManagedObject.Type) -> AnyKeyPath {
    func open<T: IdentityKeyPathProviding>(_ type: T.Type) -> AnyKeyPath { type.managedIDKeyPath }
    let providing: any IdentityKeyPathProviding.Type = type
    return open(providing)
  }

  /// Whether `keyPath`, a key path of one property, is the wrapped property whose read a
  /// probe recorded as `read` (see the comment at the top of this file).
  static func isWrappedProperty(_ keyPath: AnyKeyPath, read: KeyPathRead) -> Bool {
    if ObjectIdentifier(type(of: read.keyPath).rootType) == ObjectIdentifier(type(of: keyPath).rootType) {
      return keyPath == read.keyPath
    }
    // A property a subentity inherits: the subclass's key path has accessors of its own.
    return isSettable(keyPath) && components(keyPath, equal: [read], inherited: [true])
  }

  /// Whether `keyPath` can be written through, as a stored property's can.
  private static func isSettable(_ keyPath: AnyKeyPath) -> Bool {
    func root<Root>(_: Root.Type) -> Bool {
      func value<Value>(_: Value.Type) -> Bool { keyPath is ReferenceWritableKeyPath<Root, Value> }
      return _openExistential(type(of: keyPath).valueType, do: value)
    }
    return _openExistential(type(of: keyPath).rootType, do: root)
  }

  /// Whether the standard library's description of `keyPath` is that of `reads`' key paths'
  /// single components, joined by optional chaining (`?`), with a final `?` when the last
  /// value is wrapped in an optional. A component of an `inherited` read is compared with
  /// its address left out, since a subclass's key path has accessors of its own.
  private static func components(_ keyPath: AnyKeyPath, equal reads: [KeyPathRead], inherited: [Bool]) -> Bool {
    let rootPrefix = "\\" + String(describing: type(of: keyPath).rootType)
    var expected: [(text: String, inherited: Bool)] = [(rootPrefix, false)]
    for (index, read) in reads.enumerated() {
      let description = read.keyPath.debugDescription
      let prefix = "\\" + String(describing: type(of: read.keyPath).rootType)
      guard description.hasPrefix(prefix) else { return false }
      let component = String(description.dropFirst(prefix.count))
      // One component: `.name` or `.<computed 0x… (Type)>`, nothing chained after it.
      guard component.hasPrefix("."), !component.dropFirst().contains("?"), !component.hasSuffix("!") else {
        return false
      }
      if index > 0 { expected.append(("?", false)) }
      expected.append((component, inherited[index]))
    }
    let actual = keyPath.debugDescription
    let joined = expected.map(\.text).joined()
    if actual == joined || actual == joined + "?" { return true }
    guard inherited.contains(true) else { return false }
    // Compare again with every address masked, then the addresses of the components that
    // are not inherited one by one.
    let masked = maskingAddresses(joined)
    let actualMasked = maskingAddresses(actual)
    return actualMasked == masked || actualMasked == masked + "?"
      ? unmaskedAddressesAgree(actual, expected: expected) : false
  }

  /// `text` with every `0x` followed by hex digits written as `0x_`.
  private static func maskingAddresses(_ text: String) -> String {
    var result = ""
    var index = text.startIndex
    while index < text.endIndex {
      if text[index...].hasPrefix("0x") {
        result += "0x_"
        index = text.index(index, offsetBy: 2)
        while index < text.endIndex, text[index].isHexDigit { index = text.index(after: index) }
      } else {
        result.append(text[index])
        index = text.index(after: index)
      }
    }
    return result
  }

  /// The addresses of `actual`, in order, against the expected components': those of
  /// components not inherited must be the same.
  private static func unmaskedAddressesAgree(_ actual: String, expected: [(text: String, inherited: Bool)]) -> Bool {
    func addresses(_ text: String) -> [Substring] {
      var found: [Substring] = []
      var rest = text[...]
      while let range = rest.range(of: "0x") {
        let digits = rest[range.upperBound...].prefix(while: \.isHexDigit)
        found.append(digits)
        rest = rest[digits.endIndex...]
      }
      return found
    }
    let actualAddresses = addresses(actual)
    var expectedAddresses: [Substring?] = []
    for component in expected {
      let found = addresses(component.text)
      expectedAddresses += component.inherited ? found.map { _ in nil } : found.map { $0 }
    }
    guard actualAddresses.count == expectedAddresses.count else { return false }
    return zip(actualAddresses, expectedAddresses).allSatisfy { actual, expected in
      expected.map { $0 == actual } ?? true
    }
  }

  /// Swift's description of a key path with each `<computed 0x… (Type)>` written as
  /// `<computed Type reading …>`.
  static func readable(_ description: String, reading reads: [String]) -> String {
    var result = ""
    var rest = description[...]
    while let start = rest.range(of: "<computed "), let open = rest[start.upperBound...].range(of: " ("),
      let close = rest[open.upperBound...].range(of: ")>")
    {
      result += rest[..<start.lowerBound]
      let type = rest[open.upperBound..<close.lowerBound]
      result += "<computed \(type)" + (reads.isEmpty ? ">" : " reading \(reads.joined(separator: ", "))>")
      rest = rest[close.upperBound...]
    }
    return result + rest
  }
}

/// Gives `\T.managedID` rooted at an object's own class, so that the resolver compares a
/// key path to `managedID` exactly at every level of a class hierarchy (the conformance is
/// where `managedID` is declared).
protocol IdentityKeyPathProviding: ManagedObject {
  static var managedIDKeyPath: AnyKeyPath { get }
}
