import Foundation
import NIOConcurrencyHelpers
import ReceiptKit

/// How an input's raw bytes are stored: as received, or with the JWS header segments they
/// carry replaced by references to the `jws_headers` table (`inputs.raw_encoding`); either form
/// deflated (``Deflate``, against ``RawCompaction/dictionary``) when that is smaller, as every
/// input is stored from this version on.
///
/// A JWS header from the App Store is its `x5c` chain: 4.4 KB of base64url (3.7 KB with the
/// test PKI), the same in every JWS Apple signs with one certificate. A notification carries
/// three of them — its own, and those of the transaction and renewal info nested in its payload —
/// so nearly 14 KB of a 15.7 KB test notification is three copies of one header, stored instead
/// in about 2.3 KB: fewer pages to write, to log and to checkpoint for every request.
///
/// Nothing is decoded or re-encoded: the stored form is the raw bytes with some byte ranges
/// replaced by references, and expanding it gives back exactly the bytes received.
package enum RawEncoding: Int16, Sendable {
    /// The bytes as received.
    case verbatim = 0
    /// The bytes with header segments replaced by references (``RawCompaction``).
    case headerReferences = 1
    /// ``headerReferences``, deflated: what is left of a notification is base64url (of JSON, and
    /// of base64url), which deflates to about 45% against the dictionary.
    case deflatedHeaderReferences = 2
    /// ``verbatim``, deflated.
    case deflatedVerbatim = 3

    /// The form a deflated encoding inflates to; `nil` for one that is not deflated.
    var inflated: RawEncoding? {
        switch self {
        case .verbatim, .headerReferences: nil
        case .deflatedHeaderReferences: .headerReferences
        case .deflatedVerbatim: .verbatim
        }
    }
}

