/// Writes JSON text with members in the order they are written: ReceiptKit's output is
/// deterministic byte for byte, whatever the platform's dictionary order.
///
/// Output is appended to a byte buffer as it is written: batches render one record per input,
/// so the writer avoids intermediate strings.
package struct JSONWriter {
    fileprivate(set) var bytes: [UInt8]
    private let pretty: Bool
    private var depth = 0
    /// Bit `d` is set while the container at depth `d` still has no element. ReceiptKit's own
    /// schema nests a handful of levels, far below the 64 this can hold.
    private var emptyContainers: UInt64 = 1

    package init(pretty: Bool = false) {
        self.init(appendingTo: [], pretty: pretty)
        bytes.reserveCapacity(2048)
    }

    /// A writer that appends to `buffer`'s bytes.
    init(appendingTo buffer: [UInt8], pretty: Bool) {
        self.bytes = buffer
        self.pretty = pretty
    }

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends to `buffer` what `body` writes, reusing `buffer`'s storage.
    package static func append(to buffer: inout [UInt8], pretty: Bool, _ body: (inout JSONWriter) -> Void) {
        var writer = JSONWriter(appendingTo: buffer, pretty: pretty)
        buffer = []  // the writer now holds the only reference, so it appends in place
        body(&writer)
        buffer = writer.bytes
    }

    private mutating func newline() {
        guard pretty else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
    }

    private mutating func separate() {
        let bit: UInt64 = 1 << UInt64(depth)
        if emptyContainers & bit != 0 {
            emptyContainers &= ~bit
        } else {
            bytes.append(UInt8(ascii: ","))
        }
        newline()
    }

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        depth += 1
        precondition(depth < 64, "JSONWriter nests at most 63 containers")
        emptyContainers |= 1 << UInt64(depth)
    }

    private mutating func close(_ bracket: UInt8) {
        let bit: UInt64 = 1 << UInt64(depth)
        let wasEmpty = emptyContainers & bit != 0
        emptyContainers &= ~bit
        depth -= 1
        if !wasEmpty {
            newline()
        }
        bytes.append(bracket)
    }

    /// Writes an object whose members `body` writes with the `member` methods.
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        open(UInt8(ascii: "{"))
        body(&self)
        close(UInt8(ascii: "}"))
    }

    /// Writes an array whose elements `body` writes with the `element` methods.
    package mutating func array(_ body: (inout JSONWriter) -> Void) {
        open(UInt8(ascii: "["))
        body(&self)
        close(UInt8(ascii: "]"))
    }

    /// Writes a member name. Names are ReceiptKit's own identifiers, which need no escaping.
    private mutating func key(_ name: JSONKey) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8 { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(UInt8(ascii: " ")) }
    }

    // MARK: Members

    package mutating func member(_ name: JSONKey, _ value: String?) {
        key(name)
        if let value { writeString(value) } else { writeNull() }
    }

    package mutating func member(_ name: JSONKey, _ value: Int64?) {
        key(name)
        if let value { writeInteger(value) } else { writeNull() }
    }

    package mutating func member(_ name: JSONKey, _ value: Int32?) {
        member(name, value.map(Int64.init))
    }

    package mutating func member(_ name: JSONKey, _ value: Int?) {
        member(name, value.map(Int64.init))
    }

    package mutating func member(_ name: JSONKey, _ value: Bool?) {
        key(name)
        if let value { bytes.append(contentsOf: (value ? "true" : "false").utf8) } else { writeNull() }
    }

    package mutating func member(_ name: JSONKey, _ value: Timestamp?) {
        key(name)
        guard let value else { return writeNull() }
        bytes.append(UInt8(ascii: "\""))
        value.appendISO8601(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func member(_ name: JSONKey, strings: [String]?) {
        key(name)
        guard let strings else { return writeNull() }
        array { writer in
            for string in strings { writer.element(string) }
        }
    }

    /// A member whose value `body` writes (an object or array), or `null` when `present` is false.
    package mutating func member(_ name: JSONKey, present: Bool = true, _ body: (inout JSONWriter) -> Void) {
        key(name)
        if present { body(&self) } else { writeNull() }
    }

    /// A member whose value is an object `body` writes, or `null`.
    package mutating func objectMember<Value>(_ name: JSONKey, _ value: Value?, _ body: (inout JSONWriter, Value) -> Void) {
        key(name)
        guard let value else { return writeNull() }
        object { body(&$0, value) }
    }

    // MARK: Elements

    package mutating func element(_ value: String) {
        separate()
        writeString(value)
    }

    package mutating func element(_ body: (inout JSONWriter) -> Void) {
        separate()
        body(&self)
    }

    // MARK: Scalars

    private mutating func writeNull() {
        bytes.append(contentsOf: "null".utf8)
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Writes `value` in decimal without an intermediate string.
    private mutating func writeInteger(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for all 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }

    /// Whether `byte` must be escaped in a JSON string (RFC 8259 §7; DEL too, for terminals).
    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F
    }

    private mutating func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Copy runs of bytes that need no escaping in one go; most strings are one run.
            var runStart = 0
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                guard Self.needsEscape(byte) else {
                    index += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                index += 1
                runStart = index
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(UInt8(ascii: "u"))
                    bytes.append(UInt8(ascii: "0"))
                    bytes.append(UInt8(ascii: "0"))
                    Self.hexDigits.withUTF8Buffer { digits in
                        bytes.append(digits[Int(byte >> 4)])
                        bytes.append(digits[Int(byte & 0x0F)])
                    }
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

