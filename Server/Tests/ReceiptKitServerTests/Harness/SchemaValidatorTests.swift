import Foundation
import OpenAPIKit
import Testing
import Yams

/// The tests' own JSON Schema validator (``SchemaValidator``), on small schemas written as
/// `openapi.yaml` writes them: each keyword accepts a conforming instance and rejects, naming
/// where, an instance that breaks it.
@Suite("SchemaValidator")
struct SchemaValidatorTests {
    /// Components with `Item` (an object with a required integer `n`) and `Tree` (a node whose
    /// `children` are `Tree`s), for `$ref`s.
    static func components() throws -> OpenAPI.Components {
        let yaml = """
            schemas:
              Item:
                type: object
                required: [n]
                properties:
                  n:
                    type: integer
              Tree:
                type: object
                required: [name, children]
                properties:
                  name:
                    type: string
                  children:
                    type: array
                    items:
                      $ref: '#/components/schemas/Tree'
            """
        return try YAMLDecoder().decode(OpenAPI.Components.self, from: yaml)
    }

    /// The violations of `json` against the schema in `yaml`.
    static func violations(_ json: String, _ yaml: String) throws -> [String] {
        let schema = try YAMLDecoder().decode(JSONSchema.self, from: yaml)
        return SchemaValidator(components: try components()).violations(of: try JSONValue(parsing: Array(json.utf8)), against: schema)
    }

