import Foundation

/// A predicate translated to SQL: a boolean expression over one table's columns, its bound
/// values, and the attributes it reads (unsaved edits of those decide whether a fetch must
/// evaluate the predicate on changed objects too).
struct TranslatedPredicate {
  let sql: String
  let arguments: [PrimitiveValue]
  let slots: Set<Int32>
  /// False when the SQL only narrows the rows (an engine whose semantics differ from Swift's
  /// where the predicate reads them): every row Swift's evaluation selects is among the SQL's,
  /// and the fetch evaluates the predicate in Swift on each of them.
  var isExact = true
}

/// How far a fragment's SQL answers as Swift does. On SQLite every fragment is exact (Swift's
/// own functions and collations run inside it). On PostgreSQL, where strings, decimals and
/// floating point arithmetic behave otherwise, a fragment may only narrow the rows, and the
/// fetch checks the candidates in Swift (`TranslatedPredicate.isExact`).
enum SQLExactness: Equatable {
  /// The SQL answers as Swift does.
  case exact
  /// A condition whose SQL is true wherever Swift's answer is true (and maybe elsewhere).
  case superset
  /// SQL that says nothing Swift's answer can rely on: as a condition it narrows nothing.
  case opaque
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
  /// The attribute type of the value, when known: how a bound value is typed where the engine
  /// needs it (PostgreSQL's `CAST(? AS …)`).
  var attributeType: AttributeType? = nil
  var exactness: SQLExactness = .exact
  /// A bound NaN (`Double.nan`, `Float.nan`), which neither engine keeps as Swift compares it:
  /// SQLite binds it as NULL, PostgreSQL orders it above every number.
  var isNaN = false
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
  /// The SQL language translated to (PostgreSQL's where it differs; see `SQLExactness`).
  var dialect: SQLDialect = .sqlite

