internal import CReceiptKitBase64

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Strict base64 decoders: one canonical spelling per byte string, nothing else accepted.
package enum Base64 {
    /// The two alphabets ReceiptKit reads.
    package enum Alphabet {
        /// RFC 4648 §5, `-` and `_`, no padding: JWS segments (RFC 7515 §2).
        case urlNoPadding
        /// RFC 4648 §4, `+` and `/`, padded to a multiple of four: `x5c` entries and receipts.
        case standardPadded
    }

    /// The length of the padded base64 text of `byteCount` bytes: four characters for every
    /// group of three bytes, a last partial group included.
    ///
    /// The limits on base64 input (a receipt's `receipt-data`, a batch line) are derived from
    /// byte limits with this.
    package static func paddedLength(ofByteCount byteCount: Int) -> Int {
        (byteCount + 2) / 3 * 4
    }

    /// The number of bytes `characterCount` characters of unpadded base64 decode to: three for
    /// every four, and one less than the characters of a last partial group.
    static func decodedByteCount(ofUnpaddedLength characterCount: Int) -> Int {
        let remainder = characterCount % 4
        return characterCount / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
    }

    private static let invalid: UInt8 = 0xFF

    private static func table(_ alphabet: Alphabet) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        for (value, byte) in letters.enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        switch alphabet {
        case .urlNoPadding:
            table[Int(UInt8(ascii: "-"))] = 62
            table[Int(UInt8(ascii: "_"))] = 63
        case .standardPadded:
            table[Int(UInt8(ascii: "+"))] = 62
            table[Int(UInt8(ascii: "/"))] = 63
        }
        return table
    }

    private static let standardTable = table(.standardPadded)

    /// The bit a decoding table sets for a character outside the alphabet.
    private static let invalidBit: UInt32 = 0x8000_0000

    /// Four tables in one, for decoding a group of four characters with four lookups and three
    /// ORs: entry `256 × k + c` is the 6-bit value of character `c` shifted to its place in the
    /// group's 24 bits (left by 18, 12, 6 and 0 for k = 0…3), or ``invalidBit`` when `c` is not
    /// in the alphabet.
    private static func groupTable(_ alphabet: Alphabet) -> [UInt32] {
        let values = table(alphabet)
        var shifted = [UInt32](repeating: invalidBit, count: 4 * 256)
        for position in 0..<4 {
            for character in 0..<256 where values[character] != invalid {
                shifted[256 * position + character] = UInt32(values[character]) << (18 - 6 * position)
            }
        }
        return shifted
    }

    private static let urlGroupTable = groupTable(.urlNoPadding)
    private static let standardGroupTable = groupTable(.standardPadded)

    /// Decodes `input` in `alphabet`, or returns `nil` when it is not the canonical encoding of
    /// some byte string: a character outside the alphabet, a wrong length, misplaced or missing
    /// padding, or non-zero unused bits in the last character.
    ///
    /// - Parameters:
    ///   - input: The encoded text as UTF-8 bytes.
    ///   - alphabet: Which alphabet and padding rule applies.
    ///   - vectorized: Whether whole 16-character blocks may be decoded with SIMD first (tests
    ///     compare the two).
    /// - Returns: The decoded bytes, or `nil`.
    package static func decode<Bytes: RandomAccessCollection>(
        _ input: Bytes, alphabet: Alphabet, vectorized: Bool = true
    ) -> [UInt8]? where Bytes.Element == UInt8, Bytes.Index == Int {
        var count = input.count
        let table: [UInt32]
        switch alphabet {
        case .urlNoPadding:
            table = urlGroupTable
        case .standardPadded:
            table = standardGroupTable
            guard count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, count > 0, input[input.startIndex + count - 1] == UInt8(ascii: "=") {
                count -= 1
                padding += 1
            }
        }
        let remainder = count % 4
        guard remainder != 1 else { return nil }

        let decoded = input.withContiguousStorageIfAvailable { source in
            table.withUnsafeBufferPointer { table in
                decodeGroups(source, count: count, table: table, vectorizedAlphabet: vectorized ? alphabet : nil)
            }
        }
        if let decoded { return decoded }
        return Array(input).withUnsafeBufferPointer { source in
            table.withUnsafeBufferPointer { table in
                decodeGroups(source, count: count, table: table, vectorizedAlphabet: vectorized ? alphabet : nil)
            }
        }
    }

    /// Decodes the first `count` characters of `source` (padding already removed) into a new
    /// array written in place: this loop runs over every byte of every input, so the groups, the
    /// tail and the canonical-bits check stay in one function the optimizer sees whole.
    ///
    /// A group's 24 bits are the OR of four lookups in `table` (see ``groupTable(_:)``); an
    /// invalid character sets ``invalidBit``, which is collected across groups and checked once.
    /// Groups are decoded two at a time, their six bytes written as one 8-byte store whose last
    /// two bytes the next store overwrites; near the end of the output, one group at a time with
    /// 4-byte stores, then byte by byte.
    ///
    /// With `vectorizedAlphabet`, `rk_base64_decode_blocks` first decodes whole 16-character
    /// blocks with SIMD, as far as every character is valid, and this loop goes on from there: it
    /// still sees the last groups (and their canonical bits) and any invalid character.
    private static func decodeGroups(
        _ source: UnsafeBufferPointer<UInt8>, count: Int, table: UnsafeBufferPointer<UInt32>,
        vectorizedAlphabet: Alphabet?
    ) -> [UInt8]? {
        let remainder = count % 4
        let capacity = decodedByteCount(ofUnpaddedLength: count)
        // Nothing to decode (an empty segment). Not built with `unsafeUninitializedCapacity`: for
        // zero elements the standard library writes the count into the shared empty-array storage,
        // a write that races across threads (thread sanitizer, `ConcurrencyTests`).
        guard capacity > 0 else { return [] }
        var invalidBits: UInt32 = 0
        let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            func group(_ index: Int, _ characters: Int) -> UInt32 {
                var bits = table[Int(source[index])] | table[256 &+ Int(source[index &+ 1])]
                if characters > 2 { bits |= table[512 &+ Int(source[index &+ 2])] }
                if characters > 3 { bits |= table[768 &+ Int(source[index &+ 3])] }
                return bits
            }
            // Every byte below `capacity` is written below, valid input or not.
            let output = UnsafeMutableRawPointer(buffer.baseAddress!)
            let fullEnd = count - remainder
            var index = 0
            var out = 0
            if let alphabet = vectorizedAlphabet, fullEnd >= 16, let start = source.baseAddress {
                index = rk_base64_decode_blocks(
                    start, fullEnd, buffer.baseAddress!, capacity, alphabet == .urlNoPadding ? 1 : 0)
                out = index / 4 * 3
            }
            while index &+ 8 <= fullEnd, out &+ 8 <= capacity {
                let first = group(index, 4)
                let second = group(index &+ 4, 4)
                invalidBits |= first | second
                // The first group's 24 bits in bits 40–63, the second's in 16–39: the six bytes in
                // order once big-endian. (An invalid character's bit 31 lands among data bits, but
                // then the output is discarded.)
                let bits = UInt64(first) << 40 | UInt64(second) << 16
                output.storeBytes(of: bits.bigEndian, toByteOffset: out, as: UInt64.self)
                index &+= 8
                out &+= 6
            }
            while index < fullEnd, out &+ 4 <= capacity {
                let bits = group(index, 4)
                invalidBits |= bits
                output.storeBytes(of: (bits << 8).bigEndian, toByteOffset: out, as: UInt32.self)
                index &+= 4
                out &+= 3
            }
            if index < fullEnd {  // the last full group, when it ends the output
                let bits = group(index, 4)
                invalidBits |= bits
                buffer[out] = UInt8(truncatingIfNeeded: bits >> 16)
                buffer[out + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                buffer[out + 2] = UInt8(truncatingIfNeeded: bits)
                index += 4
                out += 3
            }
            switch remainder {
            case 2:
                // One byte; the second character's low 4 bits (bits 12–15 here) must be zero.
                let bits = group(index, 2)
                invalidBits |= bits | (bits & 0xF000 == 0 ? 0 : invalidBit)
                buffer[out] = UInt8(truncatingIfNeeded: bits >> 16)
            case 3:
                // Two bytes; the third character's low 2 bits (bits 6–7 here) must be zero.
                let bits = group(index, 3)
                invalidBits |= bits | (bits & 0x00C0 == 0 ? 0 : invalidBit)
                buffer[out] = UInt8(truncatingIfNeeded: bits >> 16)
                buffer[out + 1] = UInt8(truncatingIfNeeded: bits >> 8)
            default:
                break
            }
            initialized = capacity
        }
        return invalidBits & invalidBit == 0 ? output : nil
    }

    /// Whether every byte of `text` is in the standard alphabet or is `=`: tells a base64 receipt
    /// that does not decode from other text, so its error is a receipt's.
    static func isStandardAlphabet(_ text: ArraySlice<UInt8>) -> Bool {
        text.withUnsafeBufferPointer { text in
            standardTable.withUnsafeBufferPointer { table in
                for byte in text where byte != UInt8(ascii: "=") && table[Int(byte)] & 0xC0 != 0 {
                    return false
                }
                return true
            }
        }
    }

    /// Whether `text` contains a `.`, which no base64 alphabet has and every JWS does (`memchr`).
    static func containsDot(_ text: ArraySlice<UInt8>) -> Bool {
        text.withUnsafeBufferPointer { text in
            guard let start = text.baseAddress else { return false }
            return memchr(start, Int32(UInt8(ascii: ".")), text.count) != nil
        }
    }

    /// Encodes `bytes` in the standard padded alphabet.
    static func encodeStandard(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: encode(bytes, alphabet: .standardPadded), as: UTF8.self)
    }

    /// Encodes `bytes` in `alphabet`: padded with `=` to a multiple of four characters in the
    /// standard one, unpadded in the URL one.
    ///
    /// - Returns: The encoded text as UTF-8 bytes.
    static func encode(_ bytes: some Collection<UInt8>, alphabet: Alphabet) -> [UInt8] {
        let letters = alphabet == .urlNoPadding ? urlLetters : standardLetters
        var output = [UInt8]()
        output.reserveCapacity(paddedLength(ofByteCount: bytes.count))
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            output.append(letters[Int(a >> 2)])
            output.append(letters[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            if let b {
                output.append(letters[Int((b & 0x0F) << 2 | (c ?? 0) >> 6)])
            } else if alphabet == .standardPadded {
                output.append(UInt8(ascii: "="))
            }
            if let c {
                output.append(letters[Int(c & 0x3F)])
            } else if alphabet == .standardPadded {
                output.append(UInt8(ascii: "="))
            }
        }
        return output
    }

    private static let standardLetters = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlLetters = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}

