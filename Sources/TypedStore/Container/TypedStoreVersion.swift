/// The library's version.
///
/// ```swift
/// print(TypedStoreVersion.current)   // "0.1.0"
/// ```
public enum TypedStoreVersion {
  /// The version of this build of TypedStore.
  public static let current = "0.1.0"
}
