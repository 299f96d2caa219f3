internal import CReceiptKitJansson

/// A JSON document parsed by jansson, owned by this object and freed with it.
///
/// Parsing is strict: duplicate object members are rejected (signed data must have exactly one
/// meaning), as are invalid UTF-8, a byte-order mark, NUL in strings, and integers beyond 64 bits.
/// Plain strings are lifted out of the text before jansson parses it, values read back from the
/// original bytes and names looked up by their markers (see ``JSONLiftedStrings``): the values,
/// the errors and their reasons are the ones jansson gives for the text as it stands.
package final class JSONDocument {
    private let root: UnsafeMutablePointer<json_t>
    /// The values lifted out of the text jansson parsed, `nil` when it parsed the text itself.
    private let lifted: JSONLiftedStrings?

    /// The number of string values read from the original bytes rather than from jansson's copy.
    package var liftedStringCount: Int { lifted?.count ?? 0 }
    /// The number of distinct member names jansson saw as markers.
    package var liftedNameCount: Int { lifted?.nameCount ?? 0 }
    /// How many distinct member names are lifted from one text at most.
    package static var maximumLiftedNameCount: Int { JSONLiftedStrings.maximumNameCount }

    /// Parses `bytes` as a JSON object.
    ///
    /// - Parameters:
    ///   - bytes: The UTF-8 JSON text.
    ///   - code: The error code to throw when parsing fails.
    ///   - what: What the text is, for the error reason (e.g. "JWS header").
    ///   - liftingLongStrings: Whether plain strings may be lifted out before jansson parses the
    ///     text; `false` parses the text as it stands, which tests compare with.
    ///   - allowingNUL: Whether strings may hold U+0000 (`\u0000`): only for text ReceiptKit
    ///     wrote itself, such as an entitlement ledger, never for signed data.
    ///   - reportingLines: Whether a syntax error names its line and column (a file a person
    ///     edits) rather than its byte offset.
    /// - Throws: ``ReceiptKitError`` with `code` when the text is not a strict JSON object.
    package init(
        parsingObject bytes: [UInt8], code: ReceiptKitError.Code, what: String, liftingLongStrings: Bool = true,
        allowingNUL: Bool = false, reportingLines: Bool = false
    ) throws {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw ReceiptKitError(code, "\(what) starts with a byte-order mark")
        }
        var error = json_error_t()
        let flags = allowingNUL ? rk_json_ledger_decode_flags() : rk_json_strict_decode_flags()
        var parsed: UnsafeMutablePointer<json_t>?
        var lifted: JSONLiftedStrings?
        if liftingLongStrings, let (copy, strings) = JSONLiftedStrings.lift(bytes) {
            parsed = Self.load(copy, flags, &error)
            lifted = parsed == nil ? nil : strings
        }
        // Nothing lifted, or the copy is invalid: jansson reads the text itself, so an error's
        // reason and offset are the ones the text as it stands gives.
        if parsed == nil {
            parsed = Self.load(bytes, flags, &error)
        }
        guard let parsed else {
            let text = error.message
            let position = reportingLines ? "at line \(error.line), column \(error.column)" : "at offset \(error.position)"
            throw ReceiptKitError(code, "\(what) is not valid JSON: \(text) \(position)")
        }
        guard rk_json_typeof(parsed) == JSON_OBJECT else {
            json_decref(parsed)
            throw ReceiptKitError(code, "\(what) is not a JSON object")
        }
        self.root = parsed
        self.lifted = lifted
    }

    /// jansson's parse of `bytes` with `flags`, or `nil` with `error` filled in.
    static func load(
        _ bytes: [UInt8], _ flags: Int, _ error: inout json_error_t
    ) -> UnsafeMutablePointer<json_t>? {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                json_loadb(chars.baseAddress, chars.count, flags, &error)
            }
        }
    }

    deinit {
        json_decref(root)
    }

    /// Calls `body` with the root object. The view must not escape `body`.
    package func withRoot<Result>(
        path: String = "", code: ReceiptKitError.Code, _ body: (JSONObject) throws -> Result
    ) rethrows -> Result {
        try withExtendedLifetime(self) {
            try body(JSONObject(pointer: root, lifted: lifted, path: path, code: code))
        }
    }
}