/// Unpadded base64url (RFC 4648 §5), as JWS segments and URL-safe tokens are written: one
/// canonical spelling per byte string.
///
/// ```swift
/// Base64URL.string([0xFB, 0xFF])       // "-_8"
/// Base64URL.decode(Array("-_8".utf8))  // [0xFB, 0xFF]
/// Base64URL.decode(Array("-_9".utf8))  // nil: bits past the last byte are set
/// ```
public enum Base64URL {
    /// Encodes `bytes` in base64url without padding.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: The text as UTF-8 bytes, every one in `A-Z a-z 0-9 - _`.
    public static func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        // Made an array first (one copy, none for an array): the loop below is then the one
        // compiled for arrays here, whatever collection a caller in another module passes — a
        // caller's generic collection, unspecialized across modules, costs a call per byte.
        Base64.encode(Array(bytes), alphabet: .urlNoPadding)
    }

    /// Encodes `bytes` in base64url without padding, as text.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: The text, every character in `A-Z a-z 0-9 - _`.
    public static func string(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: encode(bytes), as: UTF8.self)
    }

    /// Decodes unpadded base64url, strictly: only the one spelling ``encode(_:)`` writes.
    ///
    /// - Parameter text: The text as UTF-8 bytes.
    /// - Returns: Its bytes, or `nil` when it is not canonical unpadded base64url: a character
    ///   outside the alphabet (`=` included), a length that leaves one character over, or bits
    ///   past the last byte that are not zero.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        Base64.decode(Array(text), alphabet: .urlNoPadding)
    }
}

