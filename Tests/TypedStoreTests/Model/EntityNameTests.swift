import Foundation
import Testing
import TypedStore
import TypedStoreTesting

class TaskItem: ManagedObject {
  override class var entityName: String { "Task" }
  @Attribute var title: String = ""
}

final class UrgentTaskItem: TaskItem {  // inherits the override: named after its class
  @Attribute var deadline: Date? = nil
}

enum Shadowing {
  /// A class named like a standard library type, stored under a name of its own.
  final class Dictionary: ManagedObject {
    override class var entityName: String { "Glossary" }
    @Attribute var term: String = ""
  }
}

@Suite struct EntityNameTests {
  @Test func aClassStoresItselfUnderItsDeclaredEntityNameInHistoryAndURIs() async throws {
    let model = try ManagedObjectModel(TaskItem.self, UrgentTaskItem.self, Shadowing.Dictionary.self)
    #expect(model.entities.map(\.name).sorted() == ["Glossary", "Task", "UrgentTaskItem"])
    #expect(model.entity(for: TaskItem.self)?.name == "Task")
    #expect(model.entity(for: UrgentTaskItem.self)?.superentityName == "Task")
    let container = try PersistentContainer.makeTest(model: model)
    let (id, urgentID) = try await container.newBackgroundContext().perform { context in
      let task = TaskItem(context: context)
      task.title = "write"
      let urgent = UrgentTaskItem(context: context)
      urgent.title = "now"
      let entry = Shadowing.Dictionary(context: context)
      entry.term = "graph"
      try context.save()
      return (task.managedID, urgent.managedID)
    }
    #expect(id.uriRepresentation.absoluteString.contains("/Task/"))
    #expect(urgentID.untyped.entityName == "UrgentTaskItem")
    let names = try container.persistentStore.fetchHistory(HistoryRequest()).flatMap(\.changes).map(
      \.objectID.entityName)
    #expect(Set(names) == ["Task", "UrgentTaskItem", "Glossary"])
    let schema = String(decoding: model.jsonRepresentation, as: UTF8.self)
    #expect(schema.contains("\"name\":\"Task\"") && !schema.contains("\"TaskItem\""))
    let titles = try await container.newBackgroundContext().perform { context in
      try context.fetch(FetchRequest<TaskItem>()).map(\.title).sorted()
    }
    #expect(titles == ["now", "write"])
  }
}
