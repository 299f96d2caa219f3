#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Long plain string values taken out of a JSON text before jansson parses it, and read back
/// from the original bytes.
///
/// jansson's lexer spends more than 100 instructions on each byte of a string, and a
/// notification's payload is mostly two nested JWS held as string values, several KB of base64url
/// each: parsing them cost as much as a P-256 signature verification. So, before jansson runs, one
/// pass over the text replaces each long plain string value, in a copy, by a short marker;
/// jansson parses the copy with the same strict flags, and ``JSONObject`` and ``JSONArray`` read a
/// marker as the bytes it stands for. jansson still judges every byte it would have judged:
///
/// - Nothing is lifted from a text with a backslash anywhere. Without escapes, every `"` opens
///   or closes a string, so one pass finds each string literal exactly where jansson's lexer does.
/// - A string is lifted only when its content is at least ``minimumLength`` bytes of printable
///   ASCII (0x20–0x7E): content jansson accepts as it stands and decodes to itself, so the bytes
///   read back are the ones jansson would have produced, and a string jansson would reject (a
///   control byte, invalid UTF-8) stays in the copy for jansson to reject.
/// - Only values are lifted: a string followed, after any whitespace, by `:` is a member name and
///   stays, so duplicate members are still found by jansson (`JSON_REJECT_DUPLICATES`).
/// - A marker is `\u0001` followed by the value's index in decimal. Raw control bytes are invalid
///   in JSON strings and the text has no escape, so no string jansson accepts from it can hold
///   U+0001: a string that starts with it is a marker, and nothing else is.
///
/// The copy has the same tokens as the original except the content of valid strings, so jansson
/// accepts one exactly when it accepts the other, with the same structure. Error reasons carry
/// jansson's offset into the text, though, so ``JSONDocument`` parses the original again when the
/// copy fails, and reports that.
final class JSONLiftedStrings {
    /// The shortest string content lifted. A marker is 7 bytes or more with an escape jansson
    /// decodes, so shorter strings save little; from 16 bytes, identifiers such as product ids
    /// and UUIDs are lifted too, which took a notification's parsing down by a further 15% against
    /// 64 bytes (callgrind). It must exceed the longest marker, so that the copy is never longer.
    static let minimumLength = 16

    /// The original text, which the lifted values are read from.
    private let original: [UInt8]
    /// Each lifted value's content (between its quotes), as a range of ``original``.
    private let ranges: [Range<Int>]

    /// The number of values lifted.
    var count: Int { ranges.count }

    private init(original: [UInt8], ranges: [Range<Int>]) {
        self.original = original
        self.ranges = ranges
    }

    /// The copy of `text` jansson parses, with each long plain string value replaced by a marker,
    /// and the values it lifted; `nil` when nothing is lifted (see the type's rules).
    ///
    /// - Parameter text: The JSON text, as received.
    static func lift(_ text: [UInt8]) -> (copy: [UInt8], strings: JSONLiftedStrings)? {
        guard text.count >= minimumLength + 2 else { return nil }
        let ranges = text.withUnsafeBufferPointer(liftableRanges(in:))
        guard !ranges.isEmpty else { return nil }
        // Every marker is shorter than what it replaces, so the copy fits in the text's size.
        let copy = [UInt8](unsafeUninitializedCapacity: text.count) { buffer, initialized in
            text.withUnsafeBufferPointer { text in
                var written = 0
                func copy(_ range: Range<Int>) {
                    guard !range.isEmpty else { return }
                    UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[written...])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(text)[range]))
                    written += range.count
                }
                var copied = 0
                for (index, range) in ranges.enumerated() {
                    copy(copied..<range.lowerBound)
                    markerEscape.withUTF8Buffer { escape in
                        for byte in escape {
                            buffer[written] = byte
                            written += 1
                        }
                    }
                    written += writeDecimal(index, to: buffer.baseAddress! + written)
                    copied = range.upperBound
                }
                copy(copied..<text.count)
                initialized = written
            }
        }
        return (copy, JSONLiftedStrings(original: text, ranges: ranges))
    }

    /// The original bytes of the value `string` (a parsed string's content) stands for, or `nil`
    /// when it is not a marker.
    func value(of string: UnsafeBufferPointer<UInt8>) -> ArraySlice<UInt8>? {
        guard string.count >= 2, string[0] == 0x01 else { return nil }
        var index = 0
        for digit in string[1...] {
            guard digit &- UInt8(ascii: "0") < 10 else { return nil }
            index = index * 10 + Int(digit &- UInt8(ascii: "0"))
        }
        guard index < ranges.count else { return nil }
        return original[ranges[index]]
    }

    // MARK: The pass

    /// `\u0001`, how every marker starts.
    private static let markerEscape: StaticString = "\\u0001"

    /// Writes `value` in decimal at `destination` and returns the number of digits.
    private static func writeDecimal(_ value: Int, to destination: UnsafeMutablePointer<UInt8>) -> Int {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        rest = value
        for position in stride(from: digits - 1, through: 0, by: -1) {
            destination[position] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        return digits
    }

    /// The content ranges of the string values to lift, in order; empty when the text has a
    /// backslash. Quotes are found with `memchr`, and only long strings are read byte by byte.
    private static func liftableRanges(in text: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        guard let base = text.baseAddress else { return [] }
        let count = text.count
        if memchr(base, Int32(UInt8(ascii: "\\")), count) != nil { return [] }
        func quote(from start: Int) -> Int? {
            guard start < count, let found = memchr(base + start, Int32(UInt8(ascii: "\"")), count - start) else {
                return nil
            }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        var ranges: [Range<Int>] = []
        var position = 0
        // Each iteration reads one string literal: an opening quote and the next quote.
        while let open = quote(from: position) {
            guard let close = quote(from: open + 1) else { break }  // unterminated: jansson says so
            position = close + 1
            let start = open + 1
            guard close - start >= minimumLength, isPrintableASCII(base + start, count: close - start) else { continue }
            var next = close + 1
            while next < count, isWhitespace(base[next]) { next += 1 }
            if next < count, base[next] == UInt8(ascii: ":") { continue }  // a member name
            ranges.append(start..<close)
        }
        return ranges
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
