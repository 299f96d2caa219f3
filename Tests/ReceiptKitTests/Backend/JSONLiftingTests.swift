import Foundation
import ReceiptKit
import Testing

/// Plain string values and member names lifted out of a JSON text before jansson parses it: every
/// reader sees the same values, and every invalid text the same error, as when jansson parses the
/// text as it stands (`liftingLongStrings: false`, the reference).
@Suite("JSON string lifting")
struct JSONLiftingTests {
    /// A JWS-like value: 2,000 bytes of base64url with dots.
    static let jwsLike = String((0..<2_000).map { index in
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")[(index * 7 + index / 3) % 65]
    })
    /// Printable ASCII of every kind but `"` and `\`, 95 − 2 bytes.
    static let printable = String(decoding: (0x20...0x7E).filter { $0 != 0x22 && $0 != 0x5C }.map { UInt8($0) }, as: UTF8.self)

    static func parse(_ text: String, lifting: Bool = true) throws -> JSONDocument {
        try parse(Array(text.utf8), lifting: lifting)
    }

    static func parse(_ bytes: [UInt8], lifting: Bool = true) throws -> JSONDocument {
        try JSONDocument(parsingObject: bytes, code: .malformedPayload, what: "JWS payload", liftingLongStrings: lifting)
    }

    /// The outcome of parsing `bytes` and reading `read` from it, as text: the values read, or
    /// the error's code and reason.
    static func outcome(_ bytes: [UInt8], lifting: Bool, _ read: (JSONObject) throws -> [String?]) -> String {
        do {
            let document = try parse(bytes, lifting: lifting)
            return try document.withRoot(code: .malformedPayload) { "\(try read($0))" }
        } catch let error as ReceiptKitError {
            return "\(error.code): \(error.reason)"
        } catch {
            return "\(error)"
        }
    }

    /// Expects lifting to change nothing a reader or an error shows.
    static func expectSameOutcome(
        _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation, _ read: (JSONObject) throws -> [String?]
    ) {
        let lifted = outcome(bytes, lifting: true, read)
        let reference = outcome(bytes, lifting: false, read)
        #expect(lifted == reference, "\(String(decoding: bytes, as: UTF8.self).prefix(200))", sourceLocation: sourceLocation)
    }

    @Test("lifted values read back byte for byte, short ones stay with jansson")
    func readBack() throws {
        let sixteen = String(Self.printable.prefix(16))
        let text = """
            {"a":"\(Self.jwsLike)","b":"\(Self.printable)","c":"\(sixteen)","d":"\(sixteen.prefix(4))",\
            "e":"","f":"abc","n":12,"o":{"inner":"\(Self.jwsLike.prefix(100))"}}
            """
        let document = try Self.parse(text)
        #expect(document.liftedStringCount == 5)  // a, b, c, d, o.inner: 4 bytes and more
        #expect(document.liftedNameCount == 1)  // inner: 4 bytes and more
        try document.withRoot(code: .malformedPayload) { root throws in
            #expect(try root.string("a") == Self.jwsLike)
            #expect(try root.utf8String("a") == Array(Self.jwsLike.utf8))
            #expect(try root.string("b") == Self.printable)
            #expect(try root.string("c") == sixteen)
            #expect(try root.string("d") == String(sixteen.prefix(4)))
            #expect(try root.string("e") == "")
            #expect(try root.string("f") == "abc")
            #expect(try root.int64("n") == 12)
            #expect(try root.object("o")?.string("inner") == String(Self.jwsLike.prefix(100)))
        }
    }

