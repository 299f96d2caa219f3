import Foundation
import ReceiptKit
import Testing

/// Strict decoding: serialization, header, payload types and the signature encoding.
@Suite("JWS decoding")
struct JWSDecodingTests {
    static let transaction = """
        {"transactionId":"1","originalTransactionId":"1","bundleId":"com.receiptkit.example","productId":"p",\
        "purchaseDate":1748779200000,"quantity":1,"type":"Consumable","inAppOwnershipType":"PURCHASED",\
        "signedDate":1748779200123,"environment":"Sandbox","price":990,"currency":"EUR","isUpgraded":false}
        """

    let signer: TestSigner
    let verifier: AppStoreVerifier

    init() throws {
        signer = try TestSigner.standard()
        verifier = try Fixtures.testVerifier()
    }

    @Test("a freshly signed transaction verifies")
    func valid() throws {
        let verified = try verifier.verifyTransaction(signer.sign(payload: Self.transaction))
        #expect(verified.payload.transactionId == "1")
        #expect(verified.payload.price == 990)
        #expect(verified.validatedAt.iso8601 == "2025-06-01T12:00:00.123Z")
    }

    @Test("segments must be exactly three canonical unpadded base64url strings")
    func serialization() throws {
        let token = try signer.sign(payload: Self.transaction)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let broken = [
            parts[0] + "." + parts[1],
            token + ".",
            parts[0] + "=." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + "=",
            parts[0] + " ." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "+." + parts[2],
            parts[0] + "." + parts[1] + "." + String(parts[2].dropLast()),  // length ≡ 1 (mod 4) or bits
            parts[0] + "." + parts[1] + "\u{00E9}." + parts[2],
        ]
        for text in broken {
            expectRejection(.malformedJWS) { _ = try verifier.verifyTransaction(text) }
        }
    }

    @Test("non-canonical trailing bits are refused")
    func trailingBits() throws {
        // "QQ" and "QR" both decode to "A"; only "QQ" is canonical.
        let token = try signer.sign(payload: Self.transaction)
        let parts = token.split(separator: ".").map(String.init)
        let payload = Base64URL.string(Array(Self.transaction.utf8))
        try #require(payload.count % 4 != 0, "the payload's encoding must end in a partial group")
        let last = payload.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = alphabet.firstIndex(of: last)!
        let bumped = String(payload.dropLast()) + String(alphabet[index + 1])
        expectRejection(.malformedJWS) { _ = try verifier.verifyTransaction(parts[0] + "." + bumped + "." + parts[2]) }
    }

    @Test("an empty segment is zero bytes: alg none with no signature is an algorithm error")
    func algNone() throws {
        let header = Base64URL.string(Array("{\"alg\":\"none\"}".utf8))
        let payload = Base64URL.string(Array(Self.transaction.utf8))
        expectRejection(.unsupportedAlgorithm) { _ = try verifier.verifyTransaction(header + "." + payload + ".") }
        // And an ES256 token with an empty signature segment is a signature error.
        let token = try signer.sign(payload: Self.transaction)
        let unsigned = String(token[..<token.lastIndex(of: ".")!]) + "."
        expectRejection(.invalidSignature) { _ = try verifier.verifyTransaction(unsigned) }
    }