  static func translate(
    _ predicate: Predicate<Entity>, model: ManagedObjectModel, storeIdentifier: UUID? = nil,
    dialect: SQLDialect = .sqlite
  ) throws -> TranslatedPredicate {
    guard let entity = model.entity(for: Entity.self) else {
      throw FetchError.unknownEntity(String(describing: Entity.self))
    }
    var translator = PredicateTranslator(
      model: model, entity: entity, root: predicate.variable.key, storeIdentifier: storeIdentifier, dialect: dialect)
    let fragment = try translator.condition(predicate.expression)
    return TranslatedPredicate(
      sql: fragment.sql, arguments: fragment.arguments, slots: translator.slots,
      isExact: fragment.exactness == .exact)
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
      // PostgreSQL keeps a `Bool` as a boolean, SQLite as an integer.
      if dialect == .sqlite { result.sql = "(\(result.sql) <> 0)" }
      result.kind = .boolean
    }
    return narrowing(result)
  }

  /// A condition as it narrows the rows: itself, unless it is opaque, which narrows nothing.
  func narrowing(_ condition: SQLFragment) -> SQLFragment {
    guard condition.exactness == .opaque else { return condition }
    return SQLFragment(sql: literal(true), kind: .boolean, isNullable: false, exactness: .superset)
  }

  /// `true` or `false` in the dialect's SQL.
  func literal(_ value: Bool) -> String {
    dialect == .sqlite ? (value ? "1" : "0") : (value ? "TRUE" : "FALSE")
  }

  /// A fragment whose literal, if any, is bound on its own.
  func bound(_ fragment: SQLFragment) throws -> SQLFragment {
    guard let literal = fragment.literal else { return fragment }
    let (value, kind, type) = try Self.encode(literal, store: storeIdentifier)
    return parameter(value, kind: kind, type: type)
  }

  /// A bound value: `?`, which PostgreSQL is told the type of (it infers none for a value
  /// compared with another value). A text PostgreSQL cannot hold (a NUL character) is bound
  /// as no value, and the fragment is opaque: Swift's evaluation decides.
  func parameter(_ value: PrimitiveValue, kind: SQLValueKind, type: AttributeType?) -> SQLFragment {
    if case .real(let real) = value, real.isNaN {
      // Compared, it folds to Swift's answer (`compared`); anywhere else, Swift decides.
      return SQLFragment(
        sql: "NULL", kind: kind, isNullable: true, attributeType: type, exactness: .opaque, isNaN: true)
    }
    guard dialect == .postgreSQL else {
      return SQLFragment(sql: "?", arguments: [value], kind: kind, codec: nil, literal: nil, isNullable: value == .null)
    }
    if case .text(let text) = value, text.utf8.contains(0) {
      return SQLFragment(sql: "NULL", kind: kind, isNullable: true, attributeType: type, exactness: .opaque)
    }
    // A nil of no known type: PostgreSQL infers no type for a bare parameter.
    if value == .null && type == nil {
      return SQLFragment(sql: "NULL", kind: kind, codec: nil, literal: nil, isNullable: true)
    }
    return SQLFragment(
      sql: type.map { "CAST(? AS \($0.postgreSQLType))" } ?? "?", arguments: [value], kind: kind, codec: nil,
      literal: nil, isNullable: value == .null, attributeType: type)
  }

  /// Two operands, each literal bound with the other side's codec when it has one.
  func pair(_ left: SQLFragment, _ right: SQLFragment) throws -> (SQLFragment, SQLFragment) {
    func bind(_ fragment: SQLFragment, like other: SQLFragment) throws -> SQLFragment {
      guard let literal = fragment.literal else { return fragment }
      if let codec = other.codec, let value = try codec.encodeAny(literal) {
        return parameter(value, kind: other.kind, type: other.attributeType ?? codec.attributeType)
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
      isNullable: attribute.isOptional, attributeType: attribute.attributeType)
  }

  // MARK: - Values

  /// A Swift value as SQLite stores it, and how it compares.
  static func encode(_ value: Any, store: UUID? = nil) throws -> (PrimitiveValue, SQLValueKind, AttributeType?) {
    if let optional = value as? any AnyOptional, optional.isNone { return (.null, .unknown, nil) }
    if let object = value as? ManagedObject {
      // Its row's key; an object never saved is no row's (keys start at 1).
      guard let key = object.objectKey, !key.isTemporary else { return (.integer(0), .number, .integer64) }
      return (.integer(key.value), .number, .integer64)
    }
    if let id = value as? any ManagedIDConvertible {
      // Its row's key, compared with `pk`; a temporary ID, or one of another store, is no
      // row's.
      let untyped = id.untypedManagedID
      guard let key = untyped.primaryKey, untyped.storeIdentifier == store ?? untyped.storeIdentifier else {
        return (.integer(0), .number, .integer64)
      }
      return (.integer(key), .number, .integer64)
    }
    if let unwrapped = unwrapOptional(value) { return try encode(unwrapped, store: store) }
    if let attributeValue = value as? any AttributeValue {
      let kind: SQLValueKind
      let attributeType = type(of: attributeValue).attributeType
      switch attributeType {
      case .string: kind = .text
      case .decimal: kind = .decimal
      case .binaryData, .uuid: kind = .blob
      case .uri, .codable:
        throw PredicateTranslationError.unsupportedValue(type: name(of: value), operation: "a comparison")
      default: kind = .number
      }
      return (attributeValue.primitiveValue, kind, attributeType)
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

  /// `left symbol right`, where `symbol` is `IS`, `IS NOT` (NULL-safe `==` and `!=`), `<`,
  /// `<=`, `>` or `>=`, answered as Swift does: with SQLite's Swift collations; on PostgreSQL
  /// with strings compared in NFC by code point (Swift's `==` is canonical equivalence and its
  /// `<` orders NFC scalars) and decimals with NaN below every number (Swift's order; `numeric`
  /// puts NaN above). Operands that are not exact narrow nothing.
  func compared(_ left: SQLFragment, _ symbol: String, _ right: SQLFragment) -> SQLFragment {
    // A NaN is unequal to everything and ordered with nothing, nil included, as in Swift.
    if left.isNaN || right.isNaN {
      return SQLFragment(sql: literal(symbol == "IS NOT"), kind: .boolean, isNullable: false)
    }
    // PostgreSQL infers no type for a value compared with a value.
    let untyped = dialect == .postgreSQL && left.sql == "?" && right.sql == "?"
    guard left.exactness == .exact, right.exactness == .exact, !untyped else {
      return SQLFragment(sql: literal(true), kind: .boolean, isNullable: false, exactness: .superset)
    }
    guard dialect == .postgreSQL else {
      return SQLFragment(
        sql: "\(left.sql) \(symbol) \(right.sql)\(Self.collation(left, right))",
        arguments: left.arguments + right.arguments, kind: .boolean, isNullable: false)
    }
    let operation =
      switch symbol {
      case "IS": "IS NOT DISTINCT FROM"
      case "IS NOT": "IS DISTINCT FROM"
      default: symbol
      }
    let (a, b) = (Self.swiftOrdered(left, other: right), Self.swiftOrdered(right, other: left))
    return SQLFragment(
      sql: "\(a.sql) \(operation) \(b.sql)\(left.kind == .text || right.kind == .text ? " COLLATE \"C\"" : "")",
      arguments: a.arguments + b.arguments, kind: .boolean, isNullable: false)
  }

  /// On PostgreSQL, an operand as Swift orders and equates its values: a string in NFC, a
  /// decimal with NaN as `-Infinity` (no `Decimal` is that small); any other as it is.
  static func swiftOrdered(_ fragment: SQLFragment, other: SQLFragment) -> (sql: String, arguments: [PrimitiveValue]) {
    if fragment.kind == .text || other.kind == .text {
      return ("normalize(\(fragment.sql), NFC)", fragment.arguments)
    }
    guard fragment.kind == .decimal || other.kind == .decimal else { return (fragment.sql, fragment.arguments) }
    // The operand twice, so its bound values twice, in order.
    return (
      "(CASE WHEN \(fragment.sql) = 'NaN' THEN CAST('-Infinity' AS numeric) ELSE \(fragment.sql) END)",
      fragment.arguments + fragment.arguments
    )
  }

  /// The exactness of a fragment made of `parts` (a CASE, a coalesce, an arithmetic): exact
  /// when every part is, otherwise opaque.
  static func combined(_ parts: SQLFragment...) -> SQLExactness {
    parts.allSatisfy { $0.exactness == .exact } ? .exact : .opaque
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
    var result = compared(left, symbol, right)
    result.sql = "(\(result.sql))"
    return result
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
    var result = translator.compared(left, symbol, right)
    result.sql = "(\(result.sql))"
    result.isNullable = left.isNullable || right.isNullable
    return result
  }
}

// MARK: - Logic

extension PredicateExpressions.Conjunction: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let left = try translator.condition(lhs)
    let right = try translator.condition(rhs)
    return SQLFragment(
      sql: "(\(left.sql) AND \(right.sql))", arguments: left.arguments + right.arguments, kind: .boolean,
      isNullable: false, exactness: left.exactness == .exact && right.exactness == .exact ? .exact : .superset)
  }
}

