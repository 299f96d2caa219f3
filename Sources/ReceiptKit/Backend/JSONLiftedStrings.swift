#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain strings taken out of a JSON text before jansson parses it, and read back from the
/// original bytes.
///
/// jansson's lexer spends about 150 instructions on each byte of a string, and a notification's
/// payload is mostly two nested JWS held as string values, several KB of base64url each: parsing
/// them cost as much as a P-256 signature verification. What is left after they go is mostly
/// member names. So, before jansson runs, one pass over the text replaces, in a copy, each plain
/// string value and each plain member name by a short marker; jansson parses the copy with the
/// same strict flags, and ``JSONObject`` and ``JSONArray`` read a value's marker as the bytes it
/// stands for and look a name up by its marker. jansson still judges every byte it would have
/// judged:
///
/// - Nothing is lifted from a text with a backslash anywhere. Without escapes, every `"` opens
///   or closes a string, so one pass finds each string literal exactly where jansson's lexer does.
/// - A string is lifted only when its content is printable ASCII (0x20–0x7E): content jansson
///   accepts as it stands and decodes to itself, so the bytes read back are the ones jansson would
///   have produced, and a string jansson would reject (a control byte, invalid UTF-8) stays in the
///   copy for jansson to reject. It must also be at least as long as its marker, so the copy is
///   never longer than the text.
/// - A string followed, after any whitespace, by `:` is a member name. Names are interned: every
///   occurrence of one name gets the same marker, `\n` and the name's index among the document's
///   lifted names, and different names get different markers, so jansson finds exactly the
///   duplicate members it would have found (`JSON_REJECT_DUPLICATES`). Only the first
///   ``maximumNameCount`` distinct names are lifted; a name first seen later stays as it is, in
///   every occurrence.
/// - A value's marker is `\t` and the value's index in decimal.
/// - Raw control bytes are invalid in JSON strings and the text has no escape, so no string
///   jansson accepts from it can hold U+0009 or U+000A: a string that starts with one is a
///   marker, and nothing else is.
///
/// The copy has the same tokens as the original except the content of valid strings, so jansson
/// accepts one exactly when it accepts the other, with the same structure. Error reasons carry
/// jansson's offset into the text, though, so ``JSONDocument`` parses the original again when the
/// copy fails, and reports that.
final class JSONLiftedStrings {
    /// The shortest string content lifted. Lifting a string of 1–3 bytes saves jansson nothing.
    static let minimumLength = 4
    /// How many distinct member names are lifted: with fewer than 100, every name's marker is
    /// at most 4 bytes, and so never longer than a name that is lifted.
    static let maximumNameCount = 99

    /// The original text, which the lifted values are read from.
    private let original: [UInt8]
    /// Each lifted value's content (between its quotes), as a range of ``original``.
    private let ranges: [Range<Int>]
    /// The lifted member names.
    private let names: Names

    /// The number of values lifted.
    var count: Int { ranges.count }
    /// The number of distinct member names lifted.
    var nameCount: Int { names.ranges.count }

    private init(original: [UInt8], ranges: [Range<Int>], names: Names) {
        self.original = original
        self.ranges = ranges
        self.names = names
    }

    /// The copy of `text` jansson parses, with each liftable string replaced by its marker, and
    /// what it lifted; `nil` when nothing is lifted (see the type's rules).
    ///
    /// - Parameter text: The JSON text, as received.
    static func lift(_ text: [UInt8]) -> (copy: [UInt8], strings: JSONLiftedStrings)? {
        guard text.count >= minimumLength + 2 else { return nil }
        var values: [Range<Int>] = []
        var names = Names()
        // Every marker is no longer than what it replaces, so the copy fits in the text's size.
        let copy = [UInt8](unsafeUninitializedCapacity: text.count) { buffer, initialized in
            initialized = text.withUnsafeBufferPointer { text in
                writeCopy(of: text, to: buffer.baseAddress!, values: &values, names: &names)
            }
        }
        guard !values.isEmpty || !names.ranges.isEmpty else { return nil }
        return (copy, JSONLiftedStrings(original: text, ranges: values, names: names))
    }

    /// The original bytes of the value `string` (a parsed string's content) stands for, or `nil`
    /// when it is not a value's marker.
    func value(of string: UnsafeBufferPointer<UInt8>) -> ArraySlice<UInt8>? {
        guard string.count >= 2, string[0] == valueMarkerByte else { return nil }
        var index = 0
        for digit in string[1...] {
            guard digit &- UInt8(ascii: "0") < 10 else { return nil }
            index = index * 10 + Int(digit &- UInt8(ascii: "0"))
        }
        guard index < ranges.count else { return nil }
        return original[ranges[index]]
    }

