import Foundation
import Testing
import TypedStore

// Every precondition and fatal error of the library that a user's call can reach, each run in
// a child process by an exit test: the program stops, and (where the toolchain prints it) the
// message says what was wrong. Traps that only an internal inconsistency can reach are listed
// in docs/testing.md, not here. The three traps of objects of another context or store are in
// Context/ForeignIDTests.swift.

/// Whether a stopped program prints its precondition's message: `-O` builds trap without it
/// (Swift prints `precondition` and `preconditionFailure` messages only in `-Onone` builds;
/// `fatalError` messages always).
#if DEBUG
  let preconditionMessagesArePrinted = true
#else
  let preconditionMessagesArePrinted = false
#endif

/// Claims, from synchronous code off its executor, to be isolated to `actor`.
func assumeIsolation(of actor: some Actor) {
  actor.assumeIsolated { _ in }
}

/// What an exit test's child wrote on its standard error.
func standardError(of result: ExitTest.Result?) -> String {
  String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

@Suite struct TrapTests {
  @Test func insertingAnObjectOfAnotherContextStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: notesModel, variant: "child")
      let one = container.newModelContext()
      let two = container.newModelContext()
      let note = Note()
      one.insert(note)
      two.insert(note)
    }
    if preconditionMessagesArePrinted {
      #expect(standardError(of: result).contains("cannot insert"))
      #expect(standardError(of: result).contains("an object of another context"))
    }
  }

  @Test func insertingAnObjectWhoseClassIsNotInTheModelStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: notesModel, variant: "child")
      container.newModelContext().insert(Shelf())
    }
    if preconditionMessagesArePrinted {
      #expect(standardError(of: result).contains("Shelf is not an entity of this context's model"))
    }
  }

  @Test func insertingThroughTheRelationshipHelpersOfAnObjectInNoContextStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      Shelf().$books.insert(Book())
    }
    if preconditionMessagesArePrinted {
      #expect(
        standardError(of: result).contains("insert the object into a context before using its relationship helpers"))
    }
  }

  @Test func removingThroughTheRelationshipHelpersOfAnObjectInNoContextStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      Shelf().$books.remove(Book())
    }
    if preconditionMessagesArePrinted {
      #expect(
        standardError(of: result).contains("insert the object into a context before using its relationship helpers"))
    }
  }

  @Test func relatingAnObjectWhoseContextWasResetStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: graphModel, variant: "child")
      let one = container.newModelContext()
      let two = container.newModelContext()
      let shelf = Shelf(context: one)
      one.reset()
      shelf.$books.insert(Book(context: two))
    }
    if preconditionMessagesArePrinted {
      #expect(standardError(of: result).contains("a relationship cannot join objects of different contexts"))
    }
  }

  @Test func theIDOfAnObjectInNoContextStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = Note().managedID
    }
    if preconditionMessagesArePrinted {
      #expect(standardError(of: result).contains("Note has no ID before it is inserted into a context"))
    }
  }

  @Test func anIndexPastTheEndOfABatchedFetchStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: notesModel, variant: "child")
      let context = container.newModelContext()
      Note(context: context).title = "only"
      try context.save()
      let results = try context.fetch(FetchRequest<Note>(), batchSize: 10)
      _ = results[results.count].title
    }
    if preconditionMessagesArePrinted {
      #expect(standardError(of: result).contains("index 1 out of range"))
    }
  }

  @Test func readingAFaultAfterItsContextWasResetStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: notesModel, variant: "child")
      let writer = container.newModelContext()
      let saved = Note(context: writer)
      try writer.save()
      let context = container.newModelContext()
      let fault = try context.object(with: saved.managedID)
      context.reset()
      _ = fault.title
    }
    #expect(standardError(of: result).contains("a fault was read after its context was deallocated or reset"))
  }

  @Test func readingAFaultWhoseRowIsGoneWithoutDeletingInaccessibleFaultsStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: notesModel, variant: "child")
      let writer = container.newModelContext()
      let saved = Note(context: writer)
      try writer.save()
      let context = container.newModelContext()
      context.shouldDeleteInaccessibleFaults = false
      let fault = try context.object(with: saved.managedID)
      writer.delete(saved)
      try writer.save()
      _ = fault.title
    }
    #expect(standardError(of: result).contains("cannot fulfil a fault for"))
  }

  @Test func assumingTheIsolationOfAModelActorOffItsExecutorStopsTheProgram() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let container = try PersistentContainer.makeTest(model: notesModel, variant: "child")
      assumeIsolation(of: NoteImporter(container: container))
    }
    if preconditionMessagesArePrinted {
      #expect(standardError(of: result).contains("not on the context's executor"))
    }
  }
}
