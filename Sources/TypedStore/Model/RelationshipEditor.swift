/// The typed helpers of a relationship, reached as its projected value (`folder.$notes`).
/// Each changes the relationship and its inverse at once, at a cost that does not grow with
/// the relationship's size.
///
/// ```swift
/// folder.$notes.insert(note)          // note.folder === folder
/// folder.$notes.remove(note)          // note.folder == nil
/// list.$items.insert(item, at: 0)     // ordered relationships only
/// ```
public struct RelationshipEditor<Value> {
  @usableFromInline let object: ManagedObject
  @usableFromInline let slot: Int32

  @inlinable
  init(object: ManagedObject, slot: Int32) {
    self.object = object
    self.slot = slot
  }
}

extension RelationshipEditor {
  /// Adds `element` to the relationship (and this object to `element`'s inverse).
  public func insert<Element: ManagedObject>(_ element: Element) where Value == Set<Element> {
    object._editRelationship(slot: slot, inserting: element, at: nil)
  }

  /// Removes `element` from the relationship (and this object from `element`'s inverse).
  public func remove<Element: ManagedObject>(_ element: Element) where Value == Set<Element> {
    object._editRelationship(slot: slot, removing: element)
  }

  /// Appends `element` (moving it when it is already in the relationship).
  public func append<Element: ManagedObject>(_ element: Element) where Value == [Element] {
    object._editRelationship(slot: slot, inserting: element, at: nil)
  }

  /// Inserts `element` at `index` (moving it when it is already in the relationship).
  public func insert<Element: ManagedObject>(_ element: Element, at index: Int) where Value == [Element] {
    object._editRelationship(slot: slot, inserting: element, at: index)
  }

  /// Removes `element` from the relationship (and this object from `element`'s inverse).
  public func remove<Element: ManagedObject>(_ element: Element) where Value == [Element] {
    object._editRelationship(slot: slot, removing: element)
  }
}