    @Test("JSON keeps its kinds: true is no number, 1 is an integer, 1.5 is not, null is null")
    func kinds() throws {
        #expect(try JSONValue(parsing: Array("true".utf8)) == .bool(true))
        #expect(try JSONValue(parsing: Array("1".utf8)) == .integer(1))
        #expect(try JSONValue(parsing: Array("1.5".utf8)) == .number(1.5))
        #expect(try JSONValue(parsing: Array(#"{"a":null,"b":[0,"x"]}"#.utf8))
            == .object(["a": .null, "b": .array([.integer(0), .string("x")])]))
        #expect(try JSONValue(parsing: Array("1".utf8)) != .bool(true))
        #expect(throws: (any Error).self) { try JSONValue(parsing: Array("{".utf8)) }
    }

    @Test("a type rejects every other kind, null unless nullable")
    func types() throws {
        let cases: [(type: String, accepted: [String], rejected: [String])] = [
            ("string", [#""x""#], ["1", "true", "null", "[]", "{}"]),
            ("integer", ["1", "-3", "2.0"], ["1.5", #""1""#, "true", "null", "[]", "{}"]),
            ("number", ["1", "1.5"], [#""1""#, "true", "null", "[]", "{}"]),
            ("boolean", ["true", "false"], ["0", "1", #""true""#, "null", "[]", "{}"]),
            ("array", ["[]", "[1]"], ["{}", "1", #""x""#, "null"]),
            ("object", ["{}", #"{"a":1}"#], ["[]", "1", #""x""#, "null"]),
        ]
        for (type, accepted, rejected) in cases {
            for json in accepted { #expect(try Self.violations(json, "type: \(type)").isEmpty, "\(json) as \(type)") }
            for json in rejected {
                let found = try Self.violations(json, "type: \(type)")
                #expect(found.count == 1 && found.first?.hasPrefix("/: ") == true, "\(json) as \(type): \(found)")
            }
        }
        #expect(try Self.violations("null", "type: [string, 'null']").isEmpty)
        #expect(try Self.violations(#""x""#, "type: [string, 'null']").isEmpty)
        #expect(try Self.violations("1", "type: [string, 'null']") == ["/: integer where the schema has string or null"])
        #expect(try Self.violations("null", "type: 'null'").isEmpty)
        #expect(try Self.violations("0", "type: 'null'") == ["/: integer where the schema allows only null"])
    }

    @Test("an object needs its required members, its properties conform, extra members only where allowed")
    func objects() throws {
        let open = """
            type: object
            required: [id, state]
            properties:
              id:
                type: string
              state:
                type: string
              count:
                type: integer
            """
        #expect(try Self.violations(#"{"id":"1","state":"s","extra":[1]}"#, open).isEmpty)
        #expect(try Self.violations(#"{"id":"1"}"#, open) == ["/: no state, which the schema requires"])
        #expect(try Self.violations(#"{"id":1,"state":"s"}"#, open) == ["/id: integer where the schema has string"])
        #expect(try Self.violations(#"{"id":"1","state":"s","count":"2"}"#, open) == ["/count: string where the schema has integer"])
        // A required member with no declared schema must still be there.
        #expect(try Self.violations("{}", "type: object\nrequired: [created_at]") == ["/: no created_at, which the schema requires"])

        let closed = open + "\nadditionalProperties: false"
        #expect(try Self.violations(#"{"id":"1","state":"s","count":2}"#, closed).isEmpty)
        #expect(try Self.violations(#"{"id":"1","state":"s","extra":1}"#, closed)
            == ["/: extra is not among the schema's properties, and additionalProperties is false"])
        let typed = open + "\nadditionalProperties:\n  type: boolean"
        #expect(try Self.violations(#"{"id":"1","state":"s","flag":true}"#, typed).isEmpty)
        #expect(try Self.violations(#"{"id":"1","state":"s","flag":"yes"}"#, typed) == ["/flag: string where the schema has boolean"])
    }

    @Test("an enum admits its values only; items are checked each, at their index")
    func enumsAndItems() throws {
        let states = "type: string\nenum: [active, expired]"
        #expect(try Self.violations(#""active""#, states).isEmpty)
        #expect(try Self.violations(#""revoked""#, states) == [#"/: "revoked" is not one of the enum's "active", "expired""#])
        let list = "type: array\nitems:\n  type: string\n  enum: [a, b]"
        #expect(try Self.violations(#"["a","b","a"]"#, list).isEmpty)
        let found = try Self.violations(#"["a",1,"c"]"#, list)
        #expect(found.count == 3 && found.allSatisfy { $0.hasPrefix("/1: ") || $0.hasPrefix("/2: ") }, "\(found)")
    }

    @Test("$ref is followed into the components, recursively; an unknown one is a violation")
    func references() throws {
        let tree = "$ref: '#/components/schemas/Tree'"
        #expect(try Self.violations(#"{"name":"a","children":[{"name":"b","children":[]}]}"#, tree).isEmpty)
        #expect(try Self.violations(#"{"name":"a","children":[{"name":2,"children":[]}]}"#, tree)
            == ["/children/0/name: integer where the schema has string"])
        #expect(try Self.violations(#"{"name":"a","children":[{"name":"b"}]}"#, tree) == ["/children/0: no children, which the schema requires"])
        let missing = try Self.violations("{}", "$ref: '#/components/schemas/Missing'")
        #expect(missing.count == 1 && missing.first?.hasPrefix("/: cannot resolve #/components/schemas/Missing") == true, "\(missing)")
    }

    @Test("allOf needs every schema, oneOf exactly one, anyOf one at least, not none")
    func combinations() throws {
        let all = "allOf:\n  - $ref: '#/components/schemas/Item'\n  - type: object\n    required: [m]"
        #expect(try Self.violations(#"{"n":1,"m":2}"#, all).isEmpty)
        #expect(try Self.violations(#"{"n":1}"#, all) == ["/: no m, which the schema requires (allOf[1])"])
        let one = "oneOf:\n  - type: integer\n  - type: number"
        #expect(try Self.violations("1.5", one).isEmpty)
        #expect(try Self.violations("1", one) == ["/: 1 matches 2 of oneOf's 2 schemas [0, 1], not exactly one"])
        #expect(try Self.violations(#""x""#, one) == [#"/: "x" matches 0 of oneOf's 2 schemas [], not exactly one"#])
        let any = "anyOf:\n  - type: string\n  - type: 'null'"
        #expect(try Self.violations("null", any).isEmpty)
        #expect(try Self.violations("1", any) == ["/: 1 matches none of anyOf's 2 schemas"])
        #expect(try Self.violations("1", "not:\n  type: integer") == ["/: 1 matches the schema under not"])
        #expect(try Self.violations(#""1""#, "not:\n  type: integer").isEmpty)
    }

    @Test("bounds: numbers, lengths, counts, patterns, unique items")
    func bounds() throws {
        let limit = "type: integer\nminimum: 1\nmaximum: 1000"
        #expect(try Self.violations("1", limit).isEmpty && Self.violations("1000", limit).isEmpty)
        #expect(try Self.violations("0", limit) == ["/: 0.0 is below the minimum 1.0"])
        #expect(try Self.violations("1001", limit) == ["/: 1001.0 is above the maximum 1000.0"])
        #expect(try Self.violations(#""ab""#, "type: string\nminLength: 3") == ["/: 2 characters, fewer than 3"])
        #expect(try Self.violations(#""abc""#, "type: string\npattern: '^[0-9]+$'") == [#"/: "abc" does not match ^[0-9]+$"#])
        #expect(try Self.violations(#""123""#, "type: string\npattern: '^[0-9]+$'").isEmpty)
        #expect(try Self.violations("[1,2,1]", "type: array\nuniqueItems: true") == ["/: item 2 repeats an earlier one, and the schema has uniqueItems"])
        #expect(try Self.violations("[]", "type: array\nminItems: 1") == ["/: 0 items, fewer than 1"])
    }
}
