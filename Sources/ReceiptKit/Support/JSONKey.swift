/// A JSON member name ReceiptKit reads or writes: a string literal in the source, used from its
/// static bytes without building a `String`, or a name built at run time. Names are ReceiptKit's
/// own identifiers (Apple's field names, the output schema's), written without escaping.
package struct JSONKey: ExpressibleByStringLiteral {
    private let literal: StaticString?
    private let built: String?

    package init(stringLiteral value: StaticString) {
        precondition(value.hasPointerRepresentation, "a JSON member name is text")
        literal = value
        built = nil
    }

    /// A name built at run time (e.g. `"\(field)_ms"`).
    package init(_ name: String) {
        literal = nil
        built = name
    }

    /// Calls `body` with the name's UTF-8 bytes.
    func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let literal {
            return literal.withUTF8Buffer(body)
        }
        var built = built ?? ""
        return built.withUTF8(body)
    }

    /// The name as a string, for error reasons.
    var text: String {
        literal.map { "\($0)" } ?? built ?? ""
    }
}
