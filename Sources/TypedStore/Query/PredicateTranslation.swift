import Foundation

/// A predicate translated to SQL: a boolean expression over one table's columns, its bound
/// values, and the attributes it reads (unsaved edits of those decide whether a fetch must
/// evaluate the predicate on changed objects too).
struct TranslatedPredicate {
  let sql: String
  let arguments: [PrimitiveValue]
  let slots: Set<Int32>
}

/// How SQLite must compare a value to answer as Swift does.
enum SQLValueKind: Equatable {
  /// Integers, reals, booleans and dates: SQLite compares them numerically, as Swift does.
  case number
  /// Strings: compared with the `SWIFT` collation and functions (`SwiftStringFunctions`).
  case text
  /// Decimals, stored as text: compared with the `SWIFT_DECIMAL` collation, and added,
  /// subtracted, multiplied and negated by the `swift_decimal_` functions
  /// (`SwiftDecimalFunctions`).
  case decimal
  /// Data and UUIDs: compared by bytes, for equality only.
  case blob
  /// A boolean expression (never NULL).
  case boolean
  /// Not known yet (a nil literal).
  case unknown
}

/// One translated subexpression. A literal stays a Swift value until it meets the column it
/// is compared with, so that it is encoded by that attribute's codec (a raw enum, a `Float`,
/// an optional).
struct SQLFragment {
  var sql: String
  var arguments: [PrimitiveValue] = []
  var kind: SQLValueKind
  var codec: (any ValueCodec)?
  var literal: Any?
  var isNullable: Bool
  /// Set for a related object or a to-many relationship (`PredicateTranslation+Relationships`).
  var graph: GraphReference? = nil
}

/// Translates a `Predicate<Entity>`'s expression tree, node by node: each Foundation
/// expression type TypedStore understands conforms to `SQLTranslatable` below; anything else
/// is `PredicateTranslationError.unsupportedExpression`.
struct PredicateTranslator<Entity: ManagedObject> {
  let model: ManagedObjectModel
  let entity: EntityDescription
  let root: PredicateExpressions.VariableID
  /// The store the predicate runs on, when known: a captured ID of another store names none
  /// of its rows.
  var storeIdentifier: UUID? = nil
  var variables: [PredicateExpressions.VariableID: SQLFragment] = [:]
  var slots: Set<Int32> = []
  /// Subquery aliases handed out so far.
  var aliasCount = 0
  /// Key paths into composites joined from the parts `#Predicate` wrote, by the joined key
  /// path: the parts, whose objects last, key their resolution (`KeyPathResolution.swift`).
  var joinedParts: [ObjectIdentifier: [AnyKeyPath]] = [:]

  static func translate(_ predicate: Predicate<Entity>, model: ManagedObjectModel, storeIdentifier: UUID? = nil)
    throws -> TranslatedPredicate
  {
    guard let entity = model.entity(for: Entity.self) else {
      throw FetchError.unknownEntity(String(describing: Entity.self))
    }
    var translator = PredicateTranslator(
      model: model, entity: entity, root: predicate.variable.key, storeIdentifier: storeIdentifier)
    let fragment = try translator.condition(predicate.expression)
    return TranslatedPredicate(sql: fragment.sql, arguments: fragment.arguments, slots: translator.slots)
  }

  // MARK: - Nodes

  mutating func fragment(_ node: Any) throws -> SQLFragment {
    guard let node = node as? any SQLTranslatable else {
      throw PredicateTranslationError.unsupportedExpression(Self.name(of: node))
    }
    return try node.translate(&self)
  }

  /// A node in a boolean position: a boolean expression, or a `Bool` attribute or value.
  mutating func condition(_ node: Any) throws -> SQLFragment {
    var result = try bound(try fragment(node))
    if result.kind != .boolean {
      guard !result.isNullable else {
        throw PredicateTranslationError.unsupportedExpression("an optional Bool used as a condition")
      }
      result.sql = "(\(result.sql) <> 0)"
      result.kind = .boolean
    }
    return result
  }

  /// A fragment whose literal, if any, is bound on its own.
  func bound(_ fragment: SQLFragment) throws -> SQLFragment {
    guard let literal = fragment.literal else { return fragment }
    let (value, kind) = try Self.encode(literal, store: storeIdentifier)
    return SQLFragment(
      sql: "?", arguments: [value], kind: kind, codec: nil, literal: nil, isNullable: value == .null)
  }

