/// The argument of `@Attribute(.codable)`.
public struct CodableStorage: Sendable {
  /// Store the value as JSON text.
  public static let codable = CodableStorage()
}