extension PredicateExpressions.Disjunction: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let left = try translator.condition(lhs)
    let right = try translator.condition(rhs)
    return SQLFragment(
      sql: "(\(left.sql) OR \(right.sql))", arguments: left.arguments + right.arguments, kind: .boolean,
      isNullable: false, exactness: left.exactness == .exact && right.exactness == .exact ? .exact : .superset)
  }
}

extension PredicateExpressions.Negation: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let inner = try translator.condition(wrapped)
    // A superset's negation is no superset: it narrows nothing.
    guard inner.exactness == .exact else {
      return SQLFragment(sql: translator.literal(true), kind: .boolean, isNullable: false, exactness: .superset)
    }
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
      literal: nil, isNullable: yes.isNullable || no.isNullable, attributeType: yes.attributeType ?? no.attributeType,
      exactness: PredicateTranslator<Entity>.combined(condition, yes, no))
  }
}

// MARK: - Optionals

extension PredicateExpressions.NilCoalesce: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (left, right) = try translator.pair(try translator.fragment(lhs), try translator.fragment(rhs))
    let kind = left.kind == .unknown ? right.kind : left.kind
    return SQLFragment(
      sql: "coalesce(\(left.sql), \(right.sql))", arguments: left.arguments + right.arguments, kind: kind,
      codec: nil, literal: nil, isNullable: right.isNullable, attributeType: left.attributeType ?? right.attributeType,
      exactness: PredicateTranslator<Entity>.combined(left, right))
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
      codec: nil, literal: nil, isNullable: true, graph: body.graph,  // a chain goes on: $0.book?.shelf?.name
      attributeType: body.kind == .boolean ? .boolean : body.attributeType,
      exactness: PredicateTranslator<Entity>.combined(unwrapped, body))
  }
}