  /// Two operands, each literal bound with the other side's codec when it has one.
  func pair(_ left: SQLFragment, _ right: SQLFragment) throws -> (SQLFragment, SQLFragment) {
    func bind(_ fragment: SQLFragment, like other: SQLFragment) throws -> SQLFragment {
      guard let literal = fragment.literal else { return fragment }
      if let codec = other.codec, let value = try codec.encodeAny(literal) {
        return SQLFragment(
          sql: "?", arguments: [value], kind: other.kind, codec: nil, literal: nil, isNullable: value == .null)
      }
      return try bound(fragment)
    }
    return (try bind(left, like: right), try bind(right, like: left))
  }

  /// A key path's value: on the predicate's object, an attribute's column or a relationship;
  /// on a related object or a to-many, see `PredicateTranslation+Relationships.swift`.
  mutating func column(_ keyPath: AnyKeyPath, root: Any) throws -> SQLFragment {
    if let variable = root as? PredicateExpressions.Variable<Entity>, variable.key == self.root {
      return try property(keyPath, of: entity, key: nil, alias: nil, arguments: [])
    }
    return try graphProperty(keyPath, of: try fragment(root))
  }

  /// An attribute's column of the predicate's entity (or of a related entity, whose caller
  /// rewrites the SQL), with how it compares.
  func attributeFragment(_ attribute: AttributeDescription, of entity: EntityDescription) throws -> SQLFragment {
    let kind: SQLValueKind
    switch attribute.attributeType {
    case .string: kind = .text
    case .decimal: kind = .decimal
    case .binaryData, .uuid: kind = .blob
    case .uri, .codable:
      throw PredicateTranslationError.unsupportedValue(
        type: "\(attribute.attributeType.rawValue) (\(entity.name).\(attribute.name))", operation: "a comparison")
    default: kind = .number
    }
    return SQLFragment(
      sql: "\"\(attribute.columnName)\"", kind: kind, codec: attribute.accessor.codec, literal: nil,
      isNullable: attribute.isOptional)
  }

  // MARK: - Values

  /// A Swift value as SQLite stores it, and how it compares.
  static func encode(_ value: Any, store: UUID? = nil) throws -> (PrimitiveValue, SQLValueKind) {
    if let optional = value as? any AnyOptional, optional.isNone { return (.null, .unknown) }
    if let object = value as? ManagedObject {
      // Its row's key; an object never saved is no row's (keys start at 1).
      guard let key = object.objectKey, !key.isTemporary else { return (.integer(0), .number) }
      return (.integer(key.value), .number)
    }
    if let id = value as? any ManagedIDConvertible {
      // Its row's key, compared with `pk`; a temporary ID, or one of another store, is no
      // row's.
      let untyped = id.untypedManagedID
      guard let key = untyped.primaryKey, untyped.storeIdentifier == store ?? untyped.storeIdentifier else {
        return (.integer(0), .number)
      }
      return (.integer(key), .number)
    }
    if let unwrapped = unwrapOptional(value) { return try encode(unwrapped, store: store) }
    if let attributeValue = value as? any AttributeValue {
      let kind: SQLValueKind
      switch type(of: attributeValue).attributeType {
      case .string: kind = .text
      case .decimal: kind = .decimal
      case .binaryData, .uuid: kind = .blob
      case .uri, .codable:
        throw PredicateTranslationError.unsupportedValue(type: name(of: value), operation: "a comparison")
      default: kind = .number
      }
      return (attributeValue.primitiveValue, kind)
    }
    if let raw = value as? any RawRepresentable { return try encode(raw.rawValue) }
    throw PredicateTranslationError.unsupportedValue(type: name(of: value), operation: "a comparison")
  }

  private static func unwrapOptional(_ value: Any) -> Any? {
    let mirror = Mirror(reflecting: value)
    guard mirror.displayStyle == .optional else { return nil }
    return mirror.children.first?.value
  }

  static func name(of value: Any) -> String {
    let full = String(describing: type(of: value))
    return full.count > 120 ? String(full.prefix(120)) + "…" : full
  }

  static func elements(of value: Any) -> [Any]? {
    func collect<S: Sequence>(_ sequence: S) -> [Any] { sequence.map { $0 as Any } }
    guard let sequence = value as? any Sequence else { return nil }
    return collect(sequence)
  }

  /// ` COLLATE SWIFT_DECIMAL` when either side is a decimal, ` COLLATE SWIFT` when either is
  /// text.
  static func collation(_ left: SQLFragment, _ right: SQLFragment) -> String {
    collation(left.kind, right.kind)
  }

