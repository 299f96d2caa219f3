/// Recording an answer to a consumption request with its outbox row, in one transaction: the
/// backend's (recorded whatever was recorded before: the latest answer is sent), or the default's
/// (recorded only while nobody answered, so that of two servers only one answers).
struct ConsumptionAnswering: RowSteps, Sendable {
    enum Source: String, Sendable {
        case backend
        case `default`
    }

    let source: Source
    let notificationUUID: String
    /// Apple's body, as recorded and sent.
    let answer: [UInt8]
    /// The outbox row that sends it.
    let row: OutboxRow
    private var phase = Phase.start

    private enum Phase {
        case start, recorded, queued
    }

    init(source: Source, notificationUUID: String, answer: [UInt8], row: OutboxRow) {
        self.source = source
        self.notificationUUID = notificationUUID
        self.answer = answer
        self.row = row
    }

    /// The outbox row written, or `nil` when the default found the request answered.
    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Delivery?> {
        switch phase {
        case .start:
            phase = .recorded
            let statement = source == .backend ? ConsumptionStatements.answered : ConsumptionStatements.defaultAnswered
            return .fetch(statement.fetch([
                "answered_at": .integer(row.createdAt), "answer_source": .text(source.rawValue),
                "answer": .text(String(decoding: answer, as: UTF8.self)), "notification_uuid": .text(notificationUUID),
            ]))
        case .recorded:
            if source == .default, rows.isEmpty { return .done(nil) }
            phase = .queued
            return .fetch(OutboxStatements.insertReturning.fetch(OutboxStatements.bindings(row)))
        case .queued:
            return .done(try OutboxStatements.insertReturning.decodeFirst(rows))
        }
    }
}