extension json_error_t {
    /// jansson's reason for a failed parse (`unexpected token near ','`).
    var message: String {
        withUnsafeBytes(of: text) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}

/// A read-only view of a JSON object inside a live ``JSONDocument``, with typed member access.
///
/// Every accessor treats an absent member and JSON `null` alike (`nil`), and throws
/// ``ReceiptKitError`` with the view's code, naming the member's path, when a member has another
/// JSON type than the one asked for.
package struct JSONObject {
    fileprivate let pointer: UnsafeMutablePointer<json_t>
    /// The document's lifted values, which its markers stand for.
    fileprivate let lifted: JSONLiftedStrings?
    /// The dotted path of this object in its document, for error reasons ("" for the root).
    let path: String
    let code: ReceiptKitError.Code

    private func lookup(_ key: JSONKey) -> UnsafeMutablePointer<json_t>? {
        let object = pointer  // capture the pointer alone, not the view's path and code
        func get(_ name: UnsafeBufferPointer<UInt8>) -> UnsafeMutablePointer<json_t>? {
            name.withMemoryRebound(to: CChar.self) { json_object_getn(object, $0.baseAddress, $0.count) }
        }
        guard let lifted else { return key.withUTF8(get) }
        return key.withUTF8 { name in lifted.withParsedName(name, get) }  // nil: in no object
    }

    private func member(_ key: JSONKey) -> UnsafeMutablePointer<json_t>? {
        guard let value = lookup(key), rk_json_typeof(value) != JSON_NULL else { return nil }
        return value
    }

    private func name(_ key: JSONKey) -> String {
        path.isEmpty ? key.text : "\(path).\(key.text)"
    }

    private func typeError(_ key: JSONKey, _ expected: String, _ value: UnsafeMutablePointer<json_t>) -> ReceiptKitError {
        ReceiptKitError(code, "member '\(name(key))' must be \(expected), found \(Self.typeName(value))")
    }

    private static func typeName(_ value: UnsafeMutablePointer<json_t>) -> String {
        switch rk_json_typeof(value) {
        case JSON_OBJECT: "an object"
        case JSON_ARRAY: "an array"
        case JSON_STRING: "a string"
        case JSON_INTEGER: "an integer"
        case JSON_REAL: "a fractional number"
        case JSON_TRUE, JSON_FALSE: "a boolean"
        default: "null"
        }
    }

    /// The member `key` as `read` reads it, which must be present and not `null`.
    ///
    /// - Parameters:
    ///   - key: The member's name.
    ///   - read: The accessor for its type, e.g. `object.int64`.
    /// - Returns: Its value.
    /// - Throws: ``ReceiptKitError`` naming the member when it is absent, `null`, or of another
    ///   JSON type.
    package func required<Value>(_ key: JSONKey, _ read: (JSONKey) throws -> Value?) throws -> Value {
        guard let value = try read(key) else {
            throw ReceiptKitError(code, "member '\(name(key))' is missing or null")
        }
        return value
    }

    /// Whether the object has `key` (with any value, `null` included).
    package func contains(_ key: JSONKey) -> Bool {
        lookup(key) != nil
    }

    /// The string member `key`.
    package func string(_ key: JSONKey) throws -> String? {
        guard let value = member(key) else { return nil }
        guard rk_json_typeof(value) == JSON_STRING else { throw typeError(key, "a string", value) }
        return Self.string(value, lifted)
    }

    /// The string member `key` as its UTF-8 bytes, for text that is read as bytes (a JWS): the
    /// same bytes ``string(_:)`` would hold, without building a `String` first.
    package func utf8String(_ key: JSONKey) throws -> [UInt8]? {
        guard let value = member(key) else { return nil }
        guard rk_json_typeof(value) == JSON_STRING else { throw typeError(key, "a string", value) }
        return Self.withUTF8(value, lifted) { Array($0) }
    }

    /// A string value's text: jansson's, or the original bytes a marker stands for.
    fileprivate static func string(_ value: UnsafeMutablePointer<json_t>, _ lifted: JSONLiftedStrings?) -> String {
        withUTF8(value, lifted) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with a string value's bytes: jansson's, or the original bytes a marker
    /// stands for. jansson's strings are valid UTF-8, and lifted ones printable ASCII.
    private static func withUTF8<Result>(
        _ value: UnsafeMutablePointer<json_t>, _ lifted: JSONLiftedStrings?,
        _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        let length = json_string_length(value)
        guard let characters = json_string_value(value) else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        return characters.withMemoryRebound(to: UInt8.self, capacity: length) {
            let parsed = UnsafeBufferPointer(start: $0, count: length)
            if let lifted, let original = lifted.value(of: parsed) {
                return original.withUnsafeBufferPointer(body)
            }
            return body(parsed)
        }
    }

    /// The integer member `key` (a JSON number without fraction or exponent).
    package func int64(_ key: JSONKey) throws -> Int64? {
        guard let value = member(key) else { return nil }
        guard rk_json_typeof(value) == JSON_INTEGER else { throw typeError(key, "an integer", value) }
        return Int64(json_integer_value(value))
    }

    /// The integer member `key`, which must fit in 32 bits.
    package func int32(_ key: JSONKey) throws -> Int32? {
        guard let wide = try int64(key) else { return nil }
        guard let narrow = Int32(exactly: wide) else {
            throw ReceiptKitError(code, "member '\(name(key))' is out of range: \(wide)")
        }
        return narrow
    }

    /// The Boolean member `key` (JSON `true` or `false`, never a string).
    package func bool(_ key: JSONKey) throws -> Bool? {
        guard let value = member(key) else { return nil }
        switch rk_json_typeof(value) {
        case JSON_TRUE: return true
        case JSON_FALSE: return false
        default: throw typeError(key, "a boolean", value)
        }
    }

    /// The date member `key`: milliseconds since 1970 as a JSON number, possibly fractional.
    package func timestamp(_ key: JSONKey) throws -> Timestamp? {
        guard let value = member(key) else { return nil }
        switch rk_json_typeof(value) {
        case JSON_INTEGER:
            let milliseconds = Int64(json_integer_value(value))
            guard abs(milliseconds) <= Timestamp.limit else {
                throw ReceiptKitError(code, "member '\(name(key))' is out of range: \(milliseconds)")
            }
            return Timestamp(millisecondsSince1970: milliseconds)
        case JSON_REAL:
            guard let timestamp = Timestamp(fractionalMilliseconds: json_real_value(value)) else {
                throw ReceiptKitError(code, "member '\(name(key))' is out of range")
            }
            return timestamp
        default:
            throw typeError(key, "a number of milliseconds", value)
        }
    }

    /// The object member `key`.
    package func object(_ key: JSONKey) throws -> JSONObject? {
        guard let value = member(key) else { return nil }
        guard rk_json_typeof(value) == JSON_OBJECT else { throw typeError(key, "an object", value) }
        return JSONObject(pointer: value, lifted: lifted, path: name(key), code: code)
    }

    /// The array member `key`, as a view.
    package func array(_ key: JSONKey) throws -> JSONArray? {
        guard let value = member(key) else { return nil }
        guard rk_json_typeof(value) == JSON_ARRAY else { throw typeError(key, "an array", value) }
        return JSONArray(pointer: value, lifted: lifted, path: name(key), code: code)
    }

    /// The names of the object's members, in the order the text gives them.
    package var memberNames: [String] {
        var names: [String] = []
        var iterator = json_object_iter(pointer)
        while let current = iterator {
            names.append(String(cString: json_object_iter_key(current)))
            iterator = json_object_iter_next(pointer, current)
        }
        return names
    }

    /// The array-of-strings member `key`.
    package func strings(_ key: JSONKey) throws -> [String]? {
        guard let array = try array(key) else { return nil }
        return try (0..<array.count).map { try array.string(at: $0) }
    }

    /// The array-of-objects member `key`, each decoded by `decode`.
    package func objects<Element>(_ key: JSONKey, _ decode: (JSONObject) throws -> Element) throws -> [Element]? {
        guard let array = try array(key) else { return nil }
        return try (0..<array.count).map { try decode(array.object(at: $0)) }
    }
}

/// A read-only view of a JSON array inside a live ``JSONDocument``.
package struct JSONArray {
    fileprivate let pointer: UnsafeMutablePointer<json_t>
    fileprivate let lifted: JSONLiftedStrings?
    let path: String
    let code: ReceiptKitError.Code

    /// The number of elements.
    package var count: Int { json_array_size(pointer) }

    private func element(_ index: Int) -> UnsafeMutablePointer<json_t>? {
        json_array_get(pointer, index)
    }

    /// Whether the element at `index` is a string.
    package func isString(at index: Int) -> Bool {
        element(index).map { rk_json_typeof($0) == JSON_STRING } ?? false
    }

    /// The element at `index`, which must be a string.
    package func string(at index: Int) throws -> String {
        guard let value = element(index), rk_json_typeof(value) == JSON_STRING else {
            throw ReceiptKitError(code, "element \(index) of '\(path)' must be a string")
        }
        return JSONObject.string(value, lifted)
    }

    /// The element at `index`, which must be an object.
    package func object(at index: Int) throws -> JSONObject {
        guard let value = element(index), rk_json_typeof(value) == JSON_OBJECT else {
            throw ReceiptKitError(code, "element \(index) of '\(path)' must be an object")
        }
        return JSONObject(pointer: value, lifted: lifted, path: "\(path)[\(index)]", code: code)
    }
}