  static func collation(_ left: SQLValueKind, _ right: SQLValueKind) -> String {
    if left == .decimal || right == .decimal { return " COLLATE SWIFT_DECIMAL" }
    return left == .text || right == .text ? " COLLATE SWIFT" : ""
  }
}

/// A Foundation predicate expression TypedStore can translate.
protocol SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment
}

// MARK: - Leaves

extension PredicateExpressions.KeyPath: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (root, keyPath, parts) = joined
    if parts.count > 1 { translator.joinedParts[ObjectIdentifier(keyPath)] = parts }
    return try translator.column(keyPath, root: root)
  }
}

/// A key path expression into a composite, as one key path from the expression below the
/// composite: `#Predicate` writes `$0.address.city` as `\.city` applied to `\.address`, and
/// only the whole `\Customer.address.city` names the composite's element. `parts` are the
/// key paths written (one when nothing was joined).
protocol JoinedKeyPathExpression {
  var joined: (root: Any, keyPath: AnyKeyPath, parts: [AnyKeyPath]) { get }
}

extension PredicateExpressions.KeyPath: JoinedKeyPathExpression {
  var joined: (root: Any, keyPath: AnyKeyPath, parts: [AnyKeyPath]) {
    if let inner = root as? any JoinedKeyPathExpression {
      let (innerRoot, innerKeyPath, innerParts) = inner.joined
      if type(of: innerKeyPath).valueType is any CompositeAttributeValue.Type,
        let whole = innerKeyPath.appending(path: keyPath)
      {
        return (innerRoot, whole, innerParts + [keyPath])
      }
    }
    return (root, keyPath, [keyPath])
  }
}

extension PredicateExpressions.Value: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    SQLFragment(sql: "?", kind: .unknown, codec: nil, literal: value, isNullable: true)
  }
}

extension PredicateExpressions.NilLiteral: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    SQLFragment(sql: "NULL", kind: .unknown, codec: nil, literal: nil, isNullable: true)
  }
}

extension PredicateExpressions.Variable: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    guard let bound = translator.variables[key] else {
      throw PredicateTranslationError.unsupportedExpression("the predicate's object used as a value")
    }
    return bound
  }
}

// MARK: - Comparisons

extension PredicateExpressions.Equal: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    // IS: NULL equals NULL, as nil == nil in Swift.
    try translator.equality(lhs, rhs, operator: "IS")
  }
}

extension PredicateExpressions.NotEqual: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    // IS NOT: a nil attribute is unequal to any value, as in Swift.
    try translator.equality(lhs, rhs, operator: "IS NOT")
  }
}

extension PredicateTranslator {
  /// `==` or `!=` of two operands, NULL-safe.
  mutating func equality(_ lhs: Any, _ rhs: Any, operator symbol: String) throws -> SQLFragment {
    let (left, right) = try pair(try fragment(lhs), try fragment(rhs))
    return SQLFragment(
      sql: "(\(left.sql) \(symbol) \(right.sql)\(Self.collation(left, right)))",
      arguments: left.arguments + right.arguments, kind: .boolean, isNullable: false)
  }
}

extension PredicateExpressions.Comparison: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (left, right) = try translator.pair(try translator.fragment(lhs), try translator.fragment(rhs))
    guard left.kind != .blob && right.kind != .blob else {
      throw PredicateTranslationError.unsupportedValue(type: "Data or UUID", operation: "ordering")
    }
    for side in [left, right] {
      if let codec = side.codec, !codec.isStandard, !codec.storesCasesInTheirOrder {
        // `<` on a raw enum is its own: SQL can compare the raw values only when they are in
        // that order.
        throw PredicateTranslationError.unsupportedValue(
          type: "an enum whose raw values are not in the order of its own < (or that is not CaseIterable)",
          operation: "ordering")
      }
    }
    let symbol: String
    switch op {
    case .lessThan: symbol = "<"
    case .lessThanOrEqual: symbol = "<="
    case .greaterThan: symbol = ">"
    case .greaterThanOrEqual: symbol = ">="
    @unknown default: throw PredicateTranslationError.unsupportedExpression("comparison \(op)")
    }
    return SQLFragment(
      sql: "(\(left.sql) \(symbol) \(right.sql)\(PredicateTranslator<Entity>.collation(left, right)))",
      arguments: left.arguments + right.arguments, kind: .boolean, isNullable: left.isNullable || right.isNullable)
  }
}

