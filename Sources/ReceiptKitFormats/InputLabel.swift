public import ReceiptKit

/// What identifies an input in its output record: its number, and in joinable batches the id the
/// caller gave it (`verify-receipt --with-ids`), so a result can be matched to its source row.
public struct InputLabel: Sendable, Hashable {
    /// The 1-based input number, printed first as `input`; `nil` omits it.
    public var number: Int?
    /// Whether the record carries an `id` member.
    public var hasID: Bool
    /// The caller's id, printed as `id` when ``hasID`` (`null` when `nil`).
    public var id: String?

    /// A label with a number and no id member.
    ///
    /// - Parameter number: The 1-based input number, or `nil`.
    public init(number: Int?) {
        self.number = number
        self.hasID = false
        self.id = nil
    }

    /// A label with a number and an `id` member.
    ///
    /// - Parameters:
    ///   - number: The 1-based input number, or `nil`.
    ///   - id: The caller's id; `nil` prints `"id": null` (an input line that carried none).
    public init(number: Int?, id: String?) {
        self.number = number
        self.hasID = true
        self.id = id
    }

    /// Writes `input` and, when the label has one, `id`: the first members of a record.
    func write(to json: inout JSONWriter) {
        if let number { json.member("input", number) }
        if hasID { json.member("id", id) }
    }
}

extension VerificationRecord {
    /// The record as JSON, labelled with its input number and, for joinable batches, an id.
    ///
    /// - Parameters:
    ///   - label: What identifies the input.
    ///   - pretty: Whether to indent.
    public func json(label: InputLabel, pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        write(to: &writer) { label.write(to: &$0) }
        return writer.text
    }
}

extension VerificationOutcome {
    /// The outcome as JSON, labelled with its input number and, for joinable batches, an id.
    ///
    /// - Parameters:
    ///   - label: What identifies the input.
    ///   - pretty: Whether to indent.
    public func json(label: InputLabel, pretty: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2048)
        appendJSON(label: label, pretty: pretty, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the bytes of ``json(label:pretty:)`` to `buffer`, without a final newline and
    /// without building a string: the form to use when writing many records.
    ///
    /// - Parameters:
    ///   - label: What identifies the input.
    ///   - pretty: Whether to indent.
    ///   - buffer: The bytes to append to.
    public func appendJSON(label: InputLabel, pretty: Bool = false, to buffer: inout [UInt8]) {
        appendJSON(pretty: pretty, to: &buffer) { label.write(to: &$0) }
    }
}
