import Foundation
import Testing
import TypedStoreTesting

@testable import TypedStore

enum BookingError: Error, Equatable {
  case emptyTitle, endsBeforeStart, locked
}

/// What `validateForUpdate()` saw changed, by booking title.
private let validatedKeys = Recorder<String>()

/// A booking that validates as a Core Data user writes it (issue 25, item 2).
final class Booking: ManagedObject {
  @Attribute var title: String = ""
  @Attribute var start: Int = 0
  @Attribute var end: Int = 0
  @Attribute var locked: Bool = false

  override func validateForInsert() throws {
    try super.validateForInsert()
    if title.isEmpty { throw BookingError.emptyTitle }
    if end < start { throw BookingError.endsBeforeStart }
  }
  override func validateForUpdate() throws {
    try super.validateForUpdate()
    for key in changedAttributeNames.sorted() { validatedKeys.add("\(title) \(key)") }
    if end < start { throw BookingError.endsBeforeStart }
  }
  override func validateForDelete() throws {
    try super.validateForDelete()
    if locked { throw BookingError.locked }
  }
}

private let bookingModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Booking.self) } catch { fatalError("fixture model: \(error)") }
}()

@Suite struct ValidationHookTests {
  private func rows(_ container: PersistentContainer) async throws -> Int {
    try await container.performBackgroundTask { context in try context.count(for: FetchRequest<Booking>()) }
  }

  @Test func aSaveCollectsEveryObjectsFailuresAndWritesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: bookingModel)
    let failures = try await container.performBackgroundTask { context -> [ValidationFailure] in
      let empty = Booking(context: context)
      empty.start = 5
      empty.end = 1
      let backwards = Booking(context: context)
      backwards.title = "v1 backwards"
      backwards.start = 3
      let fine = Booking(context: context)
      fine.title = "v1 fine"
      do {
        try context.save()
        Issue.record("the save went through")
        return []
      } catch StoreError.validationFailed(let failures) {
        let pending = context.hasChanges
        #expect(pending, "the changes stay pending")
        // context.validate() says the same, writing nothing either.
        #expect(throws: StoreError.self) { try context.validate() }
        empty.title = "v1 empty"
        empty.end = 9
        backwards.end = 4
        try context.validate()
        try context.save()
        return failures
      }
    }
    #expect(failures.count == 2, "one per object: each object's validation throws its first error")
    #expect(failures.map(\.property) == ["", ""])
    #expect(failures.map { $0.error as? BookingError } == [.emptyTitle, .endsBeforeStart])
    #expect(failures.allSatisfy { if case .rejected = $0.reason { true } else { false } })
    #expect(try await rows(container) == 3)
  }

  @Test func anUpdateValidatesItsChangedAttributesAndADeleteItsObject() async throws {
    let container = try PersistentContainer.makeTest(model: bookingModel)
    let id = try await container.performBackgroundTask { context in
      let booking = Booking(context: context)
      booking.title = "v2"
      booking.end = 10
      booking.locked = true
      try context.save()
      return booking.managedID
    }
    let updateFailures = try await container.performBackgroundTask { context -> [ValidationFailure] in
      let booking = try context.existingObject(with: id)
      booking.start = 20  // after its end
      do {
        try context.save()
        return []
      } catch StoreError.validationFailed(let failures) {
        context.rollback()
        return failures
      }
    }
    #expect(updateFailures.map { $0.error as? BookingError } == [.endsBeforeStart])
    #expect(validatedKeys.all.filter { $0.hasPrefix("v2 ") } == ["v2 start"], "it saw its one changed attribute")
    let deleteFailures = try await container.performBackgroundTask { context -> [ValidationFailure] in
      context.delete(try context.existingObject(with: id))
      do {
        try context.save()
        return []
      } catch StoreError.validationFailed(let failures) {
        return failures
      }
    }
    #expect(deleteFailures.map { $0.error as? BookingError } == [.locked])
    #expect(try await rows(container) == 1, "the locked booking was not deleted")
  }
}

/// Committed and changed values (issue 25, item 3, its attribute part).
@Suite struct ChangedValuesTests {
  @Test func committedValuesAreTheSavedOnesWhileAChangeIsPending() async throws {
    let container = try PersistentContainer.makeTest(model: bookingModel)
    try await container.performBackgroundTask { context in
      let booking = Booking(context: context)
      booking.title = "first"
      #expect(booking.committedValues().isEmpty, "nothing saved yet")
      #expect(booking.committedValue(for: \Booking.title) == nil)
      #expect(Set(booking.changedValues().keys) == ["title", "start", "end", "locked"])
      #expect(booking.hasPersistentChangedValues)
      try context.save()
      #expect(!booking.hasPersistentChangedValues && booking.changedValues().isEmpty)

      booking.title = "second"
      booking.end = 7
      #expect(booking.committedValues(forKeys: ["title"])["title"] as? String == "first")
      #expect(booking.committedValues()["end"] as? Int == 0)
      #expect(booking.committedValues()["start"] as? Int == 0, "unchanged: its current value")
      #expect(booking.committedValue(for: \Booking.title) == "first")
      #expect(booking.committedValue(for: \Booking.end) == 0)
      let changed = booking.changedValues()
      #expect(Set(changed.keys) == ["title", "end"] && changed["title"] as? String == "second")
      #expect(booking.hasPersistentChangedValues)
      try context.save()
      #expect(booking.committedValue(for: \Booking.title) == "second")
      #expect(booking.changedValues().isEmpty)
    }
  }

