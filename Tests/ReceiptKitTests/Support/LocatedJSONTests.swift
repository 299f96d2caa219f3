import ReceiptKit
import Testing

/// `LocatedJSON`: jansson's values with the line each is written on and its member path.
@Suite("Located JSON")
struct LocatedJSONTests {
    static let text = """
        {"name": "a\\"b",
          "list": [1, -2.5e3,
                   {"x\\u0079": true},
            null],
          "empty": {}, "last": false}
        """

    @Test("every value with its line and path, members in the order written")
    func values() throws {
        let root = try LocatedJSON(jsonBytes: Array(Self.text.utf8))
        #expect(root.line == 1 && root.path == "" && root.kindName == "an object")
        guard case .object(let members) = root.value else { Issue.record("not an object"); return }
        #expect(members.map(\.name) == ["name", "list", "empty", "last"])
        #expect(members.map(\.line) == [1, 2, 5, 5])
        #expect(members[0].value.value == .string("a\"b"))
        #expect(members[3].value.value == .bool(false) && members[3].value.path == "last")
        guard case .array(let elements) = members[1].value.value else { Issue.record("not an array"); return }
        #expect(elements.map(\.line) == [2, 2, 3, 4])
        #expect(elements.map(\.path) == ["list[0]", "list[1]", "list[2]", "list[3]"])
        #expect(elements[0].value == .integer(1) && elements[1].value == .real(-2500) && elements[3].value == .null)
        guard case .object(let inner) = elements[2].value else { Issue.record("not an object"); return }
        // A name written with an escape is decoded, and still located.
        #expect(inner.map(\.name) == ["xy"] && inner[0].line == 3 && inner[0].value.path == "list[2].xy")
        #expect(members[2].value.value == .object([]) && members[2].value.line == 5)
        #expect(members[2].failure("why").description == "line 5, empty: why")
        #expect(root.failure("why").description == "line 1: why")
    }

    @Test("any value may stand at the root")
    func scalarRoot() throws {
        let root = try LocatedJSON(jsonBytes: Array("\n\n [\"a\"]".utf8))
        #expect(root.line == 3 && root.kindName == "an array")
        #expect(try LocatedJSON(jsonBytes: Array("12".utf8)).value == .integer(12))
    }

    @Test("text that is not strict JSON is refused at its line, with jansson's reason")
    func refused() {
        let cases: [(text: String, line: Int, words: String)] = [
            ("[1,\n 2,,\n]", 2, "unexpected token near ','"),
            ("{\"a\": 1,\n\n \"a\": 2}", 3, "duplicate object key near '\"a\"'"),
            ("{\"a\": \"\\u0000\"}", 1, "\\u0000"),
            ("{\"a\": 99999999999999999999}", 1, "too big integer"),
            ("{\"a\": 1}\n x", 2, "end of file expected"),
            ("\u{FEFF}{}", 1, "byte-order mark"),
            ("", 1, "not valid JSON"),
        ]
        for (text, line, words) in cases {
            #expect {
                _ = try LocatedJSON(jsonBytes: Array(text.utf8))
            } throws: { error in
                guard let failure = error as? LocatedJSON.Failure else { return false }
                return failure.line == line && failure.reason.hasPrefix("not valid JSON: ") && failure.reason.contains(words)
                    && failure.path.isEmpty
            }
        }
    }

    @Test("nesting deeper than the limit is refused at the value that goes too deep")
    func depth() throws {
        let limit = LocatedJSON.maximumDepth
        _ = try LocatedJSON(jsonBytes: Array((String(repeating: "[", count: limit) + String(repeating: "]", count: limit)).utf8))
        let deep = String(repeating: "[", count: limit) + "\n[]" + String(repeating: "]", count: limit)
        let failure = try #require(throws: LocatedJSON.Failure.self) { try LocatedJSON(jsonBytes: Array(deep.utf8)) }
        #expect(failure.line == 2 && failure.reason.contains("deeper than \(limit)"))
        #expect(failure.path == String(repeating: "[0]", count: limit))
    }
}
