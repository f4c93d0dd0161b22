/// `Optional` of a `RawRepresentable` whose raw value is an `AttributeValue`.
@_documentation(visibility: internal)
public protocol OptionalRawRepresentable: ExpressibleByNilLiteral {
  associatedtype WrappedRaw: RawRepresentable where WrappedRaw.RawValue: AttributeValue
  init(wrappedRaw: WrappedRaw?)
  var wrappedRaw: WrappedRaw? { get }
}

extension Optional: OptionalRawRepresentable
where Wrapped: RawRepresentable, Wrapped.RawValue: AttributeValue {
  /// The optional holding `wrappedRaw`.
  public init(wrappedRaw: Wrapped?) { self = wrappedRaw }
  /// The wrapped value, or nil.
  public var wrappedRaw: Wrapped? { self }
}