    /// Calls `body` with the name jansson holds for the member `name` (its marker when the name
    /// was lifted, the name itself otherwise) and returns what it returns; returns `nil` without
    /// calling it when no object in the text can have that member.
    ///
    /// Every printable-ASCII name of ``minimumLength`` bytes or more in the text was lifted unless
    /// the names overflowed ``maximumNameCount``; so when they did not, such a name that is not
    /// among them is in no object, and jansson need not be asked.
    func withParsedName<Result>(
        _ name: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Result?
    ) -> Result? {
        guard name.count >= Self.minimumLength, let start = name.baseAddress else { return body(name) }
        let index = original.withUnsafeBufferPointer { original in
            names.index(of: start, count: name.count, in: original.baseAddress!)
        }
        guard let index else {
            if names.isComplete, Self.isPrintableASCII(start, count: name.count) { return nil }
            return body(name)
        }
        // U+000A and at most two digits: what jansson decoded `\n` and the digits to.
        var marker: (UInt8, UInt8, UInt8) = (nameMarkerByte, 0, 0)
        return withUnsafeMutableBytes(of: &marker) { raw in
            let bytes = raw.bindMemory(to: UInt8.self).baseAddress!
            let digits = writeDecimal(index, to: bytes + 1)
            return body(UnsafeBufferPointer(start: bytes, count: 1 + digits))
        }
    }

    // MARK: Names

    /// The distinct member names lifted from one text, in the order of their indices.
    private struct Names {
        /// Each name's content at its first occurrence, as a range of the text.
        private(set) var ranges: [Range<Int>] = []
        /// Each name's first eight bytes (fewer, zero-padded, when it is shorter), compared
        /// before the rest.
        private var heads: [UInt64] = []

        /// Whether every liftable name was lifted: `false` once one was refused for lack of room.
        private(set) var isComplete = true

        /// The index of the name of `count` bytes at `start`, or `nil` when it was not lifted.
        func index(of start: UnsafePointer<UInt8>, count: Int, in text: UnsafePointer<UInt8>) -> Int? {
            index(of: start, count: count, head: Self.head(start, count: count), in: text)
        }

        /// The index of the name at `range` of `text`, interned when it is new and there is room;
        /// `nil` when it is new and there is none.
        mutating func intern(_ range: Range<Int>, in text: UnsafePointer<UInt8>) -> Int? {
            let start = text + range.lowerBound
            let head = Self.head(start, count: range.count)
            if let known = index(of: start, count: range.count, head: head, in: text) { return known }
            guard ranges.count < JSONLiftedStrings.maximumNameCount else {
                isComplete = false
                return nil
            }
            if ranges.isEmpty {
                ranges.reserveCapacity(32)
                heads.reserveCapacity(32)
            }
            ranges.append(range)
            heads.append(head)
            return ranges.count - 1
        }

        private func index(of start: UnsafePointer<UInt8>, count: Int, head: UInt64, in text: UnsafePointer<UInt8>) -> Int? {
            for index in heads.indices where heads[index] == head && ranges[index].count == count {
                if count <= 8 || memcmp(text + ranges[index].lowerBound + 8, start + 8, count - 8) == 0 {
                    return index
                }
            }
            return nil
        }

        private static func head(_ start: UnsafePointer<UInt8>, count: Int) -> UInt64 {
            if count >= 8 { return UnsafeRawPointer(start).loadUnaligned(as: UInt64.self) }
            var head: UInt64 = 0
            withUnsafeMutableBytes(of: &head) { $0.baseAddress!.copyMemory(from: start, byteCount: count) }
            return head
        }
    }

    // MARK: The pass

