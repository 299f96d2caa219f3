import ReceiptKit

/// A Get Retention Message request written to the feed in one transaction: the customers linked to
/// its key read, its event's id drawn from the feed's counter (``FeedStatements/drawIds``, last,
/// as ``Derivation`` draws them, so that ids follow commit order), then the event and its webhook
/// row (``OutboxTargets``) written. The request changes no state: nothing else is written.
struct RetentionRecording: RowSteps, Sendable {
    /// What the transaction wrote: the event's id, and what to tell the server after the commit.
    struct Result: Sendable {
        var eventId: Int64 = 0
        var commit = FeedCommit()
    }

    private var event: FeedEvent
    let targets: OutboxTargets
    /// When the server wrote it.
    let recordedAt: Int64
    private var phase = Phase.start

    private enum Phase {
        case start, customers, ids, written(Result)
    }

    /// - Parameters:
    ///   - event: The `retention.requested` event, its customers read here.
    ///   - targets: Where the feed's events are sent.
    ///   - recordedAt: When the server wrote it.
    init(_ event: FeedEvent, targets: OutboxTargets, recordedAt: Int64) {
        self.event = event
        self.targets = targets
        self.recordedAt = recordedAt
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        switch phase {
        case .start:
            phase = .customers
            return .fetch(LedgerStatements.customersOfKey.fetch(LedgerStatements.key(event.key)))
        case .customers:
            event.customerIds = try LedgerStatements.customersOfKey.decode(rows).sorted()
            phase = .ids
            return .fetch(FeedStatements.drawIds.fetch(["count": .integer(1)]))
        case .ids:
            guard let id = try FeedStatements.drawIds.decodeFirst(rows) else { throw StoreError.damaged("feed_counter has no row") }
            let json = try event.json(id: id)
            var result = Result(eventId: id)
            var writes = [event.write(id: id, json: json, recordedAt: recordedAt)]
            result.commit.events.append((event.type.rawValue, event.key.bundleId, event.key.environment))
            if let row = targets.webhookRow(eventId: id, json: json, key: event.key, at: recordedAt) {
                writes.append(OutboxStatements.write(row))
                result.commit.outboxRows += 1
            }
            phase = .written(result)
            return .write(writes)
        case .written(let result):
            return .done(result)
        }
    }
}
