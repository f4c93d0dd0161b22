import Foundation
import TypedStore

// The graph of the multi-process relationship test (`GraphProcessTests` declares the same
// classes): crates cascade to their items, items and stickers are many-to-many.

final class Crate: ManagedObject {
  @Attribute var label: String = ""
  @Relationship(deleteRule: .cascade) var items: Set<Item>
}

final class Item: ManagedObject {
  @Attribute var name: String = ""
  @Relationship(inverse: \Crate.items) var crate: Crate?
  @Relationship() var stickers: Set<Sticker>
}

final class Sticker: ManagedObject {
  @Attribute var text: String = ""
  @Relationship(inverse: \Item.stickers) var items: Set<Item>
}

/// For `seconds`: random graph edits through a context (object-trump policy), one save
/// each: crates of items with stickers, moves, cascade deletes through the context and by
/// batch request, sticker links and deletions. A save that links to a row another process
/// deleted meanwhile (`StoreError.danglingReference`) is expected, counted and rolled back.
/// Prints "ops <n> dangling <d>", or "error: <error>" and exits 3.
func runGraphWriter(path: String, author: String, seconds: Double) {
  do {
    let container = try PersistentContainer(
      name: "Graph", model: ManagedObjectModel(Crate.self, Item.self, Sticker.self),
      storeURL: storeURL(path))
    let context = container.newBackgroundContext()
    let deadline = Date().addingTimeInterval(seconds)
    var operations = 0
    var dangling = 0
    while Date() < deadline {
      let choice = Int.random(in: 0..<12)
      let refused = try context.performAndWait { context -> Bool in
        context.transactionAuthor = author
        context.mergePolicy = .objectTrump
        defer { context.reset() }
        do {
          try graphEdit(choice, author: author, context)
          try context.save()
          return false
        } catch StoreError.danglingReference {
          return true
        }
      }
      if refused { dangling += 1 }
      operations += 1
    }
    print("ops \(operations) dangling \(dangling)")
  } catch {
    print("error: \(error)")
    exit(3)
  }
}

private func random<Entity: ManagedObject>(_ type: Entity.Type, _ context: isolated ManagedObjectContext) throws
  -> Entity?
{
  let count = try context.count(for: FetchRequest<Entity>())
  guard count > 0 else { return nil }
  return try context.fetch(FetchRequest<Entity>(fetchLimit: 1, fetchOffset: Int.random(in: 0..<count))).first
}

private func graphEdit(_ choice: Int, author: String, _ context: isolated ManagedObjectContext) throws {
  switch choice {
  case 0...3:
    var stickers = try context.fetch(FetchRequest<Sticker>())
    if stickers.count < 5 {
      let sticker = Sticker(context: context)
      sticker.text = "\(author)-\(Int.random(in: 0..<1000))"
      stickers.append(sticker)
    }
    let crate = Crate(context: context)
    crate.label = "\(author)-\(Int.random(in: 0..<4))"
    for index in 0..<Int.random(in: 1...8) {
      let item = Item(context: context)
      item.name = "\(author)-\(index)"
      crate.$items.insert(item)
      if let sticker = stickers.randomElement() { item.$stickers.insert(sticker) }
    }
  case 4...5:
    if let item = try random(Item.self, context), let crate = try random(Crate.self, context) { item.crate = crate }
  case 6:
    if let crate = try random(Crate.self, context) { context.delete(crate) }
  case 7:
    let label = "\(author)-\(Int.random(in: 0..<4))"
    _ = try context.execute(BatchDeleteRequest<Crate>(predicate: #Predicate { $0.label == label }))
  case 8...9:
    if let item = try random(Item.self, context), let sticker = try random(Sticker.self, context) {
      if item.stickers.contains(where: { $0 === sticker }) {
        item.$stickers.remove(sticker)
      } else {
        item.$stickers.insert(sticker)
      }
    }
  default:
    if let sticker = try random(Sticker.self, context) { context.delete(sticker) }
  }
}

/// Adds stickers to the one item the store holds, `count` times, from one context that loads
/// the item's stickers, waits until `start` (seconds since 1970, so that every writer's copy
/// is read before any of them saves) and keeps that copy: stale whenever another process
/// saved since. Each save inserts a sticker "<author>-<n>" and links it; "linked <text>" is
/// printed once the save returns. Prints "done", or "error: <error>" and exits 3.
func runLinkWriter(path: String, author: String, count: Int, start: Double) {
  do {
    let container = try PersistentContainer(
      name: "Graph", model: ManagedObjectModel(Crate.self, Item.self, Sticker.self),
      storeURL: storeURL(path))
    let context = container.newBackgroundContext()
    try context.performAndWait { context in
      context.transactionAuthor = author
      guard let item = try context.fetch(FetchRequest<Item>()).first else { throw CocoaError(.fileNoSuchFile) }
      _ = item.stickers.count  // loaded once, and never refreshed
      let wait = start - Date().timeIntervalSince1970
      if wait > 0 { Thread.sleep(forTimeInterval: wait) }
      for index in 0..<count {
        let sticker = Sticker(context: context)
        sticker.text = "\(author)-\(index)"
        item.$stickers.insert(sticker)
        try context.save()
        say("linked \(sticker.text)")
      }
    }
    say("done")
  } catch {
    say("error: \(error)")
    exit(3)
  }
}
