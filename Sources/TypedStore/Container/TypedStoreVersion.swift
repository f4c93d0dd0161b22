/// The library's version.
///
/// ```swift
/// print(TypedStoreVersion.current)   // "0.3.0"
/// ```
public enum TypedStoreVersion {
  /// The version of this build of TypedStore.
  public static let current = "0.8.0"
}
