import Foundation

// Which stored property a key path names.
//
// A key path is applied to probes: detached objects whose `@Attribute` and `@Relationship`
// fields record the slot of each read. Reading a slot is not enough to name it: a computed
// property (`var shout: String { name.uppercased() }`) reads `name` too, and translated as
// `name` it would answer another question. So a key path names an attribute only when it
// passes three checks, each of which a computed property fails:
//
// - shape: one component per property on the way (the standard library describes a key
//   path's components), joined by optional chaining and nothing else; a computed property
//   that follows a relationship itself (`var folderName: String? { folder?.name }`) is one
//   component where the reads show two;
// - values: with each of several values stored in the attribute's field (and the related
//   probes in place), the key path returns exactly that value, and nil when a relationship
//   on the way holds nothing: `name.uppercased()`, `name ?? ""` and the like do not;
//   the samples include nil for an optional, empty and padded strings and extreme numbers,
//   so `name.isEmpty ? "Untitled" : name`, `nickname ?? ""` or `min(rank, 100)` do not.
//
// `managedID` is recognised by value: a probe's `managedID` names a store no file has, and the
// key path must return exactly that ID (and nil when a relationship on the way holds nothing).
// What the checks cannot tell from the attribute is a computed property that returns one
// attribute's value unchanged (an alias): Swift offers no way to see that it is not the
// property (the wrapper's own key path would, but handing it to the hook made every
// attribute read look a key path up, since the optimizer cannot sink that into the hook's
// branch), and its answers are the attribute's. Settability is no test: an attribute with a
// `private(set)` setter has a read-only key path outside its class.
//
// The checks run once per request key path (microseconds), never per object.

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
    let key = ResolvedKeyPathCache.Key(
      keyPath: ObjectIdentifier(keyPath), hash: keyPath.hashValue, entity: entity.index, maximumDepth: maximumDepth)
    if let known = resolvedKeyPaths.withLock({ $0.entries[key] }) { return known }
    let resolved = resolveAfresh(keyPath, on: entity, maximumDepth: maximumDepth)
    resolvedKeyPaths.withLock { cache in
      if cache.entries.count >= ResolvedKeyPathCache.capacity { cache.entries.removeAll() }
      cache.entries[key] = .some(resolved)
    }
    return resolved
  }

  /// What `joined` names on objects of `entity` (with no relationship on the way), where
  /// `joined` was made at run time from `parts`, key paths written in the code
  /// (`\Customer.address` and `\Address.city`): resolved once per list of parts, whose objects
  /// live as long as the process, where a key path made at run time would be resolved again
  /// each time.
  func resolve(parts: [AnyKeyPath], joined: AnyKeyPath, on entity: EntityDescription) -> ResolvedKeyPath? {
    let key = ResolvedKeyPathCache.JoinedKey(
      parts: parts.map { ResolvedKeyPathCache.Part(keyPath: ObjectIdentifier($0), hash: $0.hashValue) },
      entity: entity.index)
    if let known = resolvedKeyPaths.withLock({ $0.joined[key] }) { return known }
    let resolved = resolveAfresh(joined, on: entity, maximumDepth: 0)
    resolvedKeyPaths.withLock { cache in
      if cache.joined.count >= ResolvedKeyPathCache.capacity { cache.joined.removeAll() }
      cache.joined[key] = .some(resolved)
    }
    return resolved
  }

  private func resolveAfresh(_ keyPath: AnyKeyPath, on entity: EntityDescription, maximumDepth: Int)
    -> ResolvedKeyPath?
  {
    guard entity.hasClass, Self.isRoot(of: keyPath, instance: entity.objectType),
      let resolved = reads(of: keyPath, on: entity, maximumDepth: maximumDepth),
      let components = Self.components(of: keyPath)
    else { return nil }
    if case .attribute(let slot) = resolved.target, let last = self.entity(along: resolved.relationships, from: entity),
      !last.compositeEnds.isEmpty, last.compositeEnds[slot] > 0
    {
      // A composite's slot is its first element's: the components after the composite's
      // name say which element.
      return compositeElement(
        keyPath, resolved, from: entity, last: last, depth: components - resolved.relationships.count - 1)
    }
    guard components == resolved.relationships.count + 1 else { return nil }
    switch resolved.target {
    case .identity:
      return identityMatches(keyPath, resolved, from: entity) ? resolved : nil
    case .attribute, .relationship:
      return valuesMatch(keyPath, resolved, from: entity) ? resolved : nil
    }
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
    if let entity, let probe = probe(of: entity), Self.isRoot(of: keyPath, instance: entity.objectType) {
      _ = probe[keyPath: keyPath]
      reads = (probe.keyPathRecorder ?? []).map(entity.propertyName(ofSlot:))
      if probe.recordedIdentityRead { reads.append("managedID") }
    }
    return Self.readable(keyPath.debugDescription, reading: reads)
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

  // MARK: - Reads

  /// What the key path reads on a chain of probes: a to-one relationship on each one before
  /// the last, then one attribute, relationship or `managedID` of the last.
  private func reads(of keyPath: AnyKeyPath, on entity: EntityDescription, maximumDepth: Int) -> ResolvedKeyPath? {
    var relationships: [Int] = []
    while relationships.count <= maximumDepth {
      guard let nodes = probes(along: relationships, from: entity), let root = nodes.first?.object else {
        return nil
      }
      _ = root[keyPath: keyPath]
      // Each probe on the way must have read its relationship to the next, and nothing else.
      for (step, node) in nodes.dropLast().enumerated() {
        guard node.object.keyPathRecorder == [ManagedObject.relationshipMarker(Int32(relationships[step]))],
          !node.object.recordedIdentityRead
        else { return nil }
      }
      guard let last = nodes.last else { return nil }
      let read = last.object.keyPathRecorder ?? []
      if read.isEmpty && last.object.recordedIdentityRead {
        return ResolvedKeyPath(relationships: relationships, target: .identity)
      }
      if read.isEmpty, let previous = relationships.last {
        // Nothing read of the object the relationship holds: the key path names the
        // relationship itself.
        return ResolvedKeyPath(relationships: Array(relationships.dropLast()), target: .relationship(previous))
      }
      guard read.count == 1, let slot = read.first, !last.object.recordedIdentityRead else { return nil }
      if slot >= 0 {
        guard Int(slot) < last.entity.storedAttributes.count else { return nil }
        return ResolvedKeyPath(relationships: relationships, target: .attribute(Int(slot)))
      }
      let index = Int(-slot - 1)
      guard index < last.entity.relationships.count else { return nil }
      if last.entity.relationships[index].kind.isToMany || relationships.count == maximumDepth {
        return ResolvedKeyPath(relationships: relationships, target: .relationship(index))
      }
      relationships.append(index)  // a to-one: look one level deeper, with a probe there
    }
    return nil
  }

  /// Probes of `entity` and of each entity the relationships reach, each relationship
  /// holding the next probe; the last probe's relationships hold nothing.
  private func probes(along relationships: [Int], from entity: EntityDescription, fillingUpTo count: Int? = nil)
    -> [(object: ManagedObject, entity: EntityDescription)]?
  {
    guard let root = probe(of: entity) else { return nil }
    var nodes = [(object: root, entity: entity)]
    for (step, index) in relationships.enumerated() {
      guard let last = nodes.last,
        let destination = self.entity(named: last.entity.relationships[index].destinationEntityName),
        let next = probe(of: destination)
      else { return nil }
      if step < count ?? relationships.count {
        last.entity.relationships[index].accessor.fulfill(last.object, with: [next])
      }
      nodes.append((next, destination))
    }
    return nodes
  }

  /// The entity the to-one `relationships` reach from `entity`.
  private func entity(along relationships: [Int], from entity: EntityDescription) -> EntityDescription? {
    var current = entity
    for index in relationships {
      guard let next = self.entity(named: current.relationships[index].destinationEntityName) else { return nil }
      current = next
    }
    return current
  }

  // MARK: - Composites

  /// The element of the composite in `resolved`'s slot that `keyPath` names, `depth`
  /// components below the composite (`\Customer.address.geo.latitude`: 2), or nil.
  ///
  /// Reading any element reads the composite, so the reads name the composite only. Each
  /// element at that depth is tried with the values checks, the composite's other elements
  /// holding other values meanwhile: a computed property of the struct that reads an element
  /// (`var label: String { city + street }`) returns something else for some of them. Exactly
  /// one element must pass.
  private func compositeElement(
    _ keyPath: AnyKeyPath, _ resolved: ResolvedKeyPath, from entity: EntityDescription, last: EntityDescription,
    depth: Int
  ) -> ResolvedKeyPath? {
    guard case .attribute(let slot) = resolved.target, depth > 0 else { return nil }
    let elements = slot..<Int(last.compositeEnds[slot])
    let matching = elements.filter { element in
      last.storedAttributes[element].name.split(separator: ".").count == depth + 1
        && valuesMatch(
          keyPath, ResolvedKeyPath(relationships: resolved.relationships, target: .attribute(element)), from: entity,
          otherElements: elements)
    }
    guard matching.count == 1, let element = matching.first else { return nil }
    return ResolvedKeyPath(relationships: resolved.relationships, target: .attribute(element))
  }

  /// Stores in each element of `elements` but `slot` one of its sample values other than the
  /// `index`th (so it differs from the tried element's sample when the two share a type),
  /// chosen by the element's place so that elements of one type differ among themselves too.
  private static func fillOtherElements(
    _ elements: Range<Int>, but slot: Int, sample index: Int, of entity: EntityDescription, in object: ManagedObject
  ) {
    for element in elements where element != slot {
      let accessor = entity.storedAttributes[element].accessor
      let samples = Self.samples(for: accessor.codec)
      guard !samples.isEmpty else { continue }
      let shift = 1 + (element - elements.lowerBound) % max(samples.count - 1, 1)  // 1 ... count - 1
      _ = try? accessor.decode(samples[(index + shift) % samples.count], into: object)
    }
  }

  // MARK: - Values

  /// Whether the key path returns what the attribute or relationship it reads holds, for
  /// several values, and nil when a relationship on the way holds nothing.
  private func valuesMatch(
    _ keyPath: AnyKeyPath, _ resolved: ResolvedKeyPath, from entity: EntityDescription,
    otherElements: Range<Int>? = nil
  ) -> Bool {
    // Optional chaining: nil as soon as a relationship on the way holds nothing.
    for depth in resolved.relationships.indices {
      guard let nodes = probes(along: resolved.relationships, from: entity, fillingUpTo: depth),
        let root = nodes.first?.object, let value = root[keyPath: keyPath]
      else { return false }
      guard let optional = value as? any AnyOptional, optional.isNone else { return false }
    }
    switch resolved.target {
    case .attribute(let slot):
      guard let nodes = probes(along: resolved.relationships, from: entity), let last = nodes.last else { return false }
      let accessor = last.entity.storedAttributes[slot].accessor
      // Values of the attribute's type; for one whose values cannot be made up (an enum that
      // lists no cases, a Codable type), the declared default alone.
      var samples = Self.samples(for: accessor.codec)
      if samples.isEmpty, let initial = try? accessor.encode(last.object) { samples = [initial] }
      guard !samples.isEmpty else { return false }
      for (index, sample) in samples.enumerated() {
        guard let nodes = probes(along: resolved.relationships, from: entity), let root = nodes.first?.object,
          let last = nodes.last
        else { return false }
        if let otherElements {
          Self.fillOtherElements(otherElements, but: slot, sample: index, of: last.entity, in: last.object)
        }
        guard (try? accessor.decode(sample, into: last.object)) != nil,
          let value = root[keyPath: keyPath], (try? accessor.codec.encodeAny(value)) == sample
        else { return false }
      }
      return true
    case .relationship(let index):
      // The key path returns the very objects the relationship holds.
      guard let nodes = probes(along: resolved.relationships, from: entity), let root = nodes.first?.object,
        let last = nodes.last,
        let destination = self.entity(named: last.entity.relationships[index].destinationEntityName),
        let held = probe(of: destination)
      else { return false }
      let relationship = last.entity.relationships[index]
      relationship.accessor.fulfill(last.object, with: [held])
      guard let value = root[keyPath: keyPath] else { return false }
      if relationship.kind.isToMany {
        return (value as? any RelationshipValue)?.objects.contains { $0 === held } ?? false
      }
      return (value as? ManagedObject) === held
    case .identity:
      return false
    }
  }

  /// Values of the codec's type to store in a probe and expect back: nil for an optional,
  /// the cases of an enum that lists them, then those of some unusual stored values (empty,
  /// padded, extreme) that the codec decodes and encodes back unchanged, at most eight.
  private static func samples(for codec: any ValueCodec) -> [PrimitiveValue] {
    let candidates: [PrimitiveValue] = [
      .integer(73), .integer(-5), .integer(0), .integer(1), .integer(.max), .integer(.min), .integer(1000),
      .real(2.5), .real(-0.75), .real(0), .real(1e300), .text("tS\u{e9}-1"), .text(""), .text(" Probe b "),
      .text("12.5"), .text("-3"), .text("0"), .text("1e30"), .blob(Data((0..<16).map { UInt8($0 * 7) })),
      .blob(Data((0..<16).map { UInt8(200 - $0) })), .blob(Data()),
      .text("00000000-0000-4000-8000-00000000004A"), .text("https://probe.invalid/a"), .text("{}"), .text("[]"),
      .text("\"probe\""), .text("7"),
    ]
    var samples: [PrimitiveValue] = codec.isOptional ? [.null] : []
    samples += (codec.caseOrder ?? []).prefix(3).map(\.value)
    for candidate in candidates where samples.count < 8 && !samples.contains(candidate) {
      guard let decoded = try? codec.decodeAny(candidate), (try? codec.encodeAny(decoded)) == candidate else {
        continue
      }
      samples.append(candidate)
    }
    return samples
  }

  // MARK: - Identity

  /// Whether the last component is `managedID` itself, compared with `\T.managedID` for the
  /// class it is read on.
  private func identityMatches(_ keyPath: AnyKeyPath, _ resolved: ResolvedKeyPath, from entity: EntityDescription)
    -> Bool
  {
    // Compared by value, not with `\T.managedID`: in an optimized build, a key path made in
    // the user's module reaches `managedID` through another getter thunk than one made here,
    // so the two key paths are unequal and describe themselves with different addresses.
    guard let nodes = probes(along: resolved.relationships, from: entity), let root = nodes.first?.object,
      let last = nodes.last, let id = root[keyPath: keyPath] as? any ManagedIDConvertible,
      id.untypedManagedID.storeIdentifier == ManagedObject.probeStoreIdentifier,
      id.untypedManagedID.entityName == last.entity.name
    else { return false }
    return valuesMatchUpToIdentity(keyPath, resolved, entity)
  }

  /// The relationships on the way to a `managedID` return nil when they hold nothing.
  private func valuesMatchUpToIdentity(_ keyPath: AnyKeyPath, _ resolved: ResolvedKeyPath, _ entity: EntityDescription)
    -> Bool
  {
    for depth in resolved.relationships.indices {
      guard let nodes = probes(along: resolved.relationships, from: entity, fillingUpTo: depth),
        let root = nodes.first?.object, let value = root[keyPath: keyPath],
        let optional = value as? any AnyOptional, optional.isNone
      else { return false }
    }
    return true
  }

  // MARK: - Shape

  /// Whether objects of `type` are what `keyPath` applies to.
  private static func isRoot(of keyPath: AnyKeyPath, instance type: ManagedObject.Type) -> Bool {
    func check<Root>(_ root: Root.Type) -> Bool { type is Root.Type }
    return _openExistential(Swift.type(of: keyPath).rootType, do: check)
  }

  /// The number of properties in `keyPath`, as the standard library describes it
  /// (`\Note.<computed 0x… (Optional<Folder>)>?.<computed 0x… (String)>?` has two), when
  /// they are joined by optional chaining or a plain `.` alone; nil for any other shape (a
  /// force unwrap, a subscript).
  static func components(of keyPath: AnyKeyPath) -> Int? {
    let description = keyPath.debugDescription
    let prefix = "\\" + String(describing: type(of: keyPath).rootType)
    guard description.hasPrefix(prefix) else { return nil }
    var rest = description.dropFirst(prefix.count)
    var count = 0
    while !rest.isEmpty {
      if count > 0 && rest.first == "?" {
        // Between two properties, optional chaining; after the last, an optional's wrapping.
        // (A plain `.` joins a composite to its elements.)
        rest = rest.dropFirst()
        if rest.isEmpty { break }
      }
      guard rest.first == "." else { return nil }
      rest = rest.dropFirst()
      if rest.hasPrefix("<") {
        // `<computed 0x… (Type)>`: up to the parenthesis that closes the type, which may hold
        // parentheses of its own (`Folder #1 in test()`), then `>`.
        guard let open = rest.firstIndex(of: "(") else { return nil }
        var depth = 0
        var index = open
        while index < rest.endIndex {
          if rest[index] == "(" { depth += 1 } else if rest[index] == ")" { depth -= 1 }
          if depth == 0 { break }
          index = rest.index(after: index)
        }
        let next = index < rest.endIndex ? rest.index(after: index) : rest.endIndex
        guard depth == 0, next < rest.endIndex, rest[next] == ">" else { return nil }
        rest = rest[rest.index(after: next)...]
      } else {
        let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
        guard !name.isEmpty else { return nil }
        rest = rest.dropFirst(name.count)
      }
      count += 1
    }
    return count
  }
}

