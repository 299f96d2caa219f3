import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

/// ``StoredJSON``: what the store writes of a record or copy gives back exactly the JSON it was
/// given, text stored before it reads as it is, and a deflated value that is damaged is an error,
/// never other JSON.
@Suite("Stored JSON, deflated")
struct StoredJSONTests {
    /// Ledger copies as the store writes them, of every shape the tests make.
    static func copies() throws -> [[UInt8]] {
        let key = SubscriptionKey(bundleId: "com.example.app", environment: "Production", originalTransactionId: "2000000123456789")
        var copies = try (Int64(0)..<20).map { index in
            try StoreTests.copy(
                key, id: "\(2_000_000_123_456_789 + index)", purchase: 1_700_000_000 + index * 2_592_000, signed: 1_700_000_060 + index * 2_592_000,
                upgraded: index % 7 == 3, revoked: index % 9 == 4 ? 1_700_000_500 + index * 2_592_000 : nil
            ).jsonBytes()
        }
        copies.append(try StoreTests.renewalInfo(key, signed: 1_700_000_060).jsonBytes())
        return copies
    }

    @Test("a copy or record comes back byte for byte, much smaller, as text starting with ~")
    func roundTrip() throws {
        let record = Array(#"{"valid":true,"kind":"notification","environment":"Production","notification":{"type":"DID_RENEW"}}"#.utf8)
        var generator = RawCompactionTests.Generator(state: 0x5eed)
        // JSON the dictionary knows nothing of: a member holding random base64url.
        let unusual = Array(#"{"x":""#.utf8) + (0..<3000).map { _ in RawCompactionTests.base64URLAlphabet.randomElement(using: &generator)! }
            + Array(#""}"#.utf8)
        for json in try Self.copies() + [record, unusual] {
            let text = StoredJSON(json).stored
            #expect(text.utf8.first == StoredJSON.marker)
            #expect(try StoredJSON(stored: text).bytes == json)
            if json != unusual { #expect(text.utf8.count * 2 < json.count, "\(text.utf8.count) of \(json.count) bytes") }
        }
    }

    @Test("text stored before deflating reads as it is")
    func earlierText() throws {
        for json in try Self.copies() {
            let text = String(decoding: json, as: UTF8.self)
            #expect(try StoredJSON(stored: text).bytes == json)
        }
    }

    @Test("a damaged deflated value is an error: not base64url, unknown format, cut short, another length or checksum, trailing bytes")
    func damaged() throws {
        let json = try Self.copies()[0]
        let deflated = StoredJSON(json).deflated()
        func stored(_ bytes: [UInt8]) -> String { "~" + Base64URL.string(bytes) }
        #expect(try StoredJSON(stored: stored(deflated)).bytes == json)
        var lengthened = deflated
        lengthened[1] &+= 1  // the LEB128 length's first byte: one more than the stream holds
        var shortened = deflated
        shortened[1] &-= 1
        var otherFormat = deflated
        otherFormat[0] = 2
        var flipped = deflated
        flipped[flipped.count / 2] ^= 0x55
        let damaged: [(String, String)] = [
            ("~not base64url!", "not base64url"),
            (stored(otherFormat), "unknown format"),
            (stored(Array(deflated.dropLast(4))), "cut short"),
            (stored(lengthened), "a length past the stream's end"),
            (stored(shortened), "a length short of the stream's end"),
            (stored(deflated + [0, 0, 0]), "bytes after the stream"),
            (stored([1]), "no length"),
            (stored([1, 0x80, 0x80, 0x80, 0x80, 0x80]), "a length that never ends"),
            (stored([1, 0x80, 0x80, 0x80, 0x40]), "a length past the limit"),
            (stored(Array(deflated.prefix(4))), "no checksum"),
        ]
        for (text, what) in damaged {
            #expect(throws: StoreError.self, "\(what)") { try StoredJSON(stored: text) }
        }
        // The CRC-32 beside the length: a changed byte is caught even where the stream still
        // inflates to as many bytes.
        #expect(throws: StoreError.self, "a byte of the stream changed") { try StoredJSON(stored: stored(flipped)) }
    }
}

/// ``JSONMemberScan``: where it answers, it answers what a full decoding does.
@Suite("One JSON member, scanned")
struct JSONMemberScanTests {
    struct Record: Decodable {
        struct Notification: Decodable { let type: String? }
        let notification: Notification?
    }

    @Test("the scan agrees with JSONDecoder, or leaves the text to it")
    func agreesWithDecoding() throws {
        let texts = [
            #"{"kind":"notification","notification":{"type":"DID_RENEW","subtype":null}}"#,
            #"{"transactions":[{"a":"}]{[\"notification\":{\"type\":\"X\"}"},[1,2,{"b":[]}]],"notification":{"subtype":"Y","type":"SUBSCRIBED"}}"#,
            #"{ "notification" : { "type" : "REFUND" } }"#,
            #"{"notification":null}"#,
            #"{"notification":{"type":null}}"#,
            #"{"notification":{}}"#,
            #"{}"#,
            #"{"other":{"notification":{"type":"NOT_THIS"}},"n":-1.5e3,"t":true}"#,
            #"{"notification":{"type":"ESC\u0041PED"}}"#,
            #"{"notif\u0069cation":{"type":"A"}}"#,
            #"{"notification":{"type":"TEST"},"notification2":1}"#,
        ]
        var decided = 0
        for text in texts {
            let expected = try JSONDecoder().decode(Record.self, from: Data(text.utf8)).notification?.type
            switch JSONMemberScan.string(at: ["notification", "type"], in: Array(text.utf8)) {
            case .found(let type):
                decided += 1
                #expect(type == expected, "\(text)")
            case .undecided:
                continue
            }
        }
        #expect(decided == texts.count - 2, "all but the two with escapes in what is asked for")
        for text in [#"["notification"]"#, #"{"notification":{"type":1}}"#, #"{"notification":"type"}"#, ""] {
            #expect(JSONMemberScan.string(at: ["notification", "type"], in: Array(text.utf8)) == .undecided, "\(text)")
        }
    }
}
