/// Writes JSON text with members in the order they are written: ReceiptKit's output is
/// deterministic byte for byte, whatever the platform's dictionary order.
///
/// Output is written straight into a growing byte buffer as it is produced: batches render one
/// record per input, so the writer builds no intermediate strings, and each byte or run is
/// stored through a pointer, without an array's per-append uniqueness and capacity checks.
package struct JSONWriter {
    private let output: OutputBuffer
    private let pretty: Bool
    private var depth = 0
    /// Bit `d` is set while the container at depth `d` still has no element. ReceiptKit's own
    /// schema nests a handful of levels, far below the 64 this can hold.
    private var emptyContainers: UInt64 = 1

    package init(pretty: Bool = false) {
        self.output = OutputBuffer(capacity: 2048)
        self.pretty = pretty
    }

    /// The text written so far.
    package var text: String { output.withBytes { String(decoding: $0, as: UTF8.self) } }

    /// Appends to `buffer` what `body` writes.
    package static func append(to buffer: inout [UInt8], pretty: Bool, _ body: (inout JSONWriter) -> Void) {
        var writer = JSONWriter(pretty: pretty)
        body(&writer)
        writer.output.withBytes { buffer.append(contentsOf: $0) }
    }

    private mutating func newline() {
        guard pretty else { return }
        output.append(UInt8(ascii: "\n"))
        for _ in 0..<depth * 2 { output.append(UInt8(ascii: " ")) }
    }

    private mutating func separate() {
        let bit: UInt64 = 1 << UInt64(depth)
        if emptyContainers & bit != 0 {
            emptyContainers &= ~bit
        } else {
            output.append(UInt8(ascii: ","))
        }
        newline()
    }

    private mutating func open(_ bracket: UInt8) {
        output.append(bracket)
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
        output.append(bracket)
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
        let output = output
        name.withUTF8 { name in
            output.append(UInt8(ascii: "\""))
            output.append(UnsafeRawBufferPointer(name))
            output.append(UInt8(ascii: "\""))
            output.append(UInt8(ascii: ":"))
        }
        if pretty { output.append(UInt8(ascii: " ")) }
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
        if let value { output.append(value ? "true" : "false") } else { writeNull() }
    }

    package mutating func member(_ name: JSONKey, _ value: Timestamp?) {
        key(name)
        guard let value else { return writeNull() }
        let output = output
        output.append(UInt8(ascii: "\""))
        value.withISO8601 { output.append($0) }
        output.append(UInt8(ascii: "\""))
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
        output.append("null")
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Writes `value` in decimal without an intermediate string.
    private mutating func writeInteger(_ value: Int64) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for all 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.append(UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }

    /// Whether `byte` must be escaped in a JSON string (RFC 8259 §7; DEL too, for terminals).
    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F
    }

    private func writeString(_ value: String) {
        output.append(UInt8(ascii: "\""))
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
                output.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart..<index])))
                index += 1
                runStart = index
                output.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
                case UInt8(ascii: "\n"): output.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): output.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): output.append(UInt8(ascii: "t"))
                default:
                    output.append(UInt8(ascii: "u"))
                    output.append(UInt8(ascii: "0"))
                    output.append(UInt8(ascii: "0"))
                    Self.hexDigits.withUTF8Buffer { digits in
                        output.append(digits[Int(byte >> 4)])
                        output.append(digits[Int(byte & 0x0F)])
                    }
                }
            }
            output.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart...])))
        }
        output.append(UInt8(ascii: "\""))
    }
}

/// The bytes a ``JSONWriter`` has written: storage it owns, grown by doubling, written through a
/// pointer. Only its writer (and the writer's copies, which nothing makes) ever holds one.
private final class OutputBuffer {
    private var start: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        self.start = .allocate(capacity: capacity)
    }

    deinit {
        start.deallocate()
    }

    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        body(UnsafeBufferPointer(start: start, count: count))
    }

    @inline(__always)
    func append(_ byte: UInt8) {
        if count == capacity { grow(toHold: 1) }
        start[count] = byte
        count &+= 1
    }

    @inline(__always)
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        if capacity &- count < bytes.count { grow(toHold: bytes.count) }
        UnsafeMutableRawPointer(start + count).copyMemory(from: source, byteCount: bytes.count)
        count &+= bytes.count
    }

    /// Appends a literal such as `null`.
    func append(_ text: StaticString) {
        text.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
    }

    /// Makes room for `extra` more bytes, at least doubling the capacity.
    @inline(never)
    private func grow(toHold extra: Int) {
        let newCapacity = max(capacity * 2, count + extra)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        grown.moveInitialize(from: start, count: count)
        start.deallocate()
        start = grown
        capacity = newCapacity
    }
}
