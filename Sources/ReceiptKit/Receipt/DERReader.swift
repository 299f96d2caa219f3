/// A strict reader of ASN.1 DER, and of the one BER form Xcode writes, over borrowed bytes.
///
/// A reader and the contents it returns point into memory it does not own, so they exist only
/// inside ``reading(_:name:_:)`` (or a caller's own `withUnsafeBufferPointer`): a receipt
/// payload holds hundreds of elements, and reading them without reference counting or copies is
/// most of what makes receipts fast. Whatever outlives the read is copied into an array.
///
/// Every element is an identifier, a length and the contents (X.690 §8.1):
///
///     Identifier ::= one octet: class (2 bits), constructed (1 bit), tag number 0 ... 30
///     Length     ::= short form: one octet 0 ... 127
///                  | long form: 0x81 ... 0x84, then 1 ... 4 octets, minimal (X.690 §10.1), >= 128
///                  | indefinite: 0x80; the contents end with the end-of-contents octets 00 00
///
/// The reader never trusts a length: every element must fit inside its parent. High tag numbers
/// (the 0x1F escape) never occur in the structures ReceiptKit reads and are refused, and an
/// indefinite length is refused unless the caller allows it for that very element. Nesting is
/// bounded by ``maximumDepth``. Every failure is ``ReceiptKitError/Code/malformedReceipt`` naming
/// the element being read.
struct DERReader {
    /// The deepest nesting the reader enters.
    static let maximumDepth = 16

    /// Identifier octets of the universal and context-specific tags receipts use.
    enum Tag {
        static let endOfContents: UInt8 = 0x00
        static let integer: UInt8 = 0x02
        static let octetString: UInt8 = 0x04
        static let constructedOctetString: UInt8 = 0x24
        static let null: UInt8 = 0x05
        static let objectIdentifier: UInt8 = 0x06
        static let utf8String: UInt8 = 0x0C
        static let ia5String: UInt8 = 0x16
        static let sequence: UInt8 = 0x30
        static let set: UInt8 = 0x31
        static let contextSpecific0: UInt8 = 0xA0
        static let contextSpecific1: UInt8 = 0xA1

        /// A readable name for error reasons, e.g. "SEQUENCE" or "tag 0x1e".
        static func name(_ tag: UInt8) -> String {
            switch tag {
            case integer: "INTEGER"
            case octetString: "OCTET STRING"
            case constructedOctetString: "constructed OCTET STRING"
            case null: "NULL"
            case objectIdentifier: "OBJECT IDENTIFIER"
            case utf8String: "UTF8String"
            case ia5String: "IA5String"
            case sequence: "SEQUENCE"
            case set: "SET"
            case contextSpecific0: "[0]"
            case contextSpecific1: "[1]"
            case endOfContents: "end-of-contents"
            default: "tag 0x" + String(tag, radix: 16)
            }
        }
    }

    /// The encoding, valid for as long as the reader.
    private let bytes: UnsafeBufferPointer<UInt8>
    /// The index of the next element.
    private(set) var position: Int
    /// The index the contents may not reach: the element's end (definite length), or its parent's
    /// bound (indefinite length).
    private let bound: Int
    /// Whether the contents end with end-of-contents octets rather than at ``bound``.
    let isIndefinite: Bool
    private let depth: Int
    /// What the reader reads, for error reasons (e.g. "SignedData").
    let name: String

    /// Runs `body` with a reader over all of `bytes`, which must hold elements up to their very end.
    ///
    /// - Parameters:
    ///   - bytes: The encoding.
    ///   - name: What the bytes are, for error reasons.
    ///   - body: The reading; neither the reader nor the contents it returns may escape it.
    static func reading<Result>(
        _ bytes: [UInt8], name: String, _ body: (inout DERReader) throws -> Result
    ) throws -> Result {
        try bytes.withUnsafeBufferPointer { buffer in
            var reader = DERReader(borrowing: buffer, name: name)
            return try body(&reader)
        }
    }

    /// A reader over all of `bytes`, which the caller keeps alive and unchanged while the reader
    /// and its contents are in use.
    init(borrowing bytes: UnsafeBufferPointer<UInt8>, name: String) {
        self.init(bytes: bytes, position: 0, bound: bytes.count, isIndefinite: false, depth: 0, name: name)
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, position: Int, bound: Int, isIndefinite: Bool, depth: Int, name: String) {
        self.bytes = bytes
        self.position = position
        self.bound = bound
        self.isIndefinite = isIndefinite
        self.depth = depth
        self.name = name
    }

    /// Whether every element of the contents has been read (for an indefinite length: whether
    /// the end-of-contents octets come next).
    var isAtEnd: Bool {
        if isIndefinite {
            return position + 2 <= bound && bytes[position] == 0 && bytes[position + 1] == 0
        }
        return position >= bound
    }

    /// The identifier octet of the next element, or `nil` at the end of the contents.
    var nextTag: UInt8? {
        isAtEnd || position >= bound ? nil : bytes[position]
    }

    private func error(_ what: String, _ problem: String) -> ReceiptKitError {
        ReceiptKitError(.malformedReceipt, "\(what): \(problem) (at byte \(position))")
    }

    /// One element's header.
    private struct Header {
        let tag: UInt8
        /// The contents' start.
        let contentStart: Int
        /// The contents' length, or `nil` for an indefinite length.
        let length: Int?
    }

