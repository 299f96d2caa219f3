/// The strict JSON that ReceiptKit requires of signed payloads, for other JSON a service reads —
/// request bodies, say — so that no text has two meanings: one JSON object, each member once,
/// valid UTF-8, no byte-order mark, no NUL in a string, no integer beyond 64 bits.
///
/// Foundation's `JSONSerialization` and `JSONDecoder` keep one of two duplicate members without a
/// word; check a text here first, then decode it with them.
public enum StrictJSON {
    /// Checks that `bytes` are one strict JSON object.
    ///
    /// - Parameters:
    ///   - bytes: The UTF-8 JSON text.
    ///   - what: What the text is, for the reason (e.g. "the request body").
    /// - Throws: ``ReceiptKitError`` with code ``ReceiptKitError/Code/unrecognizedInput`` and a
    ///   reason naming the fault — a duplicate member by its name (`duplicate object key near
    ///   '"customer_id"'`), the offset of invalid JSON, or a value that is not an object.
    public static func checkObject(_ bytes: [UInt8], what: String) throws {
        _ = try JSONDocument(parsingObject: bytes, code: .unrecognizedInput, what: what, liftingLongStrings: false)
    }
}
