import Foundation

/// JSON text ReceiptKit rendered — a record, a state, Apple's verifyReceipt body — embedded whole
/// in an answer: the one value an answer does not encode member by member, because ReceiptKit's
/// rendering is the contract (`docs/output-schema.md`) and re-encoding it would cost a parse.
package struct RenderedJSON: Encodable, Sendable, Hashable {
    /// One JSON value, as ReceiptKit wrote it.
    package let text: String

    package init(_ text: String) {
        self.text = text
    }

    package func encode(to encoder: any Encoder) throws {
        // Only ``AnswerEncoder`` embeds it; any other encoder gets the text as a string.
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

/// Writes an `Encodable` answer as JSON text, the way every answer of the server is written:
/// members named by their keys in snake_case (`oldestPendingSeconds` is `oldest_pending_seconds`,
/// `notificationUUID` `notification_uuid`; a key in snake_case already is kept), in the order
/// they are encoded (a synthesized conformance encodes the stored properties in declaration
/// order), an optional that is `nil` as `null` (the documented members are always present), and
/// ``RenderedJSON`` embedded as it is.
package enum AnswerEncoder {
    /// The answer's JSON text.
    ///
    /// - Throws: `EncodingError` for a value JSON cannot hold (a non-finite number), or an
    ///   encoding that leaves a value empty.
    package static func encode(_ value: some Encodable) throws -> String {
        let root = Box()
        try Encoding(box: root, codingPath: []).encodeValue(value)
        var text = ""
        try root.write(to: &text, codingPath: [])
        return text
    }

    /// A node of the answer being built: filled once by the container that encodes it.
    fileprivate final class Box {
        enum Node {
            case empty
            /// A scalar's JSON text, or rendered JSON.
            case text(String)
            case object([(key: String, value: Box)])
            case array([Box])
        }

        var node = Node.empty

        func write(to text: inout String, codingPath: [String]) throws {
            switch node {
            case .empty:
                throw EncodingError.invalidValue(
                    (), .init(codingPath: [], debugDescription: "nothing was encoded at \(codingPath.joined(separator: "."))"))
            case .text(let scalar):
                text += scalar
            case .object(let members):
                text += "{"
                for (index, member) in members.enumerated() {
                    if index > 0 { text += "," }
                    text += AnswerEncoder.quoted(member.key)
                    text += ":"
                    try member.value.write(to: &text, codingPath: codingPath + [member.key])
                }
                text += "}"
            case .array(let elements):
                text += "["
                for (index, element) in elements.enumerated() {
                    if index > 0 { text += "," }
                    try element.write(to: &text, codingPath: codingPath + [String(index)])
                }
                text += "]"
            }
        }
    }

    /// A key in snake_case: a word starts at each upper-case letter that follows a lower-case
    /// letter or a digit, and at the last upper-case letter of a run followed by a lower-case one
    /// (`rootSHA256` is `root_sha256`, `HTTPStatus` `http_status`).
    package static func snakeCase(_ key: String) -> String {
        // Keys are Swift identifiers, ASCII in practice: decided byte by byte, with no Unicode
        // property lookups (an answer names a key per member, each time it is written).
        let bytes = Array(key.utf8)
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return unicodeSnakeCase(key) }
        func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
        func isLower(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        var name: [UInt8] = []
        name.reserveCapacity(bytes.count + 4)
        for (index, byte) in bytes.enumerated() {
            if isUpper(byte), index > 0 {
                let previous = bytes[index - 1]
                let nextIsLower = index + 1 < bytes.count && isLower(bytes[index + 1])
                if isLower(previous) || isDigit(previous) || (isUpper(previous) && nextIsLower) {
                    name.append(UInt8(ascii: "_"))
                }
            }
            name.append(isUpper(byte) ? byte + (UInt8(ascii: "a") - UInt8(ascii: "A")) : byte)
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// ``snakeCase(_:)`` for a key with characters beyond ASCII, by Unicode's properties.
    private static func unicodeSnakeCase(_ key: String) -> String {
        let characters = Array(key)
        var name = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                    name.append("_")
                }
            }
            name += character.lowercased()
        }
        return name
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    package static func quoted(_ value: String) -> String {
        // Most strings need no escape: copied whole.
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + value + "\""
        }
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }

    /// A scalar's JSON text.
    fileprivate static func scalar(_ value: some Encodable, codingPath: [any CodingKey]) throws -> String? {
        switch value {
        case let value as String: return quoted(value)
        case let value as Bool: return value ? "true" : "false"
        case let value as Int: return String(value)
        case let value as Int64: return String(value)
        case let value as Int32: return String(value)
        case let value as UInt64: return String(value)
        case let value as Double:
            guard value.isFinite else {
                throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "JSON has no \(value)"))
            }
            return String(value)
        case let value as RenderedJSON: return value.text
        default: return nil
        }
    }

    /// The encoder one value is encoded through.
    fileprivate struct Encoding: Encoder {
        let box: Box
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        /// Encodes a value into ``box``: a scalar or rendered JSON directly, anything else through
        /// its own `encode(to:)`.
        func encodeValue(_ value: some Encodable) throws {
            if let text = try AnswerEncoder.scalar(value, codingPath: codingPath) {
                box.node = .text(text)
            } else {
                try value.encode(to: self)
            }
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if case .object = box.node {} else { box.node = .object([]) }
            return KeyedEncodingContainer(Keyed<Key>(box: box, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if case .array = box.node {} else { box.node = .array([]) }
            return Unkeyed(box: box, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(box: box, codingPath: codingPath)
        }
    }

    fileprivate struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: Box
        let codingPath: [any CodingKey]

        private func child(_ key: Key) -> Box {
            let child = Box()
            if case .object(var members) = box.node {
                // Emptied first, so that the append does not copy the members.
                box.node = .empty
                members.append((AnswerEncoder.snakeCase(key.stringValue), child))
                box.node = .object(members)
            }
            return child
        }

        mutating func encodeNil(forKey key: Key) throws {
            child(key).node = .text("null")
        }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try Encoding(box: child(key), codingPath: codingPath + [key]).encodeValue(value)
        }

        // The documented members are always present: `nil` is written `null`, not left out.
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
            guard let value else { return try encodeNil(forKey: key) }
            try encode(value, forKey: key)
        }

        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
            guard let value else { return try encodeNil(forKey: key) }
            try encode(value, forKey: key)
        }

        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
            guard let value else { return try encodeNil(forKey: key) }
            try encode(value, forKey: key)
        }

        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
            guard let value else { return try encodeNil(forKey: key) }
            try encode(value, forKey: key)
        }

        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
            guard let value else { return try encodeNil(forKey: key) }
            try encode(value, forKey: key)
        }

        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
            guard let value else { return try encodeNil(forKey: key) }
            try encode(value, forKey: key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            Encoding(box: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            Encoding(box: child(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            Encoding(box: box, codingPath: codingPath)
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            Encoding(box: child(key), codingPath: codingPath + [key])
        }
    }

    fileprivate struct Unkeyed: UnkeyedEncodingContainer {
        let box: Box
        let codingPath: [any CodingKey]

        var count: Int {
            if case .array(let elements) = box.node { return elements.count }
            return 0
        }

        private func next() -> Box {
            let element = Box()
            if case .array(var elements) = box.node {
                box.node = .empty
                elements.append(element)
                box.node = .array(elements)
            }
            return element
        }

        private var elementPath: [any CodingKey] { codingPath + [Index(intValue: count)] }

        mutating func encodeNil() throws {
            next().node = .text("null")
        }

        mutating func encode<T: Encodable>(_ value: T) throws {
            let path = elementPath
            try Encoding(box: next(), codingPath: path).encodeValue(value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let path = elementPath
            return Encoding(box: next(), codingPath: path).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let path = elementPath
            return Encoding(box: next(), codingPath: path).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            let path = elementPath
            return Encoding(box: next(), codingPath: path)
        }
    }

    fileprivate struct Single: SingleValueEncodingContainer {
        let box: Box
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws {
            box.node = .text("null")
        }

        mutating func encode<T: Encodable>(_ value: T) throws {
            try Encoding(box: box, codingPath: codingPath).encodeValue(value)
        }
    }

    /// An array element's place in a coding path.
    fileprivate struct Index: CodingKey {
        let intValue: Int?
        var stringValue: String { String(intValue ?? 0) }

        init(intValue: Int) {
            self.intValue = intValue
        }

        init?(stringValue: String) {
            guard let value = Int(stringValue) else { return nil }
            intValue = value
        }
    }
}