  @Test func aMergeMovesTheCommittedValuesAndKeepsThePendingChange() async throws {
    let container = try PersistentContainer.makeTest(model: bookingModel)
    let mine = container.newBackgroundContext()
    let id = try await mine.perform { context in
      let booking = Booking(context: context)
      booking.title = "saved"
      try context.save()
      booking.title = "mine"
      return booking.managedID
    }
    try await container.performBackgroundTask { context in
      let booking = try context.existingObject(with: id)
      booking.title = "theirs"
      booking.end = 9
      try context.save()
    }
    try await mine.perform { context in
      let booking = try context.existingObject(with: id)
      #expect(booking.committedValue(for: \Booking.title) == "saved", "what this context read")
      context.refresh(booking, mergeChanges: true)
      #expect(booking.title == "mine" && booking.end == 9, "the pending change stays, the rest merges")
      #expect(booking.committedValue(for: \Booking.title) == "theirs", "the store's value now")
      #expect(booking.committedValue(for: \Booking.end) == 9)
      #expect(Set(booking.changedValues().keys) == ["title"])
    }
  }
}

enum GuestError: Error, Equatable {
  case emptyName
  case notAnEmail(String)
  case tooManyGuests
}

/// The names `Guest.name`'s validation was called with.
private let checkedNames = Recorder<String>()

/// A guest whose attributes validate themselves, Core Data's `validate<Key>` as
/// `@Attribute(validate:)` (issue 25, item 2).
final class Guest: ManagedObject {
  @Attribute(validate: { name in
    checkedNames.add(name)
    if name.isEmpty { throw GuestError.emptyName }
  })
  var name: String = ""
  @Attribute(validate: { email in
    if let email, !email.contains("@") { throw GuestError.notAnEmail(email) }
  })
  var email: String? = nil
  @Attribute(bounds: 1...4, validate: { if $0 == 3 { throw GuestError.tooManyGuests } })
  var party: Int = 1
  @Attribute var note: String = ""
}

private let guestModel: ManagedObjectModel = {
  do { return try ManagedObjectModel(Guest.self) } catch { fatalError("fixture model: \(error)") }
}()

@Suite struct AttributeValidationTests {
  @Test func aSaveCollectsEveryAttributesFailuresAndWritesNothing() async throws {
    let container = try PersistentContainer.makeTest(model: guestModel)
    let failures = try await container.performBackgroundTask { context -> [ValidationFailure] in
      let first = Guest(context: context)
      first.email = "nowhere"
      let second = Guest(context: context)
      second.name = "Ada"
      second.party = 3
      let third = Guest(context: context)
      third.name = "Bob"
      third.party = 9
      do {
        try context.save()
        Issue.record("the save went through")
        return []
      } catch StoreError.validationFailed(let failures) {
        let pending = context.hasChanges
        #expect(pending)
        first.name = "Cy"
        first.email = "cy@example.com"
        second.party = 2
        third.party = 4
        try context.save()
        return failures
      }
    }
    #expect(failures.map(\.property) == ["name", "email", "party", "party"])
    #expect(
      failures.map { $0.error as? GuestError } == [.emptyName, .notAnEmail("nowhere"), .tooManyGuests, nil])
    #expect(failures[3].reason == .outOfBounds(value: "9", bounds: "1...4"))
    #expect(failures[0].reason == .rejected("emptyName"))
    let saved = try await container.performBackgroundTask { context in
      try context.fetch(FetchRequest<Guest>(sortBy: [SortDescriptor(\.name)])).map(\.name)
    }
    #expect(saved == ["Ada", "Bob", "Cy"])
    let entity = try #require(guestModel.entity(for: Guest.self))
    #expect(entity.attribute(named: "name")?.hasValidation == true)
    #expect(entity.attribute(named: "note")?.hasValidation == false)
  }

  @Test func anAttributesValidationRunsOnlyWhenItsValueIsNewOrChanged() async throws {
    let container = try PersistentContainer.makeTest(model: guestModel)
    let marker = "guest-\(UUID())"
    try await container.performBackgroundTask { context in
      Guest(context: context).name = marker
      try context.save()
      let guest = try #require(try context.fetch(FetchRequest<Guest>()).first)
      guest.note = "only the note changes"
      try context.save()
      #expect(checkedNames.all.filter { $0 == marker }.count == 1, "checked at insert only")
      guest.name = marker + "!"
      try context.save()
      #expect(checkedNames.all.filter { $0 == marker + "!" }.count == 1, "checked when changed")
    }
  }

  @Test func validateValueChecksACandidateWithoutSettingIt() async throws {
    let container = try PersistentContainer.makeTest(model: guestModel)
    try await container.performBackgroundTask { context in
      let guest = Guest(context: context)
      guest.name = "Ada"
      try guest.validateValue("Bea", for: \Guest.name)
      do {
        try guest.validateValue("", for: \Guest.name)
        Issue.record("an empty name passed")
      } catch StoreError.validationFailed(let failures) {
        #expect(failures.map(\.property) == ["name"])
        #expect(failures.first?.error as? GuestError == .emptyName)
      }
      #expect(throws: StoreError.self) { try guest.validateValue(7, for: \Guest.party) }
      try guest.validateValue(nil, for: \Guest.email)
      #expect(guest.name == "Ada", "nothing is set")
    }
    let loose = Guest()
    #expect(throws: StoreError.self) { try loose.validateValue("x", for: \Guest.name) }
  }
}