// MARK: - Arithmetic

extension PredicateExpressions.Arithmetic: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (left, right) = try translator.pair(try translator.fragment(lhs), try translator.fragment(rhs))
    if left.kind == .decimal || right.kind == .decimal {
      return try translator.decimalArithmetic(op, left, right)
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
    // PostgreSQL's floating point arithmetic makes a NaN that compares equal to itself and
    // above every number (Swift's is unordered): only integer arithmetic is exact there.
    let type = left.attributeType ?? right.attributeType
    let real = [AttributeType.double, .float, .date].contains { $0 == left.attributeType || $0 == right.attributeType }
    return SQLFragment(
      sql: "(\(left.sql) \(symbol) \(right.sql))", arguments: left.arguments + right.arguments, kind: .number,
      codec: nil, literal: nil, isNullable: left.isNullable || right.isNullable, attributeType: type,
      exactness: translator.dialect == .postgreSQL && (real || type == nil)
        ? .opaque : PredicateTranslator<Entity>.combined(left, right))
  }
}

extension PredicateExpressions.UnaryMinus: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let operand = try translator.bound(try translator.fragment(wrapped))
    if operand.kind == .decimal {
      // Swift's prefix `-` on `Decimal`, whose NaN stays NaN (as `numeric`'s does).
      return SQLFragment(
        sql: translator.dialect == .sqlite ? "swift_decimal_negate(\(operand.sql))" : "(-\(operand.sql))",
        arguments: operand.arguments, kind: .decimal, codec: nil,
        literal: nil, isNullable: operand.isNullable, attributeType: .decimal, exactness: operand.exactness)
    }
    guard operand.kind == .number || operand.kind == .unknown else {
      throw PredicateTranslationError.unsupportedValue(type: "non-numeric", operation: "unary minus")
    }
    return SQLFragment(
      sql: "(-\(operand.sql))", arguments: operand.arguments, kind: .number, codec: nil, literal: nil,
      isNullable: operand.isNullable, attributeType: operand.attributeType, exactness: operand.exactness)
  }
}

