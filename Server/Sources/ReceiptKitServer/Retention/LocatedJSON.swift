/// A JSON value read from a file an operator wrote, with the line each value starts on, so that a
/// mistake in it is reported where it is (`…, line 12: …`). Read strictly (RFC 8259): one value,
/// nothing after it but white space, each member of an object once (a member given twice is an
/// error naming it, as the server's request bodies are read), at most 64 levels deep.
///
/// Foundation's and jansson's readers keep no position of the values they read; this one is for
/// small configuration files read once at start, not for request bodies.
package struct LocatedJSON: Sendable {
    /// What a value is.
    package enum Value: Sendable {
        /// Members in the order written.
        case object([Member])
        case array([LocatedJSON])
        case string(String)
        /// A number as written (`12`, `-0.5e3`), checked against JSON's grammar.
        case number(String)
        case bool(Bool)
        case null
    }

    /// A member of an object: its name and value, and the line its name is on.
    package struct Member: Sendable {
        let name: String
        let line: Int
        let value: LocatedJSON
    }

    let value: Value
    /// The line (1-based) the value starts on.
    let line: Int

    /// A mistake in the text, and the line it is on.
    package struct Failure: Error, Sendable, Equatable {
        package let line: Int
        package let reason: String
    }

    /// The deepest nesting read: far beyond any configuration, and well within the stack.
    static let maximumDepth = 64

    /// Reads a JSON text.
    ///
    /// - Parameter text: The text, UTF-8.
    /// - Returns: Its one value.
    /// - Throws: ``Failure`` with the line of the first mistake.
    static func parse(_ text: String) throws(Failure) -> LocatedJSON {
        var reader = Reader(bytes: Array(text.utf8))
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else {
            throw Failure(line: reader.line, reason: "unexpected text after the JSON value")
        }
        return value
    }

    /// What the value is, for an error that names what was expected instead: `a string`, `an
    /// object`, ….
    var kindName: String {
        switch value {
        case .object: "an object"
        case .array: "a list"
        case .string: "a string"
        case .number: "a number"
        case .bool: "true or false"
        case .null: "null"
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        var line = 1

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\n"): line += 1
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"): break
                default: return
                }
                index += 1
            }
        }

        func failure(_ reason: String) -> Failure {
            Failure(line: line, reason: reason)
        }

        mutating func value(depth: Int) throws(Failure) -> LocatedJSON {
            guard depth < LocatedJSON.maximumDepth else { throw failure("nested deeper than \(LocatedJSON.maximumDepth) levels") }
            guard index < bytes.count else { throw failure("the text ends where a value was expected") }
            let start = line
            switch bytes[index] {
            case UInt8(ascii: "{"): return LocatedJSON(value: .object(try object(depth: depth)), line: start)
            case UInt8(ascii: "["): return LocatedJSON(value: .array(try array(depth: depth)), line: start)
            case UInt8(ascii: "\""): return LocatedJSON(value: .string(try string()), line: start)
            case UInt8(ascii: "t"): try literal("true"); return LocatedJSON(value: .bool(true), line: start)
            case UInt8(ascii: "f"): try literal("false"); return LocatedJSON(value: .bool(false), line: start)
            case UInt8(ascii: "n"): try literal("null"); return LocatedJSON(value: .null, line: start)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return LocatedJSON(value: .number(try number()), line: start)
            default: throw failure("unexpected character \(Self.describe(bytes[index])) where a value was expected")
            }
        }

        mutating func object(depth: Int) throws(Failure) -> [Member] {
            index += 1
            var members: [Member] = []
            var names = Set<String>()
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return members
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw failure("expected a member's name in double quotes")
                }
                let nameLine = line
                let name = try string()
                guard names.insert(name).inserted else {
                    throw Failure(line: nameLine, reason: "the member \"\(name)\" is given twice in one object")
                }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':' after \"\(name)\"") }
                index += 1
                skipWhitespace()
                members.append(Member(name: name, line: nameLine, value: try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw failure("the text ends inside an object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw failure("expected ',' or '}' after a member") }
                index += 1
                return members
            }
        }

        mutating func array(depth: Int) throws(Failure) -> [LocatedJSON] {
            index += 1
            var elements: [LocatedJSON] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return elements
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw failure("the text ends inside a list") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw failure("expected ',' or ']' after an element") }
                index += 1
                return elements
            }
        }

        mutating func literal(_ word: String) throws(Failure) {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw failure("unexpected text where a value was expected (\(word)?)")
            }
            index += expected.count
        }

        /// A number as JSON's grammar has it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func number() throws(Failure) -> String {
            let start = index
            func digits() -> Int {
                let first = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - first
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                throw failure("a number must have a digit after '-'")
            }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                _ = digits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw failure("a number must have a digit after '.'") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw failure("a number must have a digit in its exponent") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// A string: its escapes decoded, surrogate pairs joined; raw control characters and bytes
        /// that are not UTF-8 refused.
        mutating func string() throws(Failure) -> String {
            index += 1
            var scalars = String.UnicodeScalarView()
            var run = index
            func flush(_ end: Int) throws(Failure) {
                guard run < end else { return }
                guard let text = String(validating: bytes[run..<end], as: UTF8.self) else {
                    throw failure("a string holds bytes that are not UTF-8")
                }
                scalars.append(contentsOf: text.unicodeScalars)
            }
            while true {
                guard index < bytes.count else { throw failure("the text ends inside a string") }
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    try flush(index)
                    index += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush(index)
                    index += 1
                    scalars.append(try escape())
                    run = index
                case 0..<0x20:
                    throw failure("a string holds a control character (write it escaped, \\n or \\u00XX)")
                default:
                    index += 1
                }
            }
        }

        /// The character an escape stands for, `index` just after its backslash.
        mutating func escape() throws(Failure) -> Unicode.Scalar {
            guard index < bytes.count else { throw failure("the text ends inside a string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let unit = try hexQuad()
                if (0xD800..<0xDC00).contains(unit) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw failure("a \\u escape of a high surrogate must be followed by its low surrogate")
                    }
                    index += 2
                    let low = try hexQuad()
                    guard (0xDC00..<0xE000).contains(low),
                          let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                    else { throw failure("a \\u escape of a high surrogate must be followed by its low surrogate") }
                    return scalar
                }
                guard let scalar = Unicode.Scalar(unit) else { throw failure("a \\u escape of a lone low surrogate") }
                return scalar
            default:
                throw failure("unknown escape \\\(Self.describe(byte)) in a string")
            }
        }

        mutating func hexQuad() throws(Failure) -> UInt32 {
            guard index + 4 <= bytes.count else { throw failure("a \\u escape needs four hex digits") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = Self.hexDigit(byte) else { throw failure("a \\u escape needs four hex digits") }
                value = value << 4 | digit
            }
            index += 4
            return value
        }

        static func hexDigit(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }

        static func describe(_ byte: UInt8) -> String {
            (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16)
        }
    }
}
