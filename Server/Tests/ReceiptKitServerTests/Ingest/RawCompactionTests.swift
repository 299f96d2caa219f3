import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

/// ``RawCompaction``: what it finds to replace, that expanding gives back exactly the bytes
/// compacted (real notification bodies, each of the three base64 alignments, random bytes), and
/// that a stored form it cannot expand is an error, never other bytes.
@Suite("Raw bytes with JWS headers stored once")
struct RawCompactionTests {
    /// A small deterministic generator (xorshift64*), so that a failure can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    static let base64URLAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A header-like segment: `eyJ` and `count - 3` base64url characters.
    static func segment(count: Int, using generator: inout Generator) -> [UInt8] {
        Array("eyJ".utf8) + (3..<count).map { _ in base64URLAlphabet.randomElement(using: &generator)! }
    }

    @Test("a notification body: its one header, met three times, is stored once, and the body comes back exactly")
    func notificationBody() throws {
        let payloads = try Payloads()
        let transaction = try payloads.transaction(id: "1", original: "1", purchase: 1, expires: 2, signed: 1)
        let renewal = try payloads.renewalInfo(original: "1", signed: 1)
        let jws = try payloads.notification(type: "SUBSCRIBED", signed: 1, transaction: transaction, renewalInfo: renewal)
        let body = Array(Vectors.body(wrapping: jws).utf8)

        let segments = RawCompaction.headerSegments(in: body, nested: [transaction, renewal])
        let header = Array(jws.utf8.prefix { $0 != UInt8(ascii: ".") })
        #expect(segments == [header])
        let compacted = try #require(RawCompaction.compact(body, headers: [RawCompaction.Header(id: 7, segment: header)]))
        #expect(try RawCompaction.references(in: compacted) == [7])
        let header7 = RawCompaction.Header(id: 7, segment: header)
        let occurrences = header7.forms.filter { !$0.isEmpty }.map { RawCompaction.occurrences(of: $0, in: body).count }
        #expect(occurrences.reduce(0, +) == 3, "the outer header and both nested ones: \(occurrences)")
        #expect(compacted.count * 2 < body.count, "\(compacted.count) of \(body.count) bytes")
        #expect(try RawCompaction.expand(compacted, segments: [7: header]) == body)
        #expect(try RawCompaction.raw(stored: compacted, encoding: 1) { ids in ids == [7] ? [7: header] : [:] } == body)
        #expect(try RawCompaction.raw(stored: body, encoding: 0) { _ in [:] } == body)
    }

    @Test("a header nested in a base64url payload is found at each of the three alignments", arguments: 0..<3)
    func nestedAlignment(offset: Int) throws {
        var generator = Generator(state: 0x5EED + UInt64(offset))
        let header = Self.segment(count: 301, using: &generator)
        let payload = Array(repeating: UInt8(ascii: "p"), count: 10 + offset) + header + Array(".rest".utf8)
        let raw = Array("{\"x\":\"".utf8) + Base64URL.encode(payload[...]) + Array("\"}".utf8)
        let compacted = try #require(RawCompaction.compact(raw, headers: [RawCompaction.Header(id: 1, segment: header)]))
        let referenceAt = try #require(compacted.firstIndex(of: RawCompaction.escape))
        // A header starting at byte 10 + offset starts its whole groups (3 - (10 + offset) % 3) % 3 bytes in.
        #expect(compacted[referenceAt + 1] == UInt8(1 + (3 - (10 + offset) % 3) % 3))
        #expect(try RawCompaction.expand(compacted, segments: [1: header]) == raw)
    }

