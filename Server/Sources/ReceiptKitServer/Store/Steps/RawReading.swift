/// Reading an input's raw bytes back: its stored form, then each JWS header it refers to, then the
/// bytes as received (``RawCompaction/raw(stored:encoding:segments:)``); `nil` when no input has
/// the dedup key.
struct RawReading: RowSteps, Sendable {
    let dedupKey: String
    private var phase = Phase.start
    private var stored: [UInt8] = []
    private var encoding: Int16 = RawEncoding.verbatim.rawValue
    /// The header ids still to read.
    private var pending: [Int64] = []
    private var segments: [Int64: [UInt8]] = [:]

    private enum Phase {
        case start, input
        case header(Int64)
    }

    init(dedupKey: String) {
        self.dedupKey = dedupKey
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[UInt8]?> {
        switch phase {
        case .start:
            phase = .input
            return .fetch(InputStatements.raw.fetch(["dedup_key": .text(dedupKey)]))
        case .input:
            guard let row = try InputStatements.raw.decodeFirst(rows) else { return .done(nil) }
            stored = row.stored
            encoding = Int16(truncatingIfNeeded: row.encoding)
            pending = try RawCompaction.references(stored: stored, encoding: encoding).sorted()
        case .header(let id):
            // A header that is not there leaves its reference unresolved: `raw` throws.
            if let segment = try InputStatements.header.decodeFirst(rows) { segments[id] = Array(segment.utf8) }
        }
        if let id = pending.popLast() {
            phase = .header(id)
            return .fetch(InputStatements.header.fetch(["id": .integer(id)]))
        }
        let segments = self.segments
        return .done(try RawCompaction.raw(stored: stored, encoding: encoding) { _ in segments })
    }
}
