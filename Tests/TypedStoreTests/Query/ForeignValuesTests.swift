import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

/// Rows changed by another tool: fetches read values of the attribute's own storage class
/// directly and convert or refuse the rest, and a refused fetch leaves the context as it was.
@Suite struct ForeignValuesTests {
  /// Saves two `AllTypes` objects and returns the container and their IDs.
  private func saved(function: String = #function) async throws -> (PersistentContainer, [ManagedID<AllTypes>]) {
    let container = try PersistentContainer.makeTest(model: allTypesModel, function: function)
    let ids = try await container.performBackgroundTask { context in
      let objects = (0..<2).map { index in
        let object = AllTypes(context: context)
        object.int = index
        object.string = "object \(index)"
        return object
      }
      try context.save()
      return objects.map(\.managedID)
    }
    return (container, ids)
  }

  /// Runs `sql` on the store file through a connection of its own, as another tool would.
  private func otherTool(_ container: PersistentContainer, _ sql: String) throws {
    let connection = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
    try connection.execute(sql)
  }

  @Test func valuesOfAnotherStorageClassAreConvertedWhenExact() async throws {
    let (container, ids) = try await saved()
    // REAL affinity keeps 7 as 7.0, INTEGER affinity turns 4.0 into 4: both read back exactly;
    // a whole REAL that INTEGER affinity cannot change (too large) is refused below.
    try otherTool(container, #"UPDATE "AllTypes" SET "double" = 7, "int" = 4.0, "optionalInt" = NULL WHERE pk = 1"#)
    let values = try await container.newBackgroundContext().perform { context in
      let object = try context.existingObject(with: ids[0])
      return (object.double, object.int, object.optionalInt)
    }
    #expect(values.0 == 7)
    #expect(values.1 == 4)
    #expect(values.2 == nil)
  }

  @Test func valuesThatDoNotFitThrowAndLeaveTheContextAsItWas() async throws {
    let (container, ids) = try await saved()
    try otherTool(container, #"UPDATE "AllTypes" SET "int" = 'twelve' WHERE pk = 2"#)
    let outcome = try await container.newBackgroundContext().perform { context in
      let first = try context.existingObject(with: ids[0])
      var thrown: (any Error)?
      do {
        _ = try context.fetch(FetchRequest<AllTypes>())
      } catch {
        thrown = error
      }
      // The object registered before the failed fetch is still the registered one, and the
      // row that could not be read did not leave a half-loaded object behind.
      let stillRegistered = try context.registeredObject(for: ids[0]) === first
      let badRegistered = try context.registeredObject(for: ids[1]) != nil
      return ((thrown as? AttributeDecodingError)?.found, stillRegistered, badRegistered, first.string)
    }
    #expect(outcome.0 == .text("twelve"))
    #expect(outcome.1)
    #expect(!outcome.2)
    #expect(outcome.3 == "object 0")
  }

  @Test func textWhereANumberBelongsAndBlobsWhereTextBelongsAreRefused() async throws {
    let (container, ids) = try await saved()
    try otherTool(container, #"UPDATE "AllTypes" SET "string" = x'00ff' WHERE pk = 1"#)
    try otherTool(container, #"UPDATE "AllTypes" SET "bool" = 2.5 WHERE pk = 2"#)
    let found = await container.newBackgroundContext().perform { context in
      ids.map { id -> PrimitiveValue? in
        do {
          _ = try context.existingObject(with: id)
          return nil
        } catch {
          return (error as? AttributeDecodingError)?.found
        }
      }
    }
    #expect(found == [.blob(Data([0x00, 0xff])), .real(2.5)])
  }

  @Test func decimalTextIsReadOnlyWhenItIsANumberAsAWhole() async throws {
    let (container, ids) = try await saved()
    let read: [(String, Decimal?)] = [
      ("1.0", 1), ("+5", 5), ("1E2", 100), (".5", Decimal(5) / 10), ("-0.50", Decimal(-5) / 10), ("NaN", .nan),
      ("1abc", nil), (" 1", nil), ("-", nil), ("", nil), ("1e", nil), ("1,5", nil), ("nan", nil), ("e5", nil),
      ("1e200", nil),
    ]
    for (text, expected) in read {
      let update = try SQLiteConnection(path: container.persistentStore.url.path, mode: .readWrite)
      let statement = try update.statement(#"UPDATE "AllTypes" SET "decimal" = ? WHERE pk = 1"#)
      statement.bind(text, at: 1)
      try statement.run()
      let value = await container.newBackgroundContext().perform { context -> Result<Decimal, any Error> in
        Result { try context.existingObject(with: ids[0]).decimal }
      }
      switch (value, expected) {
      case (.success(let value), let expected?):
        #expect(expected.isNaN ? value.isNaN : value == expected, "\(text)")
      case (.failure(let error), nil):
        #expect((error as? AttributeDecodingError)?.found == .text(text), "\(text)")
      default: Issue.record("\(text) read as \(value), expected \(String(describing: expected))")
      }
    }
  }
}
