import Foundation
import Testing

@testable import TypedStore

final class BadColumnName: ManagedObject {
  @Attribute(persistentName: "has space") var name: String = ""
}

final class ReservedColumn: ManagedObject {
  @Attribute(persistentName: "pk") var key: Int = 0
}

final class DuplicateColumn: ManagedObject {
  @Attribute var title: String = ""
  @Attribute(persistentName: "title") var otherTitle: String = ""
}

class Base: ManagedObject {
  @Attribute var name: String = ""
}

final class Derived: Base {
  @Attribute var extra: Int = 0
}

final class ClashingDerived: Base {
  @Attribute(persistentName: "NAME") var shadow: String = ""
}

final class AssignsAttributeInInit: ManagedObject {
  @Attribute var count: Int = 0

  required init() {
    super.init()
    _count = Attribute(wrappedValue: 5, unique: true)
  }
}

final class Transient: ManagedObject {
  @Attribute var stored: String = ""
  var notStored = 5
}

@Suite struct ModelTests {
  @Test func modelDescribesEntitiesAttributesAndHierarchy() throws {
    let model = try ManagedObjectModel(Derived.self, Base.self)
    #expect(model.entities.map(\.name) == ["Base", "Derived"])  // superentities first
    let derived = try #require(model.entity(for: Derived.self))
    #expect(derived.superentityName == "Base")
    #expect(derived.tableName == "Base")
    #expect(derived.attributes.map(\.name) == ["name", "extra"])
    #expect(derived.attributes.map(\.entityName) == ["Base", "Derived"])
    #expect(model.entity(named: "Base")?.subentityNames == ["Derived"])
    #expect(model.isEntity("Derived", kindOf: "Base"))
    #expect(!model.isEntity("Base", kindOf: "Derived"))
  }

  @Test func attributeDescriptionsCarryTypesAndOptions() throws {
    let note = try #require(notesModel.entity(for: Note.self))
    let created = try #require(note.attribute(named: "createdAt"))
    #expect(created.columnName == "created")
    #expect(created.attributeType == .date)
    #expect(created.isOptional)
    let status = try #require(note.attribute(named: "status"))
    #expect(status.attributeType == .string)
    #expect(status.storage == .raw)
    #expect(!status.isOptional)
    let options = try #require(note.attribute(named: "options"))
    #expect(options.attributeType == .codable)
    #expect(options.isOptional)
    #expect(note.attribute(named: "uuid")?.isPreservedOnDeletion == true)
    let tag = try #require(try ManagedObjectModel(Tag.self).entity(for: Tag.self))
    #expect(tag.attribute(named: "name")?.isUnique == true)
    #expect(tag.attribute(named: "weight")?.isIndexed == true)
  }

  @Test func storedPropertiesWithoutAttributeAreNotPersisted() throws {
    let entity = try #require(try ManagedObjectModel(Transient.self).entity(for: Transient.self))
    #expect(entity.attributes.map(\.name) == ["stored"])
  }

  @Test func invalidDeclarationsThrowModelErrorsNamingEntityAndProperty() {
    #expect(throws: ModelError(entity: "BadColumnName", property: "name", reason: .invalidName("has space"))) {
      try ManagedObjectModel(BadColumnName.self)
    }
    #expect(throws: ModelError(entity: "ReservedColumn", property: "key", reason: .invalidName("pk"))) {
      try ManagedObjectModel(ReservedColumn.self)
    }
    #expect(throws: ModelError(entity: "DuplicateColumn", property: "otherTitle", reason: .duplicateColumn("title"))) {
      try ManagedObjectModel(DuplicateColumn.self)
    }
    #expect(throws: ModelError(entity: "ClashingDerived", property: "shadow", reason: .duplicateColumn("NAME"))) {
      try ManagedObjectModel(Base.self, ClashingDerived.self)
    }
    #expect(throws: ModelError(entity: "Derived", reason: .missingSuperentity("Base"))) {
      try ManagedObjectModel(Derived.self)
    }
    #expect(throws: ModelError(entity: "Folder", reason: .duplicateEntity)) {
      try ManagedObjectModel(Folder.self, Folder.self)
    }
    #expect(throws: ModelError(entity: "", reason: .noEntities)) { try ManagedObjectModel([]) }
    #expect(throws: ModelError(entity: "AssignsAttributeInInit", reason: .unreadableLayout)) {
      try ManagedObjectModel(AssignsAttributeInInit.self)
    }
  }

  @Test func versionHashIsStableAndFollowsTheStoredShape() throws {
    let first = try ManagedObjectModel(Folder.self, Note.self, Checklist.self)
    let second = try ManagedObjectModel(Checklist.self, Note.self, Folder.self)
    #expect(first.versionHash == notesModel.versionHash)
    #expect(first.versionHash.count == 64)
    #expect(try ManagedObjectModel(Folder.self).versionHash != first.versionHash)
    #expect(second.versionHash == first.versionHash)  // the order classes are listed in does not matter
    #expect(second.entities.map(\.name) == ["Folder", "Note", "Checklist"])  // superentities first, then by name
  }

  @Test func jsonFormDescribesTheModelWithoutItsClasses() throws {
    let schema = try JSONDecoder().decode(ModelSchema.self, from: notesModel.jsonRepresentation)
    #expect(schema == notesModel.schema)
    let note = try #require(schema.entities.first { $0.name == "Note" })
    #expect(note.table == "Note")
    #expect(note.attributes.map(\.name) == ["title", "createdAt", "status", "options", "uuid"])
    #expect(note.attributes[1].column == "created")
    let checklist = try #require(schema.entities.first { $0.name == "Checklist" })
    #expect(checklist.superentity == "Note")
    #expect(checklist.attributes.map(\.name) == ["itemCount"])
  }

  @Test func sha256MatchesTheStandardVectors() {
    #expect(SHA256.hex(of: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(SHA256.hex(of: [UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(
      SHA256.hex(of: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
        == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
  }
}
