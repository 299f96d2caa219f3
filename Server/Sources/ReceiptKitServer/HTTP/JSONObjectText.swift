/// One JSON object written member by member, the one way the server builds JSON text: names and
/// strings escaped here, and JSON that ReceiptKit already rendered (a record, a state, Apple's
/// verifyReceipt body) embedded whole as a member's value — or, for a rendered object that an
/// answer extends, continued with more members (``init(extending:)``) — never cut and spliced
/// at the call site.
struct JSONObjectText {
    private var body: String
    private var isEmpty: Bool

    /// An empty object.
    init() {
        body = "{"
        isEmpty = true
    }

    /// The members of a rendered JSON object, to add more to. `rendered` is text ReceiptKit
    /// wrote: one object, `{` … `}`, with or without a final newline.
    init(extending rendered: String) {
        var text = Substring(rendered)
        while text.last?.isWhitespace == true { text.removeLast() }
        precondition(text.first == "{" && text.last == "}", "not a rendered JSON object")
        text.removeLast()
        body = String(text)
        isEmpty = text.dropFirst().allSatisfy(\.isWhitespace)
    }

    /// The finished object.
    var text: String { body + "}" }

    /// A member whose value is `null` (an absent object, string or number).
    mutating func null(_ name: String) {
        writeName(name)
        body += "null"
    }

    /// A string member, or `null`.
    mutating func member(_ name: String, _ value: String?) {
        writeName(name)
        if let value { Self.escape(value, into: &body) } else { body += "null" }
    }

    mutating func member(_ name: String, _ value: Bool) {
        writeName(name)
        body += value ? "true" : "false"
    }

    /// An integer member.
    mutating func member(_ name: String, _ value: Int) {
        writeName(name)
        body += String(value)
    }

    /// An integer member, or `null`.
    mutating func member(_ name: String, _ value: Int64?) {
        writeName(name)
        body += value.map { String($0) } ?? "null"
    }

    /// A member whose value is an array of strings.
    mutating func member(_ name: String, strings: [String]) {
        writeName(name)
        body += "["
        for (index, string) in strings.enumerated() {
            if index > 0 { body += "," }
            Self.escape(string, into: &body)
        }
        body += "]"
    }

    /// A member whose value is JSON text ReceiptKit rendered (an object or an array).
    mutating func member(_ name: String, json value: String) {
        writeName(name)
        body += value
    }

    /// A member whose value is an array of rendered JSON values.
    mutating func member(_ name: String, jsonArray elements: [String]) {
        writeName(name)
        body += "[" + elements.joined(separator: ",") + "]"
    }

    private mutating func writeName(_ name: String) {
        if !isEmpty { body += "," }
        isEmpty = false
        Self.escape(name, into: &body)
        body += ":"
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    private static func escape(_ value: String, into text: inout String) {
        text += "\""
        // Most values (ids, dates, product ids) need no escaping: appended whole. (Every byte of a
        // multi-byte UTF-8 sequence is 0x80 or above, so the bytes to look for are ASCII's.)
        guard value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            text += value
            text += "\""
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
