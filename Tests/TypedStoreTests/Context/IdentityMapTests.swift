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

  @Test func behavesLikeADictionaryWithRunsOfKeysFarApart() {
    // Runs of consecutive keys (the usual primary keys) scattered over the whole key space,
    // inserted and then mostly removed: pages are made, emptied, freed and reused, and the
    // directory grows and shifts entries back on removal.
    var table = KeyTable()
    var reference: [Int64: ManagedObject] = [:]
    var generator = SystemRandomNumberGenerator()
    let object = ManagedObject()
    let starts = (0..<200).map { _ in Int64.random(in: Int64.min / 2...Int64.max / 2, using: &generator) }
    for round in 0..<4 {
      for start in starts {
        for offset in 0..<Int64.random(in: 1...80, using: &generator) {
          let key = start &+ offset
          if round % 2 == 0 || Int.random(in: 0..<4, using: &generator) == 0 {
            table[key] = object
            reference[key] = object
          } else {
            table[key] = nil
            reference[key] = nil
          }
        }
      }
      #expect(table.count == reference.count)
      for key in reference.keys { #expect(table[key] === object) }
      for start in starts { #expect((table[start &- 1] != nil) == (reference[start &- 1] != nil)) }
    }
    #expect(table.values.count == reference.count)
  }

  @Test func freesEmptiedPagesAndKeepsTheRestWhenItDrops() {
    var table = KeyTable()
    var held: [Int64: ManagedObject] = [:]
    // 20,000 consecutive keys, of which only every 1,000th is held elsewhere: most pages
    // empty out, are freed, and the table moves what is left together.
    for key in 0..<Int64(20_000) {
      let object = ManagedObject()
      if key % 1_000 == 0 { held[key] = object }
      table[key] = object
    }
    let pagesBefore = table.pagesInUse
    #expect(table.dropUnreferenced { _ in true } == 20_000 - held.count)
    #expect(table.count == held.count)
    #expect(table.pagesInUse == held.count && table.pagesInUse < pagesBefore)
    for (key, object) in held { #expect(table[key] === object) }
    #expect(table[1] == nil && table[999] == nil)
    // A slot reserved but never filled (loading its row failed) holds nothing.
    let reserved = table.reserveSlot(for: 5_000_000)
    #expect(table.object(at: reserved) == nil && table[5_000_000] == nil && table.count == held.count)
    // New keys, in freed pages and new ones, go in as before.
    let late = ManagedObject()
    table[1] = late
    table[5_000_001] = late
    #expect(table[1] === late && table[5_000_001] === late && table.count == held.count + 2)
    #expect(Set(table.values.map(ObjectIdentifier.init)).count == held.count + 1)
  }

  @Test func behavesLikeADictionaryWhileDroppingAndCompactingBetweenChanges() {
    // Inserts, removals, slots reserved and left empty, and drops that free and compact pages,
    // interleaved at random. The reference keeps identities only (a strong reference would
    // keep every object from being dropped); `outside` holds the objects code still uses.
    var table = KeyTable()
    var reference: [Int64: ObjectIdentifier] = [:]
    var outside: [Int64: ManagedObject] = [:]
    var generator = SystemRandomNumberGenerator()
    var scanned = 0
    for round in 0..<30 {
      let base = Int64.random(in: -1_000_000...1_000_000, using: &generator)
      // Rounds that hold few objects free most pages at the next drop, which then compacts.
      let holdPercent = [5, 50, 90][round % 3]
      for step in 0..<Int.random(in: 500...5_000, using: &generator) {
        let key =
          Bool.random(using: &generator)
          ? base + Int64(step) : Int64.random(in: -2_000_000...2_000_000, using: &generator)
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<6:
          let object = ManagedObject()
          table[key] = object
          reference[key] = ObjectIdentifier(object)
          outside[key] = Int.random(in: 0..<100, using: &generator) < holdPercent ? object : nil
        case 6..<8:
          table[key] = nil
          reference[key] = nil
          outside[key] = nil
        default:
          let slot = table.reserveSlot(for: key)
          #expect(table.object(at: slot).map(ObjectIdentifier.init) == reference[key])
        }
      }
      // Some objects nobody else holds are refused by the predicate, and stay.
      let refused = Set(reference.filter { outside[$0.key] == nil && $0.key % 3 == 0 }.map(\.value))
      let scans = table.count >= table.dropThreshold
      let dropped = table.dropUnreferenced { !refused.contains(ObjectIdentifier($0)) }
      if scans {
        scanned += 1
        let expected = reference.filter { outside[$0.key] == nil && !refused.contains($0.value) }
        #expect(dropped == expected.count, "round \(round)")
        for key in expected.keys { reference[key] = nil }
      } else {
        #expect(dropped == 0)
      }
      #expect(table.count == reference.count, "round \(round)")
      for (key, identifier) in reference {
        #expect(table[key].map(ObjectIdentifier.init) == identifier, "round \(round), key \(key)")
      }
      #expect(table.values.count == reference.count)
    }
    #expect(scanned >= 3)
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
