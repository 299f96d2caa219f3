/// A stored input as read back: its id (which orders inputs as they were stored), kind, record
/// and time of receipt.
public struct StoredInput: Sendable, Hashable {
    /// The input's row id.
    public var id: Int64
    /// The record's kind (`notification`, `transaction`, `renewal_info`, `receipt`).
    public var kind: String
    /// The record, one JSON object as `verify-receipt` prints it.
    public var record: String
    /// When the server received it, in milliseconds since 1970.
    public var receivedAt: Int64

    /// Creates a stored input.
    public init(id: Int64, kind: String, record: String, receivedAt: Int64) {
        self.id = id
        self.kind = kind
        self.record = record
        self.receivedAt = receivedAt
    }
}