extension PredicateTranslator {
  /// `+`, `-` or `*` of decimals: Swift's own operators, called by SQLite (`SwiftDecimalFunctions`),
  /// so that the digits kept, the rounding and NaN are Swift's.
  func decimalArithmetic(
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
    // Only SQLite runs Swift's decimal arithmetic (PostgreSQL's `numeric` keeps every digit).
    return SQLFragment(
      sql: "\(function)(\(left.sql), \(right.sql))", arguments: left.arguments + right.arguments, kind: .decimal,
      codec: nil, literal: nil, isNullable: left.isNullable || right.isNullable, attributeType: .decimal,
      exactness: dialect == .postgreSQL ? .opaque : .exact)
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
    var tests: [SQLFragment] = []
    func test(_ bound: Any, below: Bool, orEqual: Bool) throws {
      let value = SQLFragment(sql: "?", kind: .unknown, codec: nil, literal: bound, isNullable: true)
      let (x, limit) = try translator.pair(element, value)
      guard x.kind != .blob && limit.kind != .blob else {
        throw PredicateTranslationError.unsupportedValue(type: "Data or UUID", operation: "a range")
      }
      tests.append(translator.compared(limit, (below ? "<" : ">") + (orEqual ? "=" : ""), x))
    }
    if let lower { try test(lower, below: true, orEqual: true) }
    if let upper { try test(upper, below: false, orEqual: isClosed) }
    guard !tests.isEmpty else { return SQLFragment(sql: translator.literal(true), kind: .boolean, isNullable: false) }
    return SQLFragment(
      sql: "(" + tests.map(\.sql).joined(separator: " AND ") + ")", arguments: tests.flatMap(\.arguments),
      kind: .boolean, isNullable: element.isNullable,
      exactness: tests.allSatisfy { $0.exactness == .exact } ? .exact : .superset)
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
    return translator.searched(
      whole, part, sqlite: { "swift_contains(\($0), \($1))" }, postgreSQL: { "strpos(\($0), \($1)) > 0" })
  }
}

extension PredicateExpressions.SequenceStartsWith: SQLTranslatable {
  func translate<Entity: ManagedObject>(_ translator: inout PredicateTranslator<Entity>) throws -> SQLFragment {
    let (whole, start) = try translator.pair(try translator.fragment(base), try translator.fragment(prefix))
    guard whole.kind == .text || start.kind == .text else {
      throw PredicateTranslationError.unsupportedValue(
        type: "a sequence that is not a String", operation: "starts(with:)")
    }
    return translator.searched(
      whole, start, sqlite: { "swift_starts_with(\($0), \($1))" }, postgreSQL: { "starts_with(\($0), \($1))" })
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
    var tests: [SQLFragment] = []
    for item in items {
      let (value, kind, type) =
        try member.codec.flatMap { codec in
          try codec.encodeAny(item).map { ($0, member.kind, member.attributeType ?? codec.attributeType) }
        }
        ?? PredicateTranslator<Entity>.encode(item, store: translator.storeIdentifier)
      tests.append(translator.compared(member, "IS", translator.parameter(value, kind: kind, type: type)))
    }
    guard !tests.isEmpty else { return SQLFragment(sql: translator.literal(false), kind: .boolean, isNullable: false) }
    return SQLFragment(
      sql: "(" + tests.map(\.sql).joined(separator: " OR ") + ")", arguments: tests.flatMap(\.arguments),
      kind: .boolean, isNullable: false, exactness: tests.allSatisfy { $0.exactness == .exact } ? .exact : .superset)
  }
}

extension PredicateTranslator {
  /// `whole.contains(part)` or `whole.starts(with: part)` on strings, as collections of
  /// characters: Swift's own function on SQLite (`SwiftStringFunctions`); on PostgreSQL a
  /// search of the NFC forms, true wherever Swift's is (a superset, checked in Swift).
  func searched(
    _ whole: SQLFragment, _ part: SQLFragment, sqlite: (String, String) -> String,
    postgreSQL: (String, String) -> String
  ) -> SQLFragment {
    let arguments = whole.arguments + part.arguments
    guard dialect == .postgreSQL else {
      return SQLFragment(
        sql: sqlite(whole.sql, part.sql), arguments: arguments, kind: .boolean, isNullable: false)
    }
    guard whole.exactness == .exact, part.exactness == .exact else {
      return SQLFragment(sql: literal(true), kind: .boolean, isNullable: false, exactness: .superset)
    }
    return SQLFragment(
      sql: "(" + postgreSQL("normalize(\(whole.sql), NFC)", "normalize(\(part.sql), NFC)") + ")",
      arguments: arguments, kind: .boolean, isNullable: false, exactness: .superset)
  }
}