    /// Reads the header of the next element, which must have identifier `tag`.
    private func header(_ tag: UInt8, _ what: String, allowIndefinite: Bool) throws -> Header {
        guard position < bound, !(isIndefinite && isAtEnd) else {
            throw error(what, "expected \(Tag.name(tag)), found the end of \(name)")
        }
        let found = bytes[position]
        guard found & 0x1F != 0x1F else {
            throw error(what, "high tag numbers are not used in receipts")
        }
        guard found == tag else {
            throw error(what, "expected \(Tag.name(tag)), found \(Tag.name(found))")
        }
        guard position + 1 < bound else {
            throw error(what, "the length is missing")
        }
        let first = bytes[position + 1]
        var cursor = position + 2
        if first < 0x80 {
            return try checked(Header(tag: found, contentStart: cursor, length: Int(first)), what)
        }
        if first == 0x80 {
            guard allowIndefinite, found & 0x20 != 0 else {
                throw error(what, "an indefinite length is not allowed here")
            }
            return Header(tag: found, contentStart: cursor, length: nil)
        }
        let count = Int(first & 0x7F)
        guard count <= 4 else {
            throw error(what, "a \(count)-octet length is not supported")
        }
        guard cursor + count <= bound else {
            throw error(what, "the length is truncated")
        }
        var length = 0
        for _ in 0..<count {
            length = length << 8 | Int(bytes[cursor])
            cursor += 1
        }
        guard bytes[position + 2] != 0, length >= 0x80 else {
            throw error(what, "the length \(length) is not in its minimal encoding")
        }
        return try checked(Header(tag: found, contentStart: cursor, length: length), what)
    }

    private func checked(_ header: Header, _ what: String) throws -> Header {
        if let length = header.length, length > bound - header.contentStart {
            throw error(what, "\(Tag.name(header.tag)) of \(length) bytes overruns \(name)")
        }
        return header
    }

    /// Reads a primitive element with identifier `tag` and returns its contents.
    ///
    /// - Parameters:
    ///   - tag: The identifier octet expected.
    ///   - what: The element's name in the grammar, for error reasons.
    mutating func readPrimitive(_ tag: UInt8, _ what: String) throws -> UnsafeBufferPointer<UInt8> {
        let header = try header(tag, what, allowIndefinite: false)
        let length = header.length ?? 0
        position = header.contentStart + length
        return UnsafeBufferPointer(rebasing: bytes[header.contentStart..<position])
    }

    /// Reads an element with identifier `tag` and a definite length and returns all of its
    /// octets: identifier, length and contents (the encoding a certificate or name is compared
    /// or parsed in).
    mutating func readEncoding(_ tag: UInt8, _ what: String) throws -> UnsafeBufferPointer<UInt8> {
        let start = position
        let header = try header(tag, what, allowIndefinite: false)
        position = header.contentStart + (header.length ?? 0)
        return UnsafeBufferPointer(rebasing: bytes[start..<position])
    }

    /// Enters a constructed element with identifier `tag`: returns a reader over its contents.
    /// Read the contents with the returned reader, then hand it back to ``leave(_:)``.
    ///
    /// - Parameters:
    ///   - tag: The identifier octet expected (with the constructed bit).
    ///   - what: The element's name in the grammar.
    ///   - indefinite: `true` when the element must have an indefinite length, `false` when it
    ///     must have a definite one.
    mutating func enter(_ tag: UInt8, _ what: String, indefinite: Bool = false) throws -> DERReader {
        let header = try header(tag, what, allowIndefinite: indefinite)
        guard depth < Self.maximumDepth else {
            throw error(what, "nested deeper than \(Self.maximumDepth) levels")
        }
        guard let length = header.length else {
            return DERReader(bytes: bytes, position: header.contentStart, bound: bound, isIndefinite: true,
                             depth: depth + 1, name: what)
        }
        guard !indefinite else {
            throw error(what, "must have an indefinite length, as Xcode writes it")
        }
        return DERReader(bytes: bytes, position: header.contentStart, bound: header.contentStart + length,
                         isIndefinite: false, depth: depth + 1, name: what)
    }

    /// Leaves a constructed element entered with ``enter(_:_:indefinite:)``: its contents must
    /// have been read to the end, and an indefinite length must end with end-of-contents octets.
    mutating func leave(_ child: DERReader) throws {
        if child.isIndefinite {
            guard child.isAtEnd else {
                throw child.error(child.name, "expected end-of-contents octets")
            }
            position = child.position + 2
        } else {
            guard child.position == child.bound else {
                throw child.error(child.name, "\(child.bound - child.position) unexpected bytes follow its last element")
            }
            position = child.bound
        }
    }

    /// Requires that nothing follows the elements read (for the top-level reader: that no bytes
    /// trail the structure).
    func finish() throws {
        guard position == bound, !isIndefinite else {
            throw error(name, "\(bound - position) bytes follow the structure")
        }
    }

    // MARK: Values

    /// Decodes INTEGER contents that fit in 64 bits, refusing non-minimal encodings (X.690 §8.3.2).
    ///
    /// - Parameters:
    ///   - contents: The INTEGER's contents octets.
    ///   - what: The element's name, for error reasons.
    static func integer(_ contents: UnsafeBufferPointer<UInt8>, _ what: String) throws -> Int64 {
        guard let first = contents.first else {
            throw ReceiptKitError(.malformedReceipt, "\(what): an INTEGER has at least one contents octet")
        }
        if contents.count > 1 {
            let second = contents[contents.startIndex + 1]
            guard !(first == 0x00 && second & 0x80 == 0), !(first == 0xFF && second & 0x80 != 0) else {
                throw ReceiptKitError(.malformedReceipt, "\(what): the INTEGER is not in its minimal encoding")
            }
        }
        guard contents.count <= 8 else {
            throw ReceiptKitError(.malformedReceipt, "\(what): the INTEGER does not fit in 64 bits")
        }
        var value: Int64 = first & 0x80 != 0 ? -1 : 0
        for byte in contents {
            value = value << 8 | Int64(byte)
        }
        return value
    }
}
