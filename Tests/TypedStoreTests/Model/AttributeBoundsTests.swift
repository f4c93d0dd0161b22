import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

final class Patient: ManagedObject {
  @Attribute(bounds: 0...150) var age: Int = 0
  @Attribute(bounds: 1...5) var rating: Int? = nil
  @Attribute(bounds: "A"..."Z") var ward: String = "A"
  @Attribute(bounds: 0.0...) var weight: Double = 0
}

@Suite struct AttributeBoundsTests {
  @Test func aSaveListsEveryValueOutOfBoundsAndWritesNothing() async throws {
    let model = try ManagedObjectModel(Patient.self)
    #expect(model.entity(for: Patient.self)?.attribute(named: "age")?.bounds == "0...150")
    #expect(String(decoding: model.jsonRepresentation, as: UTF8.self).contains("\"bounds\":\"1...5\""))
    let container = try PersistentContainer.makeTest(model: model)
    let id = try await container.newBackgroundContext().perform { context in
      let patient = Patient(context: context)
      patient.age = 200
      patient.rating = 9
      patient.ward = "b"  // after "Z" as Swift compares strings
      patient.weight = -1
      do {
        try context.save()
        Issue.record("the save should have failed")
      } catch StoreError.validationFailed(let failures) {
        #expect(Set(failures.map(\.property)) == ["age", "rating", "ward", "weight"])
        #expect(failures.contains { $0.reason == .outOfBounds(value: "200", bounds: "0...150") })
      }
      patient.age = 150
      patient.rating = nil  // nil is within any bounds
      patient.ward = "Q"
      patient.weight = 70.5
      try context.save()
      return patient.managedID
    }
    // An update is checked too, and a failed save leaves the row as it was.
    try await container.newBackgroundContext().perform { context in
      let patient = try context.existingObject(with: id)
      patient.age = -1
      #expect(throws: StoreError.self) { try context.save() }
    }
    let age = try await container.newBackgroundContext().perform { context in try context.existingObject(with: id).age }
    #expect(age == 150)
  }
}

extension AttributeBoundsTests {
  @Test func batchRequestsSkipValidationAsCoreDataDoes() async throws {
    let container = try PersistentContainer.makeTest(model: try ManagedObjectModel(Patient.self))
    let ages = try await container.newBackgroundContext().perform { context in
      _ = try context.execute(BatchInsertRequest<Patient>(count: 2) { _, patient in patient.age = 10 })
      _ = try context.execute(BatchUpdateRequest<Patient>(propertiesToUpdate: [.set(\.age, 999)]))
      return try context.fetch(FetchRequest<Patient>()).map(\.age)
    }
    #expect(ages == [999, 999])
  }
}
