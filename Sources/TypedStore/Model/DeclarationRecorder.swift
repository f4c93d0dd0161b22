import Foundation
import Synchronization

/// Collects the declarations `@Attribute` initializers make while the model builds an
/// entity's prototype object.
///
/// An attribute's options (`persistentName:`, `unique:`, its storage kind) are only needed
/// once, when the model is built, so objects do not carry them: every `Attribute` field would
/// grow by 27 bytes, and a fetch writes hundreds of thousands of them. Instead, while the model
/// creates one prototype object, each initializer that runs on that thread hands its
/// declaration here. Initializers run in declaration order, a subclass's before its
/// superclass's; the model maps them back to the fields (`ManagedObjectModel`).
@usableFromInline
enum DeclarationRecorder {
  /// Whether a model is being built somewhere; initializers test this (one relaxed load)
  /// before doing anything else.
  @usableFromInline static let isActive = Atomic<Bool>(false)

  private struct Session {
    var thread: UInt = 0
    var declarations: [AttributeDeclaration] = []
    var relationships: [RelationshipDeclaration] = []
  }

  private static let session = Mutex(Session())
  /// Serializes model builds across threads.
  private static let builds = Mutex(())

  @usableFromInline
  static func record(_ declaration: AttributeDeclaration) {
    let thread = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
    session.withLock { session in
      if session.thread == thread { session.declarations.append(declaration) }
    }
  }

  @usableFromInline
  static func record(_ declaration: RelationshipDeclaration) {
    let thread = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
    session.withLock { session in
      if session.thread == thread { session.relationships.append(declaration) }
    }
  }

  /// Runs `makePrototype` and returns the declarations its initializers recorded, in order:
  /// the attributes' and the relationships'.
  static func declarations(recordedBy makePrototype: () -> Void) -> (
    attributes: [AttributeDeclaration], relationships: [RelationshipDeclaration]
  ) {
    builds.withLock { _ in
      let thread = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
      session.withLock { $0 = Session(thread: thread, declarations: []) }
      isActive.store(true, ordering: .sequentiallyConsistent)
      makePrototype()
      isActive.store(false, ordering: .sequentiallyConsistent)
      return session.withLock { session in
        defer { session = Session() }
        return (session.declarations, session.relationships)
      }
    }
  }
}
