import Testing

@testable import TypedStore

@Suite struct KeyTableTests {
  @Test func behavesLikeADictionaryUnderRandomInsertsAndRemovals() {
    var table = KeyTable()
    var reference: [Int64: ManagedObject] = [:]
    var generator = SystemRandomNumberGenerator()
    let objects = (0..<64).map { _ in ManagedObject() }
    for step in 0..<20_000 {
      // Small key range: many collisions, re-inserts and removals of present keys.
      let key = Int64.random(in: -500...500, using: &generator)
      if Bool.random(using: &generator) || step < 200 {
        let object = objects[step % objects.count]
        table[key] = object
        reference[key] = object
      } else {
        table[key] = nil
        reference[key] = nil
      }
      if step % 997 == 0 {
        #expect(table.count == reference.count)
        for probe in -510...510 {
          #expect(table[Int64(probe)] === reference[Int64(probe)])
        }
      }
    }
    #expect(Set(table.values.map(ObjectIdentifier.init)) == Set(reference.values.map(ObjectIdentifier.init)))
  }

  @Test func dropsOnlyObjectsNothingElseReferencesOnceItHasGrown() {
    var table = KeyTable()
    let count = KeyTable.minimumDropThreshold + 100
    var held: [ManagedObject] = []
    for key in 0..<Int64(count) {
      let object = ManagedObject()
      if key % 3 == 0 { held.append(object) }  // referenced outside the table
      table[key] = object
    }
    // Unreferenced but refused by the predicate: key 1.
    let refused = table[1].map(ObjectIdentifier.init)
    let dropped = table.dropUnreferenced { ObjectIdentifier($0) != refused }
    #expect(dropped == count - held.count - 1)
    #expect(table.count == held.count + 1)
    for (index, object) in held.enumerated() { #expect(table[Int64(index * 3)] === object) }
    #expect(table[1] != nil && table[2] == nil)
    // Below the new threshold (twice what is left, at least the minimum), nothing is scanned.
    #expect(table.dropThreshold == KeyTable.minimumDropThreshold)
    held.removeAll()
    #expect(table.dropUnreferenced { _ in true } == 0)
  }

  @Test func holdsExtremeAndSequentialKeys() {
    var table = KeyTable()
    let object = ManagedObject()
    for key in [Int64.min, .max, 0, -1, 1] + (1...10_000).map(Int64.init) { table[key] = object }
    #expect(table.count == 10_004)  // 1 is listed twice
    #expect(table[.min] === object && table[.max] === object && table[5000] === object)
    for key in (1...10_000).map(Int64.init) where key % 2 == 0 { table[key] = nil }
    #expect(table.count == 5004)
    #expect(table[4] == nil && table[5] === object && table[.min] === object)
  }
}