/// The reference format of ``RawEncoding/headerReferences``, and the search for what to replace.
///
/// A header segment `h` (the base64url text before a JWS's first `.`) appears in raw bytes in
/// one of four forms:
/// - `h` itself, where a JWS appears as it is (a webhook body's `signedPayload`, a
///   `signed_transaction`);
/// - the base64url of `h` from byte 0, 1 or 2, cut to whole 3-byte groups, where a JWS is nested
///   in the payload of another (a notification's `signedTransactionInfo` and
///   `signedRenewalInfo`): which of the three depends on where `h` starts in that payload, and
///   its first and last bytes share 4-character groups with its neighbours, so they stay
///   literal.
///
/// A reference is the byte 0x00, the form (0 for `h`, 1 + the start for the base64url forms)
/// and the header's id, 8 bytes big-endian. Raw bytes holding a 0x00 byte are stored verbatim
/// (no JSON text holds one), so a 0x00 in a compacted form is always a reference.
package enum RawCompaction {
    package static let escape: UInt8 = 0x00
    package static let referenceLength = 10
    /// Shorter segments are not worth a reference.
    package static let minimumLength = 64

    /// A header with its id in the `jws_headers` table and the byte strings that stand for it.
    package struct Header: Sendable {
        package let id: Int64
        /// The forms of the segment (index = form), those too short to replace left empty.
        package let forms: [[UInt8]]
        /// A finder for each form not left empty.
        let finders: [Finder?]

        package init(id: Int64, segment: [UInt8]) {
            self.id = id
            self.forms = RawCompaction.forms(of: segment)
            self.finders = forms.map { $0.isEmpty ? nil : Finder($0) }
        }
    }

    /// Finds a long byte string by reading a few of a text's positions. A needle of `m` bytes that
    /// occurs in a text has, at exactly one of every `m - 7` consecutive positions, 8 bytes that
    /// lie inside it; reading the text's 8 bytes at every `(m - 7)`th position and looking them up
    /// among the needle's own 8-byte windows gives every place it can start, each then compared
    /// whole. A 15.7 KB notification is read at a handful of positions per form, where a scan
    /// with `memchr` stopped at every 64th byte (base64 has 64 characters).
    package struct Finder: Sendable {
        package let needle: [UInt8]
        /// The offsets in the needle of each of its 8-byte windows.
        private let windows: [UInt64: [Int]]

        /// - Parameter needle: At least 8 bytes.
        package init(_ needle: [UInt8]) {
            precondition(needle.count >= 8, "a finder needs a needle of 8 bytes or more")
            self.needle = needle
            var windows: [UInt64: [Int]] = [:]
            needle.withUnsafeBytes { bytes in
                for offset in 0...(bytes.count - 8) {
                    windows[bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self), default: []].append(offset)
                }
            }
            self.windows = windows
        }

        /// The non-overlapping ranges where the needle occurs in `haystack`, from the left.
        package func occurrences(in haystack: [UInt8]) -> [Range<Int>] {
            let length = needle.count
            var starts: [Int] = []
            haystack.withUnsafeBytes { text in
                needle.withUnsafeBytes { needle in
                    guard let base = text.baseAddress, let pattern = needle.baseAddress, text.count >= length else { return }
                    var position = 0
                    while position + 8 <= text.count {
                        if let offsets = windows[text.loadUnaligned(fromByteOffset: position, as: UInt64.self)] {
                            for offset in offsets {
                                let start = position - offset
                                if start >= 0, start + length <= text.count, memcmp(base + start, pattern, length) == 0 {
                                    starts.append(start)
                                }
                            }
                        }
                        position += length - 7
                    }
                }
            }
            starts.sort()
            var ranges: [Range<Int>] = []
            for start in starts where start >= (ranges.last?.upperBound ?? 0) {
                ranges.append(start..<(start + length))
            }
            return ranges
        }
    }

    /// The four forms of a segment (``RawCompaction``), a form shorter than ``minimumLength``
    /// left empty.
    package static func forms(of segment: [UInt8]) -> [[UInt8]] {
        var forms: [[UInt8]] = [segment]
        for start in 0..<3 {
            let count = segment.count > start ? (segment.count - start) / 3 * 3 : 0
            forms.append(Base64URL.encode(segment[start..<(start + count)]))
        }
        return forms.map { $0.count >= minimumLength ? $0 : [] }
    }

    /// The header segments worth storing once that raw bytes carry: those of the JWS that
    /// appear in them as they are (a run of base64url starting `eyJ`, the encoding of `{"`, and
    /// ending at a `.`, not itself after a `.`: a payload starts `eyJ` too), and those of
    /// `nested` JWS (carried inside another's payload), each once, in the order found.
    package static func headerSegments(in raw: [UInt8], nested: [String]) -> [[UInt8]] {
        var segments: [[UInt8]] = []
        func add(_ segment: UnsafeBufferPointer<UInt8>) {
            guard segment.count >= minimumLength, !segments.contains(where: { equal($0, segment) }) else { return }
            segments.append(Array(segment))
        }
        let isBase64URL = base64URLTable
        raw.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            var index = 0
            // Each `e` is a candidate start; base64url has one in 64 characters.
            while bytes.count - index >= 3, let found = memchr(base + index, Int32(UInt8(ascii: "e")), bytes.count - index - 2) {
                let start = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                index = start + 1
                guard bytes[start + 1] == UInt8(ascii: "y"), bytes[start + 2] == UInt8(ascii: "J"),
                    start == 0 || !(isBase64URL[Int(bytes[start - 1])] || bytes[start - 1] == UInt8(ascii: "."))
                else { continue }
                var end = start + 3
                while end < bytes.count, isBase64URL[Int(bytes[end])] { end += 1 }
                index = end
                guard end < bytes.count, bytes[end] == UInt8(ascii: ".") else { continue }
                add(UnsafeBufferPointer(rebasing: bytes[start..<end]))
                // The payload that follows holds no header as it is: go on after it.
                if let next = memchr(base + end + 1, Int32(UInt8(ascii: ".")), bytes.count - end - 1) {
                    index = base.distance(to: next.assumingMemoryBound(to: UInt8.self)) + 1
                }
            }
        }
        for var jws in nested {
            jws.withUTF8 { bytes in
                guard let base = bytes.baseAddress else { return }
                let end = memchr(base, Int32(UInt8(ascii: ".")), bytes.count).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }
                add(UnsafeBufferPointer(rebasing: bytes[0..<(end ?? bytes.count)]))
            }
        }
        return segments
    }

    /// Whether each byte value is a base64url character.
    private static let base64URLTable: [Bool] = (0..<256).map { isBase64URL(UInt8($0)) }

    /// Whether two byte strings are equal (`memcmp`).
    static func equal(_ lhs: [UInt8], _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBufferPointer { lhs in
            guard let left = lhs.baseAddress, let right = rhs.baseAddress else { return true }  // both empty
            return memcmp(left, right, lhs.count) == 0
        }
    }

    package static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// `raw` with every occurrence of a header's form replaced by a reference (the leftmost
    /// first where two would overlap), or `nil` when nothing was replaced or `raw` holds a 0x00
    /// byte (it is then stored verbatim).
    package static func compact(_ raw: [UInt8], headers: [Header]) -> [UInt8]? {
        let holdsEscape = raw.withUnsafeBytes { bytes in
            bytes.baseAddress.map { memchr($0, Int32(escape), bytes.count) != nil } ?? false
        }
        guard !headers.isEmpty, !holdsEscape else { return nil }
        var matches: [(range: Range<Int>, form: UInt8, id: Int64)] = []
        for header in headers {
            for (form, finder) in header.finders.enumerated() {
                guard let finder else { continue }
                for range in finder.occurrences(in: raw) {
                    matches.append((range, UInt8(form), header.id))
                }
            }
        }
        guard !matches.isEmpty else { return nil }
        matches.sort { $0.range.lowerBound < $1.range.lowerBound }
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var copied = 0
        for match in matches where match.range.lowerBound >= copied {
            output.append(contentsOf: raw[copied..<match.range.lowerBound])
            output.append(escape)
            output.append(match.form)
            withUnsafeBytes(of: match.id.bigEndian) { output.append(contentsOf: $0) }
            copied = match.range.upperBound
        }
        output.append(contentsOf: raw[copied...])
        return output
    }

    /// The preset dictionary of the deflated encodings (`raw-dictionary-1.txt`): the base64url,
    /// at each of its three alignments, of a notification's payload and of the transaction's and
    /// renewal info's payloads nested in it, every value left empty — the text a notification's
    /// payload is made of, wherever its members fall. A constant: another dictionary would need
    /// encodings of its own.
    package static let dictionary: [UInt8] = PackageResources.raw_dictionary_1_txt

    /// How an input's raw bytes (compacted or not) are stored: deflated, when that is smaller.
    package static func stored(_ bytes: [UInt8], encoding: RawEncoding) -> (bytes: [UInt8], encoding: RawEncoding) {
        let deflated = Deflate.deflate(bytes, dictionary: dictionary)
        guard deflated.count < bytes.count else { return (bytes, encoding) }
        return (deflated, encoding == .headerReferences ? .deflatedHeaderReferences : .deflatedVerbatim)
    }

    /// The stored form with any deflating undone: the bytes as received or compacted, and which.
    ///
    /// - Throws: ``StoreError`` for an unknown encoding or a deflated form that does not inflate.
    package static func inflated(stored: [UInt8], encoding: Int16) throws -> (bytes: [UInt8], encoding: RawEncoding) {
        guard let known = RawEncoding(rawValue: encoding) else {
            throw StoreError.damaged("a stored input's raw_encoding is \(encoding), which this server does not know")
        }
        guard let inflated = known.inflated else { return (stored, known) }
        return (try Deflate.inflate(stored[...], dictionary: dictionary, what: "a stored input's raw bytes"), inflated)
    }

    /// The ids of the headers a stored form refers to (none unless it is compacted).
    package static func references(stored: [UInt8], encoding: Int16) throws -> Set<Int64> {
        let form = try inflated(stored: stored, encoding: encoding)
        return form.encoding == .headerReferences ? try references(in: form.bytes) : []
    }

    /// The ids a compacted form refers to.
    ///
    /// - Throws: ``StoreError`` when a reference is cut short.
    package static func references(in compacted: [UInt8]) throws -> Set<Int64> {
        var identifiers = Set<Int64>()
        try walk(compacted, literal: { _ in }, reference: { _, id in identifiers.insert(id) })
        return identifiers
    }

    /// The raw bytes of a compacted form.
    ///
    /// - Parameter segments: Each referenced header's segment, by id.
    /// - Throws: ``StoreError`` when a reference is cut short, names an unknown form, or an id
    ///   `segments` lacks.
    package static func expand(_ compacted: [UInt8], segments: [Int64: [UInt8]]) throws -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(compacted.count * 4)
        var forms: [Int64: [[UInt8]]] = [:]
        try walk(compacted, literal: { output.append(contentsOf: $0) }) { form, id in
            if forms[id] == nil {
                guard let segment = segments[id] else {
                    throw StoreError.damaged("a stored input refers to JWS header \(id), which is not stored")
                }
                forms[id] = Self.forms(of: segment)
            }
            let bytes = forms[id]![Int(form)]
            guard !bytes.isEmpty else { throw StoreError.damaged("a stored input refers to a form of JWS header \(id) it cannot have") }
            output.append(contentsOf: bytes)
        }
        return output
    }

    /// An input's raw bytes from what is stored.
    ///
    /// - Parameters:
    ///   - stored: The `raw` column.
    ///   - encoding: The `raw_encoding` column.
    ///   - segments: Reads the segments of the headers with these ids.
    /// - Throws: ``StoreError`` for an unknown encoding or a reference that does not expand.
    package static func raw(
        stored: [UInt8], encoding: Int16, segments: (Set<Int64>) throws -> [Int64: [UInt8]]
    ) throws -> [UInt8] {
        let form = try inflated(stored: stored, encoding: encoding)
        switch form.encoding {
        case .headerReferences: return try expand(form.bytes, segments: segments(references(in: form.bytes)))
        case .verbatim, .deflatedHeaderReferences, .deflatedVerbatim: return form.bytes
        }
    }

    private static func walk(
        _ compacted: [UInt8], literal: (ArraySlice<UInt8>) -> Void, reference: (UInt8, Int64) throws -> Void
    ) throws {
        var start = 0
        while let escapeIndex = compacted[start...].firstIndex(of: escape) {
            literal(compacted[start..<escapeIndex])
            guard compacted.count - escapeIndex >= referenceLength else {
                throw StoreError.damaged("a stored input's raw bytes end in a cut-short header reference")
            }
            let form = compacted[escapeIndex + 1]
            guard form < 4 else { throw StoreError.damaged("a stored input's raw bytes hold an unknown header reference form \(form)") }
            var id: Int64 = 0
            for byte in compacted[(escapeIndex + 2)..<(escapeIndex + referenceLength)] { id = id << 8 | Int64(byte) }
            try reference(form, id)
            start = escapeIndex + referenceLength
        }
        literal(compacted[start...])
    }
}