    @Test("random bytes with header forms put anywhere, overlapping or not, come back exactly")
    func randomRoundTrips() throws {
        var generator = Generator(state: 0x0123_4567_89AB_CDEF)
        var compactedCount = 0
        for _ in 0..<400 {
            let headers = (1...Int.random(in: 1...3, using: &generator)).map { id in
                RawCompaction.Header(id: Int64(id) << 40 | 0xFF, segment: Self.segment(count: Int.random(in: 64...400, using: &generator), using: &generator))
            }
            var raw: [UInt8] = []
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                raw += (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) }
                let header = headers.randomElement(using: &generator)!
                let form = header.forms[Int.random(in: 0..<4, using: &generator)]
                // Sometimes only part of a form, sometimes one form straight after another.
                raw += Bool.random(using: &generator) ? form : Array(form.prefix(Int.random(in: 0...form.count, using: &generator)))
            }
            guard let compacted = RawCompaction.compact(raw, headers: headers) else {
                #expect(headers.allSatisfy { header in header.forms.allSatisfy { $0.isEmpty || RawCompaction.occurrences(of: $0, in: raw).isEmpty } })
                continue
            }
            compactedCount += 1
            let segments = Dictionary(uniqueKeysWithValues: headers.map { ($0.id, $0.forms[0]) })
            #expect(try RawCompaction.expand(compacted, segments: segments) == raw)
            #expect(try RawCompaction.references(in: compacted).isSubset(of: Set(segments.keys)))
            #expect(compacted.count <= raw.count)
        }
        #expect(compactedCount > 200)
    }

    @Test("bytes holding 0x00, or no header form, are stored verbatim")
    func verbatim() throws {
        var generator = Generator(state: 42)
        let segment = Self.segment(count: 100, using: &generator)
        let header = RawCompaction.Header(id: 1, segment: segment)
        #expect(RawCompaction.compact(Array("{\"a\":\"".utf8) + segment + [0] + Array(".\"}".utf8), headers: [header]) == nil)
        #expect(RawCompaction.compact(Array("{\"a\":1}".utf8), headers: [header]) == nil)
        #expect(RawCompaction.compact(segment, headers: []) == nil)
    }

    @Test("a stored form that does not expand is an error")
    func corruptForms() throws {
        let segment = Array(repeating: UInt8(ascii: "A"), count: 90)
        let id: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 3]
        #expect(try RawCompaction.expand([1, 2] + [0, 0] + id + [9], segments: [3: segment]) == [1, 2] + segment + [9])
        #expect(throws: StoreError.self) { try RawCompaction.expand([1, 0, 0, 0, 0], segments: [3: segment]) }
        #expect(throws: StoreError.self) { try RawCompaction.expand([0, 4] + id, segments: [3: segment]) }
        #expect(throws: StoreError.self) { try RawCompaction.expand([0, 0] + id, segments: [4: segment]) }
        // A form the segment is too short to have.
        #expect(throws: StoreError.self) { try RawCompaction.expand([0, 0] + id, segments: [3: Array(segment.prefix(40))]) }
        #expect(throws: StoreError.self) { try RawCompaction.raw(stored: [1], encoding: 4) { _ in [:] } }
    }

    @Test("stored deflated when smaller, compacted or not; the bytes come back exactly, and a damaged deflated form is an error")
    func deflated() throws {
        let payloads = try Payloads()
        let transaction = try payloads.transaction(id: "1", original: "1", purchase: 1, expires: 2, signed: 1)
        let renewal = try payloads.renewalInfo(original: "1", signed: 1)
        let body = Array(Vectors.body(wrapping: try payloads.notification(type: "DID_RENEW", signed: 1, transaction: transaction, renewalInfo: renewal)).utf8)
        let header = RawCompaction.headerSegments(in: body, nested: [transaction, renewal])[0]
        let compacted = try #require(RawCompaction.compact(body, headers: [RawCompaction.Header(id: 3, segment: header)]))
        for (bytes, encoding, deflated) in [
            (compacted, RawEncoding.headerReferences, RawEncoding.deflatedHeaderReferences), (body, .verbatim, .deflatedVerbatim),
        ] {
            let stored = RawCompaction.stored(bytes, encoding: encoding)
            #expect(stored.encoding == deflated)
            #expect(stored.bytes.count * 4 < bytes.count * 3, "\(stored.bytes.count) of \(bytes.count) bytes")
            #expect(try RawCompaction.raw(stored: stored.bytes, encoding: deflated.rawValue) { ids in ids == [3] ? [3: header] : [:] } == body)
            #expect(try RawCompaction.references(stored: stored.bytes, encoding: deflated.rawValue) == (encoding == .headerReferences ? [3] : []))
            var damaged = stored.bytes
            damaged[damaged.count / 2] ^= 0x01
            #expect(throws: StoreError.self) { try RawCompaction.raw(stored: damaged, encoding: deflated.rawValue) { _ in [3: header] } }
            #expect(throws: StoreError.self) { try RawCompaction.raw(stored: Array(stored.bytes.dropLast(9)), encoding: deflated.rawValue) { _ in [3: header] } }
        }
        // Bytes deflating cannot shrink are kept as they are.
        var generator = Generator(state: 99)
        let random = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let stored = RawCompaction.stored(random, encoding: .verbatim)
        #expect(stored.encoding == .verbatim && stored.bytes == random)
        #expect(throws: StoreError.self) { try RawCompaction.raw(stored: random, encoding: 4) { _ in [:] } }
    }

    @Test("headers found: a JWS's first segment as it is (not inside a longer run or after a '.', long enough, before a '.'), and nested ones, each once")
    func headerSegments() {
        var generator = Generator(state: 7)
        let a = Self.segment(count: 80, using: &generator)
        let b = Self.segment(count: 90, using: &generator)
        let short = Self.segment(count: 40, using: &generator)
        let raw = Array("{\"x\":\"".utf8) + a + Array(".".utf8) + b + Array(".s\",\"y\":\"".utf8) + a + Array(".q.t\",\"z\":\"x".utf8) + b
            + Array(".r\",\"w\":\"".utf8) + short + Array(".s\",\"v\":\"".utf8) + b + Array("\"}".utf8)
        #expect(RawCompaction.headerSegments(in: raw, nested: []) == [a])
        let nested = String(decoding: b, as: UTF8.self) + ".payload.signature"
        #expect(RawCompaction.headerSegments(in: raw, nested: [nested, nested]) == [a, b])
    }

    @Test("the sampling finder finds what a scan finds: random texts, repeated and adjacent needles, periodic needles")
    func finderMatchesScan() {
        var generator = Generator(state: 0xF1ED)
        for round in 0..<300 {
            let alphabet: [UInt8] = round.isMultiple(of: 3) ? Array("ab".utf8) : Self.base64URLAlphabet
            let length = Int.random(in: 8...200, using: &generator)
            let needle = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            var text: [UInt8] = []
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                text += (0..<Int.random(in: 0...30, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
                text += Bool.random(using: &generator) ? needle : Array(needle.dropFirst(Int.random(in: 0...length, using: &generator)))
            }
            let finder = RawCompaction.Finder(needle)
            #expect(finder.occurrences(in: text) == RawCompaction.occurrences(of: needle, in: text), "round \(round)")
        }
    }
}

extension RawCompaction {
    /// The non-overlapping ranges where `needle` occurs in `haystack`, from the left, found byte
    /// by byte: the reference the finder and the compaction are checked against.
    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        guard !needle.isEmpty else { return ranges }
        var start = 0
        while start + needle.count <= haystack.count {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) {
                ranges.append(start..<(start + needle.count))
                start += needle.count
            } else {
                start += 1
            }
        }
        return ranges
    }
}