/// The key paths a model has resolved, and what to (nil: nothing it names).
struct ResolvedKeyPathCache {
  struct Key: Hashable, Sendable {
    /// The key path object and its hash over its components. A key path is not `Sendable`,
    /// so the cache cannot keep it; a literal's object lives as long as the process, and a
    /// key path made at run time whose address is reused by another one after it is freed
    /// would also need the same hash, that is the same components, to be taken for it.
    var keyPath: ObjectIdentifier
    var hash: Int
    var entity: Int32
    var maximumDepth: Int
  }

  /// The parts of a key path joined at run time (`ManagedObjectModel.resolve(parts:joined:on:)`).
  struct Part: Hashable, Sendable {
    var keyPath: ObjectIdentifier
    var hash: Int
  }

  struct JoinedKey: Hashable, Sendable {
    var parts: [Part]
    var entity: Int32
  }

  /// Key paths made at run time (`appending(path:)`) could grow the cache without end.
  static let capacity = 4096
  var entries: [Key: ResolvedKeyPath?] = [:]
  var joined: [JoinedKey: ResolvedKeyPath?] = [:]
}

extension ManagedObject {
  /// The store identifier of the `managedID` a probe returns: how the resolver knows that a
  /// key path's value is that ID.
  static let probeStoreIdentifier = UUID()
}