/// The header segments a store has committed, with their ids: a header is looked up or inserted
/// in the database only the first time it is met. An entry is added only once the transaction
/// that looked it up has committed, so an id from a rolled-back insert is never used.
package final class HeaderDirectory: Sendable {
    /// Few: certificates rotate rarely, so a store meets a handful of headers in its life. Looked
    /// up by comparing bytes (a header is compared in well under a microsecond; hashing it for a
    /// dictionary took longer). Past ``capacity`` headers, the directory starts again.
    private let known = Locked<[(segment: [UInt8], header: RawCompaction.Header)]>([])
    private let capacity = 64

    package init() {}

    package func header(for segment: [UInt8]) -> RawCompaction.Header? {
        segment.withUnsafeBufferPointer { segment in
            known.withLockedValue { known in known.first { RawCompaction.equal($0.segment, segment) }?.header }
        }
    }

    /// Remembers headers whose ids a committed transaction looked up or inserted.
    package func remember(_ headers: [(segment: [UInt8], header: RawCompaction.Header)]) {
        guard !headers.isEmpty else { return }
        known.withLockedValue { known in
            if known.count + headers.count > capacity { known.removeAll() }
            for (segment, header) in headers where !segment.withUnsafeBufferPointer({ segment in
                known.contains { RawCompaction.equal($0.segment, segment) }
            }) {
                known.append((segment, header))
            }
        }
    }
}
