/// Writes JSON text with members in the order they are written: ReceiptKit's output is
/// deterministic byte for byte, whatever the platform's dictionary order.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private let pretty: Bool
    private var depth = 0
    /// Whether the current container still has no element.
    private var empty = [true]

    init(pretty: Bool = false) {
        self.pretty = pretty
        bytes.reserveCapacity(1024)
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func newline() {
        guard pretty else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
    }

    private mutating func separate() {
        if empty[empty.count - 1] {
            empty[empty.count - 1] = false
        } else {
            bytes.append(UInt8(ascii: ","))
        }
        newline()
    }

    private mutating func open(_ bracket: Character) {
        bytes.append(UInt8(ascii: bracket.unicodeScalars.first ?? "{"))
        depth += 1
        empty.append(true)
    }

    private mutating func close(_ bracket: Character) {
        depth -= 1
        if empty.removeLast() == false {
            newline()
        }
        bytes.append(UInt8(ascii: bracket.unicodeScalars.first ?? "}"))
    }

    /// Writes an object whose members `body` writes with the `member` methods.
    mutating func object(_ body: (inout JSONWriter) -> Void) {
        open("{")
        body(&self)
        close("}")
    }

    /// Writes an array whose elements `body` writes with the `element` methods.
    mutating func array(_ body: (inout JSONWriter) -> Void) {
        open("[")
        body(&self)
        close("]")
    }

    private mutating func key(_ name: String) {
        separate()
        writeString(name)
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(UInt8(ascii: " ")) }
    }

    // MARK: Members

    mutating func member(_ name: String, _ value: String?) {
        key(name)
        if let value { writeString(value) } else { writeNull() }
    }

    mutating func member(_ name: String, _ value: Int64?) {
        key(name)
        if let value { bytes.append(contentsOf: String(value).utf8) } else { writeNull() }
    }

    mutating func member(_ name: String, _ value: Int32?) {
        member(name, value.map(Int64.init))
    }

    mutating func member(_ name: String, _ value: Int?) {
        member(name, value.map(Int64.init))
    }

    mutating func member(_ name: String, _ value: Bool?) {
        key(name)
        if let value { bytes.append(contentsOf: (value ? "true" : "false").utf8) } else { writeNull() }
    }

    mutating func member(_ name: String, _ value: Timestamp?) {
        key(name)
        guard let value else { return writeNull() }
        bytes.append(UInt8(ascii: "\""))
        value.appendISO8601(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func member(_ name: String, strings: [String]?) {
        key(name)
        guard let strings else { return writeNull() }
        array { writer in
            for string in strings { writer.element(string) }
        }
    }

    /// A member whose value `body` writes (an object or array), or `null` when `present` is false.
    mutating func member(_ name: String, present: Bool = true, _ body: (inout JSONWriter) -> Void) {
        key(name)
        if present { body(&self) } else { writeNull() }
    }

    /// A member whose value is an object `body` writes, or `null`.
    mutating func objectMember<Value>(_ name: String, _ value: Value?, _ body: (inout JSONWriter, Value) -> Void) {
        key(name)
        guard let value else { return writeNull() }
        object { body(&$0, value) }
    }

    // MARK: Elements

    mutating func element(_ value: String) {
        separate()
        writeString(value)
    }

    mutating func element(_ body: (inout JSONWriter) -> Void) {
        separate()
        body(&self)
    }

    // MARK: Scalars

    private mutating func writeNull() {
        bytes.append(contentsOf: "null".utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private mutating func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Copy runs of bytes that need no escaping in one go.
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F else {
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0x0F)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
