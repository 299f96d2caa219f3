import CReceiptKitServerZlib

/// zlib's raw deflate with the length and CRC-32 of what it holds beside it: the form in which the
/// store keeps the JSON it derives (``StoredJSON``) and Apple's bytes (``RawEncoding``).
///
/// A deflated value is the length as an unsigned LEB128, the CRC-32 (little-endian), and a raw
/// deflate stream (level 9, an 8 KB window, optionally against a preset dictionary). Reading it
/// checks all three: a damaged value is an error naming what it is, never other bytes.
package enum Deflate {
    /// The largest value a stored length may name: a damaged length never becomes an allocation
    /// of gigabytes.
    package static let maximumLength = 1 << 24

    /// `bytes` deflated, against `dictionary` when one is given.
    package static func deflate(_ bytes: [UInt8], dictionary: [UInt8] = []) -> [UInt8] {
        precondition(bytes.count <= maximumLength, "the store deflates values of at most \(maximumLength) bytes")
        var stored: [UInt8] = []
        var length = bytes.count
        repeat {
            stored.append(UInt8(length & 0x7f) | (length >= 0x80 ? 0x80 : 0))
            length >>= 7
        } while length > 0
        withUnsafeBytes(of: checksum(bytes).littleEndian) { stored.append(contentsOf: $0) }
        let header = stored.count
        var written = rks_deflate_bound(bytes.count)
        stored += [UInt8](repeating: 0, count: written)
        let ok = bytes.withUnsafeBufferPointer { input in
            dictionary.withUnsafeBufferPointer { dictionary in
                stored.withUnsafeMutableBufferPointer { output in
                    rks_deflate(
                        input.baseAddress, input.count, dictionary.baseAddress, dictionary.count,
                        output.baseAddress! + header, &written)
                }
            }
        }
        // zlib fails only when it cannot allocate its state.
        precondition(ok == 1, "zlib could not deflate \(bytes.count) bytes")
        stored.removeLast(stored.count - header - written)
        return stored
    }

    /// The bytes of a deflated value.
    ///
    /// - Parameter what: What the value is, for the error.
    /// - Throws: ``StoreError`` when its length is cut short or past ``maximumLength``, its stream
    ///   does not inflate to exactly that length, or the bytes' CRC-32 is not the one stored.
    package static func inflate(_ stored: ArraySlice<UInt8>, dictionary: [UInt8] = [], what: String) throws -> [UInt8] {
        var index = stored.startIndex
        var length = 0
        var shift = 0
        while true {
            guard index < stored.endIndex, shift < 28 else { throw StoreError.damaged("\(what)'s length is cut short") }
            let byte = stored[index]
            length |= Int(byte & 0x7f) << shift
            index += 1
            shift += 7
            if byte & 0x80 == 0 { break }
        }
        guard length <= maximumLength else { throw StoreError.damaged("\(what) names a length of \(length) bytes") }
        guard stored.endIndex - index >= 4 else { throw StoreError.damaged("\(what)'s checksum is cut short") }
        let expected = stored[index..<(index + 4)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let stream = stored[(index + 4)...]
        let inflated = [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
            let ok = stream.withUnsafeBufferPointer { input in
                dictionary.withUnsafeBufferPointer { dictionary in
                    rks_inflate(input.baseAddress, input.count, dictionary.baseAddress, dictionary.count, output.baseAddress, length)
                }
            }
            initialized = ok == 1 ? length : 0
        }
        guard inflated.count == length else { throw StoreError.damaged("\(what) does not inflate to the \(length) bytes it names") }
        guard checksum(inflated) == expected else {
            throw StoreError.damaged("\(what) inflates to bytes whose CRC-32 is not the one stored")
        }
        return inflated
    }

    /// zlib's CRC-32 of `bytes`.
    private static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { UInt32(truncatingIfNeeded: crc32(0, $0.baseAddress, UInt32($0.count))) }
    }
}