// MARK: - Logic

extension PredicateExpressions.Conjunction: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let left = try translator.condition(lhs)
    let right = try translator.condition(rhs)
    return SQLFragment(
      sql: "(\(left.sql) AND \(right.sql))", arguments: left.arguments + right.arguments, kind: .boolean,
      isNullable: false)
  }
}

extension PredicateExpressions.Disjunction: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let left = try translator.condition(lhs)
    let right = try translator.condition(rhs)
    return SQLFragment(
      sql: "(\(left.sql) OR \(right.sql))", arguments: left.arguments + right.arguments, kind: .boolean,
      isNullable: false)
  }
}

extension PredicateExpressions.Negation: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let inner = try translator.condition(wrapped)
    return SQLFragment(sql: "(NOT \(inner.sql))", arguments: inner.arguments, kind: .boolean, isNullable: false)
  }
}

extension PredicateExpressions.Conditional: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let condition = try translator.condition(test)
    let (yes, no) = try translator.pair(try translator.fragment(trueBranch), try translator.fragment(falseBranch))
    let kind = yes.kind == .unknown ? no.kind : yes.kind
    return SQLFragment(
      sql: "(CASE WHEN \(condition.sql) THEN \(yes.sql) ELSE \(no.sql) END)",
      arguments: condition.arguments + yes.arguments + no.arguments, kind: kind, codec: yes.codec ?? no.codec,
      literal: nil, isNullable: yes.isNullable || no.isNullable)
  }
}

// MARK: - Optionals

extension PredicateExpressions.NilCoalesce: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (left, right) = try translator.pair(try translator.fragment(lhs), try translator.fragment(rhs))
    let kind = left.kind == .unknown ? right.kind : left.kind
    return SQLFragment(
      sql: "coalesce(\(left.sql), \(right.sql))", arguments: left.arguments + right.arguments, kind: kind,
      codec: nil, literal: nil, isNullable: right.isNullable)
  }
}

extension PredicateExpressions.OptionalFlatMap: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let unwrapped = try translator.bound(try translator.fragment(wrapped))
    // The closure's variable stands for the unwrapped value: the same SQL, known not NULL.
    var inside = unwrapped
    inside.isNullable = false
    translator.variables[variable.key] = inside
    defer { translator.variables[variable.key] = nil }
    let body = try translator.bound(try translator.fragment(transform))
    return SQLFragment(
      sql: "(CASE WHEN \(unwrapped.sql) IS NULL THEN NULL ELSE \(body.sql) END)",
      arguments: unwrapped.arguments + body.arguments, kind: body.kind == .boolean ? .number : body.kind,
      codec: nil, literal: nil, isNullable: true, graph: body.graph)  // a chain goes on: $0.book?.shelf?.name
  }
}

// MARK: - Arithmetic

extension PredicateExpressions.Arithmetic: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (left, right) = try translator.pair(try translator.fragment(lhs), try translator.fragment(rhs))
    if left.kind == .decimal || right.kind == .decimal {
      return try PredicateTranslator<Entity>.decimalArithmetic(op, left, right)
    }
    guard left.kind == .number || left.kind == .unknown, right.kind == .number || right.kind == .unknown else {
      throw PredicateTranslationError.unsupportedValue(type: "non-numeric", operation: "arithmetic")
    }
    let symbol: String
    switch op {
    case .add: symbol = "+"
    case .subtract: symbol = "-"
    case .multiply: symbol = "*"
    @unknown default: throw PredicateTranslationError.unsupportedExpression("arithmetic \(op)")
    }
    return SQLFragment(
      sql: "(\(left.sql) \(symbol) \(right.sql))", arguments: left.arguments + right.arguments, kind: .number,
      codec: nil, literal: nil, isNullable: left.isNullable || right.isNullable)
  }
}

extension PredicateExpressions.UnaryMinus: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let operand = try translator.bound(try translator.fragment(wrapped))
    if operand.kind == .decimal {
      // Swift's prefix `-` on `Decimal`, whose NaN stays NaN.
      return SQLFragment(
        sql: "swift_decimal_negate(\(operand.sql))", arguments: operand.arguments, kind: .decimal, codec: nil,
        literal: nil, isNullable: operand.isNullable)
    }
    guard operand.kind == .number || operand.kind == .unknown else {
      throw PredicateTranslationError.unsupportedValue(type: "non-numeric", operation: "unary minus")
    }
    return SQLFragment(
      sql: "(-\(operand.sql))", arguments: operand.arguments, kind: .number, codec: nil, literal: nil,
      isNullable: operand.isNullable)
  }
}