    /// Writes the copy of `text` to `destination`, noting each value and name it lifts, and
    /// returns its length; writes nothing and returns 0 when the text has a backslash. Quotes are
    /// found with `memchr`, and only strings long enough to lift are read byte by byte.
    private static func writeCopy(
        of text: UnsafeBufferPointer<UInt8>, to destination: UnsafeMutablePointer<UInt8>,
        values: inout [Range<Int>], names: inout Names
    ) -> Int {
        guard let base = text.baseAddress else { return 0 }
        let count = text.count
        if memchr(base, Int32(UInt8(ascii: "\\")), count) != nil { return 0 }
        func quote(from start: Int) -> Int? {
            guard start < count, let found = memchr(base + start, Int32(UInt8(ascii: "\"")), count - start) else {
                return nil
            }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        var written = 0
        var copied = 0
        /// Copies the text up to `start` and writes a marker, `\` `letter` `index`, in place of
        /// the content up to `end`.
        func replace(_ start: Int, _ end: Int, letter: UInt8, index: Int) {
            (destination + written).update(from: base + copied, count: start - copied)
            written += start - copied
            destination[written] = UInt8(ascii: "\\")
            destination[written + 1] = letter
            written += 2 + writeDecimal(index, to: destination + written + 2)
            copied = end
        }
        var position = 0
        // Each iteration reads one string literal: an opening quote and the next quote.
        while let open = quote(from: position) {
            guard let close = quote(from: open + 1) else { break }  // unterminated: jansson says so
            position = close + 1
            let start = open + 1
            guard close - start >= minimumLength, isPrintableASCII(base + start, count: close - start) else { continue }
            var next = close + 1
            while next < count, isWhitespace(base[next]) { next += 1 }
            if next < count, base[next] == UInt8(ascii: ":") {
                // A name's marker is at most 4 bytes (fewer than 100 names), never longer than it.
                guard let index = names.intern(start..<close, in: base) else { continue }
                replace(start, close, letter: UInt8(ascii: "n"), index: index)
            } else {
                // A value's marker must not be longer than the value.
                guard 2 + digitCount(values.count) <= close - start else { continue }
                if values.isEmpty { values.reserveCapacity(16) }
                replace(start, close, letter: UInt8(ascii: "t"), index: values.count)
                values.append(start..<close)
            }
        }
        (destination + written).update(from: base + copied, count: count - copied)
        return written + count - copied
    }

    /// JSON's four whitespace bytes (RFC 8259 §2), the ones jansson skips between tokens.
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// Whether every byte is in 0x20–0x7E, thirty-two bytes at a time, then eight, then one.
    ///
    /// With `ones` = 0x0101…01 and `high` = 0x8080…80, a word has a byte ≥ 0x80 when
    /// `word & high` ≠ 0, a byte below 0x20 when `(word − 0x20 × ones) & ~word & high` ≠ 0, and a
    /// byte 0x7F when the same test for a byte below 1 holds for `word ^ (0x7F × ones)` (bit
    /// twiddling's `hasless`, exact as to whether such a byte exists). Long runs are tested four
    /// words at a time, as two-lane vectors whose results are OR-ed across the run and masked
    /// with `high` once at its end: this pass reads every byte of a notification's nested JWS.
    static func isPrintableASCII(_ start: UnsafePointer<UInt8>, count: Int) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let raw = UnsafeRawPointer(start)
        var index = 0
        if count >= 32 {
            func outside(_ word: SIMD2<UInt64>) -> SIMD2<UInt64> {
                let delete = word ^ SIMD2(repeating: ones &* 0x7F)
                return word | ((word &- SIMD2(repeating: ones &* 0x20)) & ~word)
                    | ((delete &- SIMD2(repeating: ones)) & ~delete)
            }
            var found = SIMD2<UInt64>(repeating: 0)
            while index &+ 32 <= count {
                found |= outside(raw.loadUnaligned(fromByteOffset: index, as: SIMD2<UInt64>.self))
                found |= outside(raw.loadUnaligned(fromByteOffset: index &+ 16, as: SIMD2<UInt64>.self))
                index &+= 32
            }
            guard (found[0] | found[1]) & high == 0 else { return false }
        }
        while index + 8 <= count {
            let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let delete = word ^ (ones &* 0x7F)
            let control = (word &- ones &* 0x20) & ~word & high
            let isDelete = (delete &- ones) & ~delete & high
            guard (word & high) | control | isDelete == 0 else { return false }
            index += 8
        }
        while index < count {
            guard start[index] >= 0x20, start[index] <= 0x7E else { return false }
            index += 1
        }
        return true
    }
}

/// The byte a value's marker decodes to first: U+0009, written `\t`.
private let valueMarkerByte: UInt8 = 0x09
/// The byte a name's marker decodes to first: U+000A, written `\n`.
private let nameMarkerByte: UInt8 = 0x0A

/// The number of decimal digits of `value` (≥ 0).
private func digitCount(_ value: Int) -> Int {
    var digits = 1
    var rest = value / 10
    while rest > 0 {
        digits += 1
        rest /= 10
    }
    return digits
}

/// Writes `value` (≥ 0) in decimal at `destination` and returns the number of digits.
private func writeDecimal(_ value: Int, to destination: UnsafeMutablePointer<UInt8>) -> Int {
    let digits = digitCount(value)
    var rest = value
    for position in stride(from: digits - 1, through: 0, by: -1) {
        destination[position] = UInt8(ascii: "0") + UInt8(rest % 10)
        rest /= 10
    }
    return digits
}
