internal import CReceiptKitJansson

extension LocatedJSON {
    /// Reads a JSON text a person wrote: jansson parses it, then each value's line is found in
    /// the text.
    ///
    /// - Parameter bytes: The UTF-8 JSON text.
    /// - Throws: ``Failure`` at the line jansson stopped at, its reason `not valid JSON: ` and
    ///   jansson's (`unexpected token near ','`, `duplicate object key near '"name"'`) and the
    ///   column; or at the value nested deeper than ``maximumDepth``.
    public init(jsonBytes bytes: [UInt8]) throws(Failure) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw Failure(line: 1, path: "", reason: "not valid JSON: the text starts with a byte-order mark")
        }
        var error = json_error_t()
        guard let root = JSONDocument.load(bytes, rk_json_document_decode_flags(), &error) else {
            throw Failure(line: max(Int(error.line), 1), path: "", reason: "not valid JSON: \(error.message) (column \(error.column))")
        }
        defer { json_decref(root) }
        var text = LocatingCursor(bytes: bytes)
        self = try text.value(root, path: "", depth: 0)
    }
}

/// A cursor over a text jansson accepted, moved through it in step with jansson's values (an
/// object's members come in the order written, each once) to find the line each starts on.
private struct LocatingCursor {
    let bytes: [UInt8]
    private var index = 0
    /// The line of the byte at `index`.
    private var line = 1

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// `json`, the value written at the cursor, with its line and path and those of the values
    /// in it; the cursor moves past it.
    mutating func value(
        _ json: UnsafeMutablePointer<json_t>, path: String, depth: Int
    ) throws(LocatedJSON.Failure) -> LocatedJSON {
        skipWhitespace()
        let start = line
        guard depth < LocatedJSON.maximumDepth else {
            throw LocatedJSON.Failure(line: start, path: path, reason: "nested deeper than \(LocatedJSON.maximumDepth) levels")
        }
        let value: LocatedJSON.Value
        switch rk_json_typeof(json) {
        case JSON_OBJECT:
            advance()  // {
            var members: [LocatedJSON.Member] = []
            var iterator = json_object_iter(json)
            while let current = iterator, let member = json_object_iter_value(current) {
                if !members.isEmpty { skipSeparator() }
                skipWhitespace()
                let nameLine = line
                skipString()
                skipSeparator()  // :
                let name = String(cString: json_object_iter_key(current))
                let memberPath = LocatedJSON.path(path, member: name)
                members.append(.init(name: name, line: nameLine, value: try self.value(member, path: memberPath, depth: depth + 1)))
                iterator = json_object_iter_next(json, current)
            }
            skipSeparator()  // }
            value = .object(members)
        case JSON_ARRAY:
            advance()  // [
            var elements: [LocatedJSON] = []
            for position in 0..<json_array_size(json) {
                guard let element = json_array_get(json, position) else { break }
                if position > 0 { skipSeparator() }
                elements.append(try self.value(element, path: "\(path)[\(position)]", depth: depth + 1))
            }
            skipSeparator()  // ]
            value = .array(elements)
        case JSON_STRING:
            skipString()
            let length = json_string_length(json)
            value = .string(json_string_value(json).map { characters in
                characters.withMemoryRebound(to: UInt8.self, capacity: length) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                }
            } ?? "")
        case JSON_INTEGER:
            skipScalar()
            value = .integer(Int64(json_integer_value(json)))
        case JSON_REAL:
            skipScalar()
            value = .real(json_real_value(json))
        case JSON_TRUE:
            skipScalar()
            value = .bool(true)
        case JSON_FALSE:
            skipScalar()
            value = .bool(false)
        default:
            skipScalar()
            value = .null
        }
        return LocatedJSON(value, line: start, path: path)
    }

    private var next: UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func advance() {
        if next == UInt8(ascii: "\n") { line += 1 }
        index += 1
    }

    private mutating func skipWhitespace() {
        while let byte = next, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { advance() }
    }

    /// Skips white space, the one `,`, `:`, `]` or `}` after it, and the white space after that.
    private mutating func skipSeparator() {
        skipWhitespace()
        if next != nil { advance() }
        skipWhitespace()
    }

    /// Skips the string at the cursor, escapes and all (a string holds no raw line break).
    private mutating func skipString() {
        advance()  // "
        while let byte = next {
            advance()
            if byte == UInt8(ascii: "\\") {
                advance()
            } else if byte == UInt8(ascii: "\"") {
                return
            }
        }
    }

    /// Skips a number, `true`, `false` or `null`: up to the next separator or white space.
    private mutating func skipScalar() {
        while let byte = next, byte != UInt8(ascii: ","), byte != UInt8(ascii: "}"), byte != UInt8(ascii: "]"),
            byte != 0x20, byte != 0x09, byte != 0x0A, byte != 0x0D {
            advance()
        }
    }
}