extension PredicateTranslator {
  /// `+`, `-` or `*` of decimals: Swift's own operators, called by SQLite (`SwiftDecimalFunctions`),
  /// so that the digits kept, the rounding and NaN are Swift's.
  static func decimalArithmetic(
    _ op: PredicateExpressions.ArithmeticOperator, _ left: SQLFragment, _ right: SQLFragment
  ) throws -> SQLFragment {
    guard left.kind == .decimal || left.kind == .unknown, right.kind == .decimal || right.kind == .unknown else {
      throw PredicateTranslationError.unsupportedValue(type: "Decimal and another type", operation: "arithmetic")
    }
    let function: String
    switch op {
    case .add: function = "swift_decimal_add"
    case .subtract: function = "swift_decimal_subtract"
    case .multiply: function = "swift_decimal_multiply"
    @unknown default: throw PredicateTranslationError.unsupportedExpression("arithmetic \(op)")
    }
    return SQLFragment(
      sql: "\(function)(\(left.sql), \(right.sql))", arguments: left.arguments + right.arguments, kind: .decimal,
      codec: nil, literal: nil, isNullable: left.isNullable || right.isNullable)
  }
}

// MARK: - Ranges

/// A range expression whose bounds are translated: `a...b` and `a..<b` of captured values.
protocol SQLRangeBounds {
  var lowerBound: Any { get }
  var upperBound: Any { get }
  /// Whether the range contains its upper bound.
  var isClosed: Bool { get }
}

extension PredicateExpressions.ClosedRange: SQLRangeBounds {
  var lowerBound: Any { lower }
  var upperBound: Any { upper }
  var isClosed: Bool { true }
}

extension PredicateExpressions.Range: SQLRangeBounds {
  var lowerBound: Any { lower }
  var upperBound: Any { upper }
  var isClosed: Bool { false }
}

/// A captured range value: its bounds are already Swift values.
protocol SQLRangeValue {
  var lowerBoundValue: Any? { get }
  var upperBoundValue: Any? { get }
  var isClosed: Bool { get }
}

extension ClosedRange: SQLRangeValue {
  var lowerBoundValue: Any? { lowerBound }
  var upperBoundValue: Any? { upperBound }
  var isClosed: Bool { true }
}

extension Range: SQLRangeValue {
  var lowerBoundValue: Any? { lowerBound }
  var upperBoundValue: Any? { upperBound }
  var isClosed: Bool { false }
}

extension PartialRangeFrom: SQLRangeValue {
  var lowerBoundValue: Any? { lowerBound }
  var upperBoundValue: Any? { nil }
  var isClosed: Bool { true }
}

extension PartialRangeThrough: SQLRangeValue {
  var lowerBoundValue: Any? { nil }
  var upperBoundValue: Any? { upperBound }
  var isClosed: Bool { true }
}

extension PartialRangeUpTo: SQLRangeValue {
  var lowerBoundValue: Any? { nil }
  var upperBoundValue: Any? { upperBound }
  var isClosed: Bool { false }
}

extension PredicateExpressions.RangeExpressionContains: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    // `(a...b).contains(x)` is `a <= x && x <= b`, as Swift's `ClosedRange.contains`; `..<`
    // leaves out the upper bound. The bounds must be captured values, checked here: Swift
    // stops the program when a range's lower bound is above its upper one.
    let (lower, upper, isClosed) = try translator.rangeBounds(range)
    let element = try translator.fragment(element)
    if let codec = element.codec, !codec.isStandard {
      // A raw enum's stored values need not be in the order of its own `<`.
      throw PredicateTranslationError.unsupportedValue(type: "a RawRepresentable attribute", operation: "a range")
    }
    var tests: [(sql: String, arguments: [PrimitiveValue])] = []
    func test(_ bound: Any, below: Bool, orEqual: Bool) throws {
      let value = SQLFragment(sql: "?", kind: .unknown, codec: nil, literal: bound, isNullable: true)
      let (x, limit) = try translator.pair(element, value)
      guard x.kind != .blob && limit.kind != .blob else {
        throw PredicateTranslationError.unsupportedValue(type: "Data or UUID", operation: "a range")
      }
      let symbol = (below ? "<" : ">") + (orEqual ? "=" : "")
      tests.append(
        (
          "\(limit.sql) \(symbol) \(x.sql)\(PredicateTranslator<Entity>.collation(x, limit))",
          limit.arguments + x.arguments
        )
      )
    }
    if let lower { try test(lower, below: true, orEqual: true) }
    if let upper { try test(upper, below: false, orEqual: isClosed) }
    guard !tests.isEmpty else { return SQLFragment(sql: "1", kind: .boolean, isNullable: false) }
    return SQLFragment(
      sql: "(" + tests.map(\.sql).joined(separator: " AND ") + ")", arguments: tests.flatMap(\.arguments),
      kind: .boolean, isNullable: element.isNullable)
  }
}