    @Test("member names are found by their markers, whatever the whitespace before ':'")
    func keys() throws {
        let key = String(Self.jwsLike.prefix(40))
        let text = "{\"\(key)\" \t\r\n: \"\(Self.jwsLike)\" ,\n\"\(key)x\":1,\"\(Self.printable)\":true}"
        let document = try Self.parse(text)
        #expect(document.liftedStringCount == 1)
        #expect(document.liftedNameCount == 3)
        try document.withRoot(code: .malformedPayload) { root throws in
            #expect(try root.string(JSONKey(key)) == Self.jwsLike)
            #expect(try root.int64(JSONKey(key + "x")) == 1)
            #expect(try root.bool(JSONKey(Self.printable)) == true)
            #expect(root.contains(JSONKey(key)))
            // Names that are not members: a prefix, an extension, one differing past eight bytes.
            #expect(!root.contains(JSONKey(String(key.prefix(39)))))
            #expect(!root.contains(JSONKey(key + "xy")))
            #expect(!root.contains(JSONKey(String(key.prefix(20)) + "?" + String(key.dropFirst(21)))))
            #expect(!root.contains("x"))
        }
    }

    @Test("one name in several objects has one marker, and each object finds its own member")
    func sharedNames() throws {
        let text = """
            {"transactionId":"1000","data":{"transactionId":"2000","bundleId":"com.example","list":\
            [{"transactionId":"3000"},{"bundleId":"com.other"}]},"bundleId":"transactionId"}
            """
        let document = try Self.parse(text)
        #expect(document.liftedNameCount == 4)  // transactionId, data, bundleId, list
        try document.withRoot(code: .malformedPayload) { root throws in
            #expect(try root.string("transactionId") == "1000")
            #expect(try root.string("bundleId") == "transactionId")
            let data = try #require(try root.object("data"))
            #expect(try data.string("transactionId") == "2000")
            #expect(try data.string("bundleId") == "com.example")
            let list = try #require(try data.array("list"))
            #expect(try list.object(at: 0).string("transactionId") == "3000")
            #expect(try list.object(at: 0).string("bundleId") == nil)
            #expect(try list.object(at: 1).string("bundleId") == "com.other")
            #expect(try list.object(at: 1).string("transactionId") == nil)
        }
        Self.expectSameOutcome(Array(text.utf8)) { root in
            [try root.string("transactionId"), try root.object("data")?.string("bundleId")]
        }
    }