    @Test("the size limit is configurable and checked first")
    func sizeLimit() throws {
        let token = try signer.sign(payload: Self.transaction)
        let small = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors(), maximumJWSSize: token.utf8.count - 1))
        expectRejection(.inputTooLarge) { _ = try small.verifyTransaction(token) }
        let exact = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors(), maximumJWSSize: token.utf8.count))
        #expect(throws: Never.self) { _ = try exact.verifyTransaction(token) }
    }

    @Test("header rules", arguments: [
        ("{\"alg\":\"ES256\",\"alg\":\"ES256\",\"x5c\":X5C}", "malformed_header"),
        ("{\"alg\":\"ES256\",\"x5c\":X5C,\"crit\":[\"b64\"]}", "malformed_header"),
        ("[\"ES256\"]", "malformed_header"),
        ("{\"alg\":\"ES256\",\"x5c\":\"MIIB\"}", "malformed_header"),
        ("{\"x5c\":X5C}", "unsupported_algorithm"),
        ("{\"alg\":\"RS256\",\"x5c\":X5C}", "unsupported_algorithm"),
        ("{\"alg\":\"ES256 \",\"x5c\":X5C}", "unsupported_algorithm"),
        ("{\"alg\":1,\"x5c\":X5C}", "unsupported_algorithm"),
        ("{\"alg\":\"ES256\"}", "missing_certificate_chain"),
        ("{\"alg\":\"ES256\",\"x5c\":null}", "missing_certificate_chain"),
        ("{\"alg\":\"ES256\",\"x5c\":[]}", "missing_certificate_chain"),
        ("{\"alg\":\"ES256\",\"x5c\":[\"@@@@\"]}", "malformed_certificate"),
        ("{\"alg\":\"ES256\",\"x5c\":[\"AAAA\",\"AAAA\",\"AAAA\"]}", "malformed_certificate"),
        ("{\"alg\":\"ES256\",\"x5c\":[true]}", "malformed_certificate"),
        ("{\"alg\":\"ES256\",\"x5c\":[\"A\",\"A\",\"A\",\"A\",\"A\",\"A\",\"A\",\"A\",\"A\"]}", "invalid_chain_length"),
    ])
    func header(_ template: String, _ code: String) throws {
        let x5c = "[" + signer.chain.map { "\"\(Data($0).base64EncodedString())\"" }.joined(separator: ",") + "]"
        let header = template.replacingOccurrences(of: "X5C", with: x5c)
        let token = try signer.sign(payload: Self.transaction, header: header)
        expectRejection(code) { _ = try verifier.verifyTransaction(token) }
    }

    @Test("a certificate with trailing bytes is malformed")
    func trailingCertificateBytes() throws {
        var padded = signer
        padded.chain[0] += [0x00]
        expectRejection(.malformedCertificate) { _ = try verifier.verifyTransaction(padded.sign(payload: Self.transaction)) }
    }

    @Test("every member Apple defines must have Apple's JSON type", arguments: [
        ("transactionId", "1"), ("bundleId", "true"), ("purchaseDate", "\"1748779200000\""), ("quantity", "1.5"),
        ("quantity", "\"1\""), ("price", "\"990\""), ("price", "9.9"), ("isUpgraded", "\"false\""),
        ("isUpgraded", "0"), ("signedDate", "\"2025-06-01T12:00:00Z\""), ("offerType", "\"1\""),
        ("revocationReason", "true"), ("advancedCommerceInfo", "[]"), ("commitmentInfo", "\"x\""),
        ("environment", "{}"), ("quantity", "4294967296"),
    ])
    func typeConfusion(_ member: String, _ value: String) throws {
        var object = try parseJSON(Self.transaction)
        object[member] = nil
        let base = try String(decoding: JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let payload = String(base.dropLast()) + ",\"\(member)\":\(value)}"
        let error = expectRejection(.malformedPayload) { _ = try verifier.verifyTransaction(signer.sign(payload: payload)) }
        #expect(error?.reason.contains(member) == true, "the reason names the member: \(String(describing: error))")
    }

    @Test("payload must be one strict JSON object", arguments: [
        "[1]", "{\"transactionId\":\"1\",\"transactionId\":\"2\"}", "\u{FEFF}{}", "{} x", "{\"a\":\"\\u0000\"}", "",
        "{\"a\":1e999999}",
    ])
    func payloadShape(_ payload: String) throws {
        expectRejection(.malformedPayload) { _ = try verifier.verifyTransaction(signer.sign(payload: payload)) }
    }

    @Test("payload that is not UTF-8 is malformed")
    func payloadEncoding() throws {
        let token = try signer.sign(payloadBytes: [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D],
                                    headerBytes: Array(signer.header().utf8))
        expectRejection(.malformedPayload) { _ = try verifier.verifyTransaction(token) }
    }

    @Test("unknown members are ignored and unknown enum values kept raw")
    func unknownValues() throws {
        let payload = String(Self.transaction.dropLast())
            + ",\"type\":\"Quantum Subscription\",\"inAppOwnershipType\":\"BORROWED\",\"newField\":{\"x\":[1,2]}}"
        var object = try parseJSON(Self.transaction)
        object["type"] = nil
        object["inAppOwnershipType"] = nil
        _ = payload
        let base = try String(decoding: JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let extended = String(base.dropLast())
            + ",\"type\":\"Quantum Subscription\",\"inAppOwnershipType\":\"BORROWED\",\"offerType\":9,\"newField\":{\"x\":[1,2]}}"
        let record = try verifier.verify(signer.sign(payload: extended))
        let transaction = try #require(record.transactions.first)
        #expect(transaction.productType == "Quantum Subscription")
        #expect(transaction.ownershipType == "BORROWED")
        #expect(transaction.offer?.type == "9")
    }

    @Test("fractional millisecond dates are accepted and floored")
    func fractionalDates() throws {
        var object = try parseJSON(Self.transaction)
        object["purchaseDate"] = nil
        object["signedDate"] = nil
        let base = try String(decoding: JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let payload = String(base.dropLast()) + ",\"purchaseDate\":1697679936049.7297,\"signedDate\":1748779200999.999}"
        let verified = try verifier.verifyTransaction(signer.sign(payload: payload))
        #expect(verified.payload.purchaseDate?.iso8601 == "2023-10-19T01:45:36.049Z")
        #expect(verified.validatedAt.iso8601 == "2025-06-01T12:00:00.999Z")
    }
}

/// The ES256 signature: encoding, range and verification.
@Suite("ES256 signature")
struct SignatureTests {
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// `n - x` for 32-byte big-endian values.
    static func negate(_ x: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(order[index]) - Int(x[index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            result[index] = UInt8(digit)
        }
        return result
    }

    func token(r: [UInt8], s: [UInt8]) throws -> (String, AppStoreVerifier) {
        let signer = try TestSigner.standard()
        let input = Base64URL.string(Array(signer.header().utf8)) + "." + Base64URL.string(Array(JWSDecodingTests.transaction.utf8))
        return (input + "." + Base64URL.string(r + s), try Fixtures.testVerifier())
    }

    @Test("high-S signatures are valid ECDSA and verify, as at Apple")
    func highS() throws {
        let signer = try TestSigner.standard()
        let input = Base64URL.string(Array(signer.header().utf8)) + "." + Base64URL.string(Array(JWSDecodingTests.transaction.utf8))
        let (r, s) = try signer.rawSignature(over: Array(input.utf8))
        let verifier = try Fixtures.testVerifier()
        #expect(throws: Never.self) { _ = try verifier.verifyTransaction(input + "." + Base64URL.string(r + s)) }
        #expect(throws: Never.self) { _ = try verifier.verifyTransaction(input + "." + Base64URL.string(r + Self.negate(s))) }
    }

    @Test("r or s zero, at or above the order, or the wrong length: invalid_signature")
    func outOfRange() throws {
        let signer = try TestSigner.standard()
        let input = Base64URL.string(Array(signer.header().utf8)) + "." + Base64URL.string(Array(JWSDecodingTests.transaction.utf8))
        let (r, s) = try signer.rawSignature(over: Array(input.utf8))
        let zero = [UInt8](repeating: 0, count: 32)
        let allOnes = [UInt8](repeating: 0xFF, count: 32)
        let verifier = try Fixtures.testVerifier()
        for raw in [zero + s, r + zero, Self.order + s, r + Self.order, allOnes + s, zero + zero, Array((r + s).dropFirst()),
                    r + s + [0], Array(r + s).reversed()] {
            expectRejection(.invalidSignature) { _ = try verifier.verifyTransaction(input + "." + Base64URL.string(raw)) }
        }
    }

    @Test("a signature over other bytes, or by another key, is refused")
    func wrongMessageOrKey() throws {
        let signer = try TestSigner.standard()
        let verifier = try Fixtures.testVerifier()
        let token = try signer.sign(payload: JWSDecodingTests.transaction)
        let otherSignature = try signer.sign(payload: JWSDecodingTests.transaction.replacingOccurrences(of: "990", with: "991"))
        let spliced = String(token[..<token.lastIndex(of: ".")!]) + String(otherSignature[otherSignature.lastIndex(of: ".")!...])
        expectRejection(.invalidSignature) { _ = try verifier.verifyTransaction(spliced) }
        var otherKey = signer
        otherKey.keyFile = "pki/other-leaf.key"
        expectRejection(.invalidSignature) { _ = try verifier.verifyTransaction(otherKey.sign(payload: JWSDecodingTests.transaction)) }
    }
}

/// Nesting limits: deep JSON is refused by jansson's depth limit, never a stack overflow.
@Suite("JSON depth")
struct JSONDepthTests {
    @Test("JSON nested beyond jansson's depth limit is refused, not a stack overflow", arguments: [2_100, 100_000])
    func deepPayload(_ depth: Int) throws {
        let signer = try TestSigner.standard()
        let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let payload = "{\"transactionId\":\"1\",\"signedDate\":1748779200123,\"extra\":\(deep)}"
        let verifier = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors(), maximumJWSSize: 1 << 20))
        let error = expectRejection(.malformedPayload) { _ = try verifier.verifyTransaction(signer.sign(payload: payload)) }
        #expect(error?.reason.contains("depth") == true, "\(String(describing: error))")
        // Deep but within the limit, in a member ReceiptKit ignores: accepted.
        let shallow = String(repeating: "[", count: 1_000) + String(repeating: "]", count: 1_000)
        #expect(throws: Never.self) {
            _ = try verifier.verifyTransaction(signer.sign(payload: payload.replacingOccurrences(of: deep, with: shallow)))
        }
    }
}
