import Foundation
import Testing
import TypedStore

/// Each malformed or unhonoured form of a model file is a typed error naming the file, the
/// line, the entity and the element.
@Suite struct ModelFileErrorTests {
  /// One bad file: the `<model>` body, what the error's reason must be, and the line it names
  /// (the `contents` file's line 1 is the XML declaration, line 2 `<model>`).
  struct Case: Sendable, CustomStringConvertible {
    var description: String
    var body: String
    var line: Int?
    var entity: String?
    var reason: @Sendable (ModelFileError.Reason) -> Bool
  }

  static func unsupported(_ fragment: String) -> @Sendable (ModelFileError.Reason) -> Bool {
    { if case .unsupported(let message) = $0 { message.contains(fragment) } else { false } }
  }

  static func dangling(_ fragment: String) -> @Sendable (ModelFileError.Reason) -> Bool {
    { if case .danglingReference(let message) = $0 { message.contains(fragment) } else { false } }
  }

  static let person = #"<entity name="Person" representedClassName="Person">"#

  static let cases: [Case] = [
    Case(
      description: "an unclosed element", body: "\(person)\n<attribute name=\"a\" attributeType=\"String\">\n",
      line: 6, entity: nil, reason: { if case .malformedXML = $0 { true } else { false } }),
    Case(
      description: "an unknown entity reference", body: "\(person)\n<attribute name=\"a&nbsp;\"/></entity>", line: 4,
      entity: nil, reason: { if case .malformedXML(let message) = $0 { message.contains("&nbsp;") } else { false } }),
    Case(
      description: "an unknown attribute type",
      body: "\(person)\n<attribute name=\"a\" attributeType=\"Integer 128\"/></entity>", line: 4, entity: "Person",
      reason: { $0 == .unknownAttributeType("Integer 128") }),
    Case(
      description: "a parent entity that does not exist",
      body: #"<entity name="Person" parentEntity="Being"/>"#, line: 3, entity: "Person", reason: dangling("Being")),
    Case(
      description: "a destination that does not exist",
      body: """
        \(person)
        <relationship name="home" maxCount="1" destinationEntity="House" inverseName="people"/></entity>
        """, line: 4, entity: "Person", reason: dangling("House")),
    Case(
      description: "an inverse that does not exist",
      body: """
        \(person)
        <relationship name="friend" maxCount="1" destinationEntity="Person" inverseName="nobody"/></entity>
        """, line: 4, entity: "Person", reason: dangling("nobody")),
    Case(
      description: "an inverse that points elsewhere",
      body: """
        \(person)
        <relationship name="home" maxCount="1" destinationEntity="House" inverseName="owner"/></entity>
        <entity name="House"><relationship name="owner" maxCount="1" destinationEntity="Person" inverseName="work"/>
        <relationship name="work" maxCount="1" destinationEntity="Person" inverseName="owner"/></entity>
        """, line: 4, entity: "Person", reason: dangling("not back")),
    Case(
      description: "a to-one that is its own inverse",
      body: """
        \(person)
        <relationship name="spouse" maxCount="1" destinationEntity="Person" inverseName="spouse"/></entity>
        """, line: 4, entity: "Person", reason: unsupported("its own inverse")),
    Case(
      description: "a relationship without an inverse",
      body: "\(person)\n<relationship name=\"friend\" maxCount=\"1\" destinationEntity=\"Person\"/></entity>",
      line: 4, entity: "Person", reason: unsupported("without an inverse")),
    Case(
      description: "the No Action delete rule",
      body: """
        \(person)
        <relationship name="friend" maxCount="1" deletionRule="No Action" destinationEntity="Person" \
        inverseName="friend"/></entity>
        """, line: 4, entity: "Person", reason: unsupported("No Action")),
    Case(
      description: "a fetched property",
      body: """
        \(person)
        <fetchedProperty name="recent" optional="YES">
        <fetchRequest name="fetchedPropertyFetchRequest" entity="Person"/></fetchedProperty></entity>
        """, line: 4, entity: "Person", reason: unsupported("fetched properties")),
    Case(
      description: "a derived attribute",
      body: """
        \(person)
        <attribute name="count" optional="YES" attributeType="Integer 64" derived="YES" \
        derivationExpression="friends.@count"/></entity>
        """, line: 4, entity: "Person", reason: unsupported("derived")),
    Case(
      description: "an Object ID attribute",
      body: "\(person)\n<attribute name=\"ref\" optional=\"YES\" attributeType=\"Object ID\"/></entity>", line: 4,
      entity: "Person", reason: unsupported("Object ID")),
    Case(
      description: "a composite attribute whose composite is not in the model",
      body:
        "\(person)\n<attribute name=\"address\" optional=\"YES\" attributeType=\"Composite\" composite=\"Address\"/></entity>",
      line: 4, entity: "Person", reason: dangling("its composite Address is not in the model")),
    Case(
      description: "a composite that holds itself",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Loop"/></entity>
        <composite name="Loop"><attribute name="x" attributeType="String"/>
        <attribute name="again" attributeType="Composite" composite="Loop"/></composite>
        """, line: 5, entity: "Loop", reason: dangling("holds itself")),
    Case(
      description: "bounds on an element of a composite",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box"/></entity>
        <composite name="Box">
        <attribute name="x" attributeType="Integer 64" minValueString="1" usesScalarValueType="YES"/></composite>
        """, line: 5, entity: "Box", reason: unsupported("minimum and maximum on an element")),
    Case(
      description: "a Transformable element of a composite",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box"/></entity>
        <composite name="Box">
        <attribute name="x" optional="YES" attributeType="Transformable" customClassName="Tags"/></composite>
        """, line: 5, entity: "Box", reason: unsupported("a Transformable element")),
    Case(
      description: "a renaming identifier on an element of a composite",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box"/></entity>
        <composite name="Box"><attribute name="x" attributeType="String" elementID="old"/></composite>
        """, line: 4, entity: "Box", reason: unsupported("a renaming identifier on an element")),
    Case(
      description: "preserveAfterDeletion on an element of a composite",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box"/></entity>
        <composite name="Box"><attribute name="x" attributeType="String" preserveAfterDeletion="YES"/></composite>
        """, line: 4, entity: "Box", reason: unsupported("preserveAfterDeletion on an element")),
    Case(
      description: "a transient element of a composite",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box"/></entity>
        <composite name="Box"><attribute name="x" attributeType="String" transient="YES"/></composite>
        """, line: 4, entity: "Box", reason: unsupported("a transient element")),
    Case(
      description: "bounds on a composite attribute",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box" minValueString="1"/></entity>
        <composite name="Box"><attribute name="x" attributeType="String"/></composite>
        """, line: 3, entity: "Person", reason: unsupported("minValueString on a composite attribute")),
    Case(
      description: "a composite named as an entity's class",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Person"/></entity>
        <composite name="Person"><attribute name="x" attributeType="String"/></composite>
        """, line: 4, entity: "Person",
      reason: { if case .invalidValue(let message) = $0 { message.contains("named Person") } else { false } }),
    Case(
      description: "a default on a composite attribute",
      body: """
        \(person)<attribute name="a" attributeType="Composite" composite="Box" defaultValueString="x"/></entity>
        <composite name="Box"><attribute name="x" attributeType="String"/></composite>
        """, line: 3, entity: "Person", reason: unsupported("defaultValueString on a composite attribute")),
    Case(
      description: "a stored attribute of Undefined type",
      body: "\(person)\n<attribute name=\"blob\" optional=\"YES\"/></entity>", line: 4, entity: "Person",
      reason: unsupported("Undefined")),
    Case(
      description: "a regular expression",
      body: "\(person)\n<attribute name=\"a\" attributeType=\"String\" regularExpressionString=\"[a-z]+\"/></entity>",
      line: 4, entity: "Person", reason: unsupported("regular expression")),
    Case(
      description: "a length limit on a string",
      body: "\(person)\n<attribute name=\"a\" attributeType=\"String\" maxValueString=\"10\"/></entity>", line: 4,
      entity: "Person", reason: unsupported("only numbers")),
    Case(
      description: "a default that is not a number",
      body: "\(person)\n<attribute name=\"a\" attributeType=\"Integer 16\" defaultValueString=\"many\"/></entity>",
      line: 4, entity: "Person",
      reason: { if case .invalidValue(let message) = $0 { message.contains("many") } else { false } }),
    Case(
      description: "a constraint on nothing",
      body: """
        \(person)
        <uniquenessConstraints><uniquenessConstraint><constraint value="email"/></uniquenessConstraint>
        </uniquenessConstraints></entity>
        """, line: 3, entity: "Person", reason: dangling("email")),
    Case(
      description: "an entity TypedStore cannot name",
      body: #"<entity name="_Hidden"><attribute name="a" attributeType="String"/></entity>"#, line: 3,
      entity: "_Hidden", reason: { if case .invalidModel = $0 { true } else { false } }),
    Case(
      description: "an unknown element", body: "\(person)<widget/></entity>", line: 3, entity: "Person",
      reason: unsupported("<widget>")),
    Case(
      description: "parent entities in a cycle",
      body: """
        <entity name="A" parentEntity="B"/>
        <entity name="B" parentEntity="A"/>
        """, line: 3, entity: "A", reason: dangling("cycle")),
    Case(
      description: "two entities of one name",
      body: "<entity name=\"A\"/>\n<entity name=\"A\"/>", line: 4, entity: "A",
      reason: { if case .invalidValue(let message) = $0 { message.contains("two entities") } else { false } }),
    Case(
      description: "a constraint on a to-many",
      body: """
        \(person)
        <relationship name="friends" toMany="YES" destinationEntity="Person" inverseName="friendOf"/>
        <relationship name="friendOf" toMany="YES" destinationEntity="Person" inverseName="friends"/>
        <uniquenessConstraints><uniquenessConstraint><constraint value="friends"/></uniquenessConstraint>
        </uniquenessConstraints></entity>
        """, line: 3, entity: "Person", reason: unsupported("no stored attribute")),
    Case(
      description: "an empty constraint",
      body: """
        \(person)<attribute name="a" attributeType="String"/>
        <uniquenessConstraints><uniquenessConstraint/></uniquenessConstraints></entity>
        """, line: 3, entity: "Person",
      reason: { if case .invalidValue(let message) = $0 { message.contains("names no property") } else { false } }),
  ]

  @Test(arguments: cases) func aBadFileIsATypedErrorWithItsPlace(_ bad: Case) throws {
    let url = try ModelFiles.version(ModelFiles.model(bad.body))
    let error = try #require(ModelFiles.readingError(url), "\(bad.description) was read")
    #expect(bad.reason(error.reason), "\(bad.description): \(error)")
    #expect(error.file == url.appendingPathComponent("contents").path, "\(bad.description)")
    #expect(error.line == bad.line, "\(bad.description): \(error)")
    #expect(error.entity == bad.entity, "\(bad.description): \(error)")
    #expect("\(error)".hasPrefix(url.appendingPathComponent("contents").path), "\(bad.description)")
  }

  @Test func xmlThatIsNotWellFormedNamesItsLine() throws {
    let documents: [(String, Int)] = [
      ("<?xml version=\"1.0\"?>\n<model>\n<entity name=\"A\"></model>", 3),
      ("<?xml version=\"1.0\"?>\n<model a=1/>", 2),
      ("<?xml version=\"1.0\"?>\n<model a=\"1\" a=\"2\"/>", 2),
      ("<?xml version=\"1.0\"?>\n<model/>\n<model/>", 3),
      ("<?xml version=\"1.0\"?>\n<!-- a comment -- that breaks -->\n<model/>", 2),
      ("", 1),
      ("<?xml version=\"1.0\"?>\r\n<model>\r\n<entity name=\"&#0;\"/></model>", 3),
      ("<?xml version=\"1.0\"?>\n<model>\n]]></model>", 3),
      (String(repeating: "<a>", count: 300) + String(repeating: "</a>", count: 300), 1),
    ]
    for (xml, line) in documents {
      let url = try ModelFiles.version(xml)
      let error = try #require(ModelFiles.readingError(url), "\(xml)")
      guard case .malformedXML = error.reason else {
        Issue.record("\(xml): \(error)")
        continue
      }
      #expect(error.line == line, "\(xml): \(error)")
    }
  }

  @Test func bytesThatAreNotUTF8AreRefused() throws {
    let url = try ModelFiles.version("")
    try Data([0x3C, 0x6D, 0x6F, 0x64, 0x65, 0x6C, 0xFF, 0x2F, 0x3E]).write(to: url.appendingPathComponent("contents"))
    let error = try #require(ModelFiles.readingError(url))
    #expect(error.reason == .malformedXML("the document is not valid UTF-8"))
  }

  @Test func wellFormedXMLInEveryFormXcodeMightWriteIsRead() throws {
    let xml = """
      <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
      <!DOCTYPE model>
      <!-- written by hand -->
      <model type='com.apple.IDECoreDataModeler.DataModel'>
          <entity name="Note" representedClassName="Note"
                  syncable="YES">
              <attribute name="title" attributeType="String" defaultValueString="a &lt;b&gt; &amp; &#x263A; &#65;"/>
              <userInfo><entry key="k" value="line&#10;break"/></userInfo>
          </entity>
          <?xcode ignore?>
          <elements><![CDATA[ <not> an element ]]></elements>
      </model>
      """
    let file = try XcodeModel(contentsOf: try ModelFiles.version(xml))
    let note = try #require(file.entities.first)
    #expect(note.line == 5)
    #expect(note.attributes.first?.defaultValue == "a <b> & ☺ A")
    #expect(note.userInfo == ["k": "line\nbreak"])
  }

  @Test func whatIsIgnoredIsListed() throws {
    let url = try ModelFiles.version(
      ModelFiles.model(
        """
        <entity name="Animal" isAbstract="YES" versionHashModifier="2" syncable="YES" codeGenerationType="class">
        <attribute name="name" attributeType="String" spotlightIndexingEnabled="YES"/></entity>
        <entity name="Dog" parentEntity="Animal"><attribute name="breed" optional="YES" attributeType="String"/></entity>
        """))
    let file = try XcodeModel(contentsOf: url)
    #expect(file.ignored.contains { $0.hasPrefix("entity Animal: isAbstract") })
    #expect(file.ignored.contains { $0.hasPrefix("entity Animal: versionHashModifier \"2\"") })
    #expect(file.ignored.count == 2, "\(file.ignored)")  // code generation and Spotlight flags are silent
    let model = try ManagedObjectModel(xcodeModel: file)
    #expect(model.entity(named: "Dog")?.superentityName == "Animal")
  }

  @Test func indexesTypedStoreDoesNotMakeAreListedAsIgnored() throws {
    let url = try ModelFiles.version(
      ModelFiles.model(
        """
        <entity name="Place">
        <attribute name="a" attributeType="String"/><attribute name="b" attributeType="String"/>
        <fetchIndex name="both"><fetchIndexElement property="a" type="Binary" order="ascending"/>
        <fetchIndexElement property="b" type="Binary" order="ascending"/></fetchIndex>
        <fetchIndex name="near"><fetchIndexElement property="a" type="RTree" order="ascending"/></fetchIndex>
        <fetchIndex name="lower"><fetchIndexElement expression="lowercase:(a)" expressionType="String" \
        order="ascending"/></fetchIndex>
        </entity>
        """))
    let file = try XcodeModel(contentsOf: url)
    #expect(file.ignored.filter { $0.contains("is not made") }.count == 3, "\(file.ignored)")
    #expect(file.entities.first?.attributes.allSatisfy { !$0.isIndexed } == true)
    _ = try ManagedObjectModel(xcodeModel: file)
    let dangling = try ModelFiles.version(
      ModelFiles.model(
        """
        <entity name="Place"><attribute name="a" attributeType="String"/>
        <compoundIndexes><compoundIndex><index value="a"/><index value="zz"/></compoundIndex></compoundIndexes>
        </entity>
        """))
    guard case .danglingReference? = ModelFiles.readingError(dangling)?.reason else {
      Issue.record("an index on nothing was read")
      return
    }
  }

  @Test func unknownXMLAttributesAreReadAndListed() throws {
    let url = try ModelFiles.version(
      ModelFiles.model(#"<entity name="A" futureFlag="YES"><attribute name="a" attributeType="String"/></entity>"#))
    let file = try XcodeModel(contentsOf: url)
    #expect(file.ignored.contains { $0.contains("futureFlag") })
  }
}