extension PredicateTranslator {
  /// The bounds of a range in a predicate (a captured range, or `a...b` or `a..<b` of captured
  /// values), and whether it contains its upper bound.
  mutating func rangeBounds(_ node: Any) throws -> (lower: Any?, upper: Any?, isClosed: Bool) {
    if let range = node as? any SQLRangeBounds {
      let lower = try fragment(range.lowerBound)
      let upper = try fragment(range.upperBound)
      guard let low = lower.literal, let high = upper.literal else {
        throw PredicateTranslationError.unsupportedExpression(
          "a range whose bounds are not captured values "
            + "(Swift stops the program when the lower bound is above the upper one)"
        )
      }
      guard Self.isOrdered(low, high) else {
        throw PredicateTranslationError.unsupportedExpression(
          "the range \(low)...\(high), whose lower bound is above its upper one (Swift stops the program)")
      }
      return (low, high, range.isClosed)
    }
    let value = try fragment(node)
    guard let range = value.literal as? any SQLRangeValue else {
      throw PredicateTranslationError.unsupportedExpression("contains on a range that is not a value")
    }
    return (range.lowerBoundValue, range.upperBoundValue, range.isClosed)
  }

  /// `lower <= upper`, as a range's initializer checks it.
  static func isOrdered(_ lower: Any, _ upper: Any) -> Bool {
    func check<Bound: Comparable>(_ lower: Bound) -> Bool {
      guard let upper = upper as? Bound else { return false }
      return lower <= upper
    }
    guard let lower = lower as? any Comparable else { return false }
    return check(lower)
  }
}

// MARK: - Strings and collections

extension PredicateExpressions.CollectionContainsCollection: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (whole, part) = try translator.pair(try translator.fragment(base), try translator.fragment(other))
    guard whole.kind == .text || part.kind == .text else {
      throw PredicateTranslationError.unsupportedValue(type: "a collection that is not a String", operation: "contains")
    }
    return SQLFragment(
      sql: "swift_contains(\(whole.sql), \(part.sql))", arguments: whole.arguments + part.arguments, kind: .boolean,
      isNullable: false)
  }
}

extension PredicateExpressions.SequenceStartsWith: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (whole, start) = try translator.pair(try translator.fragment(base), try translator.fragment(prefix))
    guard whole.kind == .text || start.kind == .text else {
      throw PredicateTranslationError.unsupportedValue(
        type: "a sequence that is not a String", operation: "starts(with:)")
    }
    return SQLFragment(
      sql: "swift_starts_with(\(whole.sql), \(start.sql))", arguments: whole.arguments + start.arguments,
      kind: .boolean, isNullable: false)
  }
}

extension PredicateExpressions.SequenceContains: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    // `list.contains($0.attribute)`: the list is a value; the element an attribute or value.
    let list = try translator.fragment(sequence)
    guard let literal = list.literal, let items = PredicateTranslator<Entity>.elements(of: literal) else {
      throw PredicateTranslationError.unsupportedExpression("contains on a sequence that is not a value")
    }
    let element = try translator.fragment(element)
    var member = element
    if member.literal != nil { member = try translator.bound(member) }
    var tests: [String] = []
    var arguments: [PrimitiveValue] = []
    for item in items {
      let (value, kind) =
        try member.codec.flatMap { codec in try codec.encodeAny(item).map { ($0, member.kind) } }
        ?? PredicateTranslator<Entity>.encode(item, store: translator.storeIdentifier)
      let collation = PredicateTranslator<Entity>.collation(member.kind, kind)
      tests.append("\(member.sql) IS ?\(collation)")
      arguments += member.arguments + [value]
    }
    guard !tests.isEmpty else { return SQLFragment(sql: "0", kind: .boolean, isNullable: false) }
    return SQLFragment(
      sql: "(" + tests.joined(separator: " OR ") + ")", arguments: arguments, kind: .boolean, isNullable: false)
  }
}