    @Test("past 99 distinct names, new names stay as they are; every name is still found")
    func manyNames() throws {
        // 150 distinct names, then the first 10 again in a nested object, then a duplicate of a
        // name past the limit, which jansson must still reject.
        let names = (0..<150).map { "name\($0)" }
        let members = names.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",")
        let nested = names.prefix(10).map { "\"\($0)\":\"v-\($0)\"" }.joined(separator: ",")
        let text = "{\(members),\"nested\":{\(nested),\"\(names[120])\":1}}"
        let document = try Self.parse(text)
        #expect(document.liftedNameCount == JSONDocument.maximumLiftedNameCount)
        try document.withRoot(code: .malformedPayload) { root throws in
            for (value, name) in names.enumerated() {
                #expect(try root.int64(JSONKey(name)) == Int64(value))
            }
            let inner = try #require(try root.object("nested"))
            for name in names.prefix(10) {
                #expect(try inner.string(JSONKey(name)) == "v-\(name)")
            }
            #expect(try inner.int64(JSONKey(names[120])) == 1)
            #expect(try inner.int64(JSONKey(names[11])) == nil)
            #expect(try inner.int64(JSONKey(names[130])) == nil)
            #expect(try root.int64("name150") == nil)
        }
        for duplicated in [names[5], names[140]] {
            let text = "{\(members),\"\(duplicated)\":0}"
            let error = expectRejection(.malformedPayload) { _ = try Self.parse(text) }
            #expect(error?.reason.contains("duplicate object key") == true, "\(error?.reason ?? "")")
        }
    }

    @Test("a value is lifted only when its marker is no longer than it")
    func markerLengths() throws {
        // Values 0–99 have markers of 3 or 4 bytes; from the 100th, a 4-byte value stays.
        let values = (0..<150).map { String(format: "%04d", $0) }
        let text = "{\"list\":[\(values.map { "\"\($0)\"" }.joined(separator: ","))],\"last\":\"12345\"}"
        let document = try Self.parse(text)
        #expect(document.liftedStringCount == 101)  // 100 four-byte values, then the 5-byte one
        try document.withRoot(code: .malformedPayload) { root throws in
            #expect(try root.strings("list") == values)
            #expect(try root.string("last") == "12345")
        }
    }

    @Test("duplicate members are still rejected when names or values are long strings")
    func duplicates() throws {
        let key = String(Self.jwsLike.prefix(40))
        let texts = [
            "{\"a\":\"\(Self.jwsLike)\",\"a\":\"\(Self.jwsLike)\"}",
            "{\"a\":\"\(Self.jwsLike)\",\"a\":\"\(Self.printable)\"}",
            "{\"\(key)\":\"\(Self.jwsLike)\",\"\(key)\":\"\(Self.printable)\"}",
            "{\"o\":{\"\(key)\":1,\"\(key)\":\"\(Self.jwsLike)\"}}",
        ]
        for text in texts {
            let error = expectRejection(.malformedPayload) { _ = try Self.parse(text) }
            #expect(error?.reason.contains("duplicate object key") == true, "\(error?.reason ?? "")")
            Self.expectSameOutcome(Array(text.utf8)) { _ in [] }
        }
    }

    @Test("a backslash anywhere turns lifting off, and the text still parses")
    func escapesDisableLifting() throws {
        let texts = [
            "{\"a\":\"x\\/y\",\"b\":\"\(Self.jwsLike)\"}",
            "{\"b\":\"\(Self.jwsLike)\\n\"}",
            "{\"b\":\"\(Self.jwsLike)\",\"k\\u0041\":1}",
        ]
        for text in texts {
            let document = try Self.parse(text)
            #expect(document.liftedStringCount == 0)
            Self.expectSameOutcome(Array(text.utf8)) { root in
                [try root.string("a"), try root.string("b"), try root.int64("kA").map(String.init)]
            }
        }
        try Self.parse(texts[1]).withRoot(code: .malformedPayload) { root throws in
            #expect(try root.string("b") == Self.jwsLike + "\n")
        }
    }

    @Test("text that only looks like a marker is read as written")
    func markerLookalikes() throws {
        // An escaped tab or newline is genuine text here: the backslash turns lifting off.
        let escaped = "{\"a\":\"\\t0\",\"\\n0\":\"\(Self.jwsLike)\",\"name\":1}"
        let document = try Self.parse(escaped)
        #expect(document.liftedStringCount == 0)
        #expect(document.liftedNameCount == 0)
        try document.withRoot(code: .malformedPayload) { root throws in
            #expect(try root.string("a") == "\t0")
            #expect(try root.string("\n0") == Self.jwsLike)
            #expect(try root.int64("name") == 1)
        }
        // A raw tab or newline is invalid JSON, with or without lifting, with the same error.
        for byte: UInt8 in [0x09, 0x0A] {
            let value = Array("{\"a\":\"".utf8) + [byte, 0x30] + Array("\",\"b\":\"\(Self.jwsLike)\"}".utf8)
            let name = Array("{\"".utf8) + [byte, 0x30] + Array("\":\"\(Self.jwsLike)\",\"name\":1}".utf8)
            for text in [value, name] {
                expectRejection(.malformedPayload) { _ = try Self.parse(text) }
                Self.expectSameOutcome(text) { root in [try root.string("a"), try root.int64("name").map(String.init)] }
            }
        }
    }

    @Test("invalid text with long strings gives the error, offset included, of the text itself")
    func invalidText() throws {
        let long = Self.jwsLike
        let texts = [
            "{\"a\":\"\(long)\",}",
            "{\"a\" \"\(long)\"}",
            "{\"a\":\"\(long)\" \"b\":1}",
            "{\"a\":\"\(long)\"",
            "{\"a\":\"\(long)",
            "{\"\(long)\"}",
            "{\"a\":[\"\(long)\" \"\(long)\"]}",
            "{\"a\":\"\(long)\"}x",
            "\"\(long)\"",
            "[\"\(long)\"]",
            "{\"a\":\"\(long)\"} {\"b\":\"\(long)\"}",
            "{\"a\":tru\"\(long)\"}",
            "{\"a\":1\"\(long)\"}",
        ]
        for text in texts {
            expectRejection(.malformedPayload) { _ = try Self.parse(text) }
            Self.expectSameOutcome(Array(text.utf8)) { root in [try root.string("a")] }
        }
    }

    @Test("arrays of strings read back, element by element")
    func arrays() throws {
        let text = "{\"x5c\":[\"\(Self.jwsLike)\", \"short\" ,\"ab\",\"\(Self.printable)\"],\"list\":[[\"\(Self.jwsLike)\"]]}"
        let document = try Self.parse(text)
        #expect(document.liftedStringCount == 4)  // all but "ab"
        try document.withRoot(code: .malformedPayload) { root throws in
            #expect(try root.strings("x5c") == [Self.jwsLike, "short", "ab", Self.printable])
        }
    }

    @Test("a long string with any byte outside printable ASCII is left to jansson")
    func everyByte() throws {
        // 21 bytes: the byte under test at each position, in the 8-byte words and in the tail.
        for byte in UInt8(0)...UInt8(255) where byte != 0x22 && byte != 0x5C {
            for position in 0..<21 {
                var value = Array(repeating: UInt8(ascii: "A"), count: 21)
                value[position] = byte
                let text = Array("{\"a\":\"".utf8) + value + Array("\",\"b\":\"\(Self.jwsLike)\"}".utf8)
                Self.expectSameOutcome(text) { root in [try root.string("a"), try root.string("b")] }
                if let document = try? Self.parse(text) {
                    let printable = (0x20...0x7E).contains(byte)
                    #expect(document.liftedStringCount == (printable ? 2 : 1), "byte \(byte) at \(position)")
                }
            }
        }
        // Valid UTF-8 outside ASCII parses, unlifted, to the same text.
        let accented = String(repeating: "é", count: 20)
        try Self.parse("{\"a\":\"\(accented)\"}").withRoot(code: .malformedPayload) { root throws in
            #expect(try root.string("a") == accented)
        }
    }

    @Test("a byte outside printable ASCII is found in every part of a long string's scan")
    func everyPositionOfLongStrings() throws {
        // The scan reads 32 bytes at a time, then 8, then one: lengths around each step, with the
        // byte under test in each position.
        for length in [31, 32, 33, 40, 63, 64, 71, 72, 97] {
            for byte: UInt8 in [0x00, 0x1F, 0x7F, 0x80, 0xFF, 0x20, 0x7E] {
                for position in 0..<length {
                    var value = Array(repeating: UInt8(ascii: "A"), count: length)
                    value[position] = byte
                    let text = Array("{\"a\":\"".utf8) + value + Array("\"}".utf8)
                    Self.expectSameOutcome(text) { root in [try root.string("a")] }
                    if let document = try? Self.parse(text) {
                        let printable = (0x20...0x7E).contains(byte)
                        #expect(document.liftedStringCount == (printable ? 1 : 0), "byte \(byte) at \(position) of \(length)")
                    }
                }
            }
        }
    }

    @Test("any one byte changed in a document gives the same values or the same error")
    func mutations() throws {
        let key = String(Self.printable.prefix(20))
        let template = Array("""
            {"a":"\(Self.jwsLike.prefix(40))","\(key)":"\(Self.printable)","arr":["\(Self.jwsLike.prefix(30))","s",1],\
            "n":12, "o" : {"in":"\(Self.jwsLike.prefix(17))"}}
            """.utf8)
        let replacements: [UInt8] = [0x22, 0x3A, 0x2C, 0x5C, 0x01, 0x7D, 0x5D, 0x20, 0x78, 0x7F, 0xC3]
        for position in template.indices {
            for replacement in replacements where template[position] != replacement {
                var text = template
                text[position] = replacement
                Self.expectSameOutcome(text) { root in
                    [
                        try root.string("a"), try root.string(JSONKey(key)),
                        try root.array("arr").map { array in try (0..<2).map { try array.string(at: $0) }.joined(separator: "|") },
                        try root.int64("n").map(String.init), try root.object("o")?.string("in"),
                    ]
                }
            }
        }
    }
}
