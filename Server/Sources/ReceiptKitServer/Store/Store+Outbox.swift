/// The outbox's own operations (``Delivery``, ``DeliveryService``); its rows are written by the
/// transactions that cause them.
extension Store {
    /// Claims up to `limit` rows due at `now` for `owner` until `leaseUntil`
    /// (``OutboxStatements/claim``), reading first whether any is due, so that an idle outbox
    /// costs a read, not a write, per poll.
    func claimDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [Delivery] {
        guard try await backend.first(OutboxStatements.anyDue, ["now": .integer(now)]) != nil else { return [] }
        return try await backend.updating(
            OutboxStatements.claim,
            ["owner": .text(owner), "lease_until": .integer(leaseUntil), "now": .integer(now), "limit": .integer(Int64(limit))]
        ).sorted { $0.id < $1.id }
    }

    /// Records an attempt's outcome, if `owner` still holds the row's lease.
    ///
    /// - Returns: Whether it did.
    func finishDelivery(_ id: Int64, owner: String, outcome: DeliveryOutcome) async throws -> Bool {
        try await !backend.updating(OutboxStatements.finish, OutboxStatements.finishBindings(id, owner: owner, outcome: outcome)).isEmpty
    }

    /// The rows in a state after an id, oldest first.
    func deliveries(state: Delivery.State, after: Int64, limit: Int) async throws -> [Delivery] {
        try await backend.rows(OutboxStatements.list, ["state": .text(state.rawValue), "after": .integer(after), "limit": .integer(Int64(limit))])
    }

    /// The row with this id.
    func delivery(_ id: Int64) async throws -> Delivery? {
        try await backend.first(OutboxStatements.byId, ["id": .integer(id)])
    }

    /// Makes a row that is not pending pending again, due at `now`, given up at `giveUpAt`.
    ///
    /// - Returns: The row, or `nil` when there is no such row or it is pending already.
    func retryDelivery(_ id: Int64, now: Int64, giveUpAt: Int64) async throws -> Delivery? {
        let delivery = try await backend.updating(
            OutboxStatements.retry, ["next_attempt_at": .integer(now), "give_up_at": .integer(giveUpAt), "id": .integer(id)]
        ).first
        if delivery != nil { features.tell(FeedCommit(outboxRows: 1)) }
        return delivery
    }

    /// The pending rows per receiver.
    func outboxBacklog() async throws -> [OutboxBacklog] {
        try await backend.rows(OutboxStatements.pendingByTarget).compactMap { $0 }
    }

    /// The pending rows per receiver, and how many rows ran out of time (counted up to
    /// `failedLimit`), read in one snapshot: a row that runs out of time meanwhile is counted
    /// once.
    func outboxSummary(failedLimit: Int) async throws -> (backlog: [OutboxBacklog], failed: Int) {
        try await backend.read(OutboxSummaryReading(failedLimit: failedLimit))
    }

    /// Removes delivered rows delivered before `before` (at most 1000 a call).
    func pruneDelivered(before: Int64) async throws {
        try await backend.execute(StoreWrite(OutboxStatements.pruneDelivered, ["before": .integer(before)]))
    }
}

/// ``Store/outboxSummary(failedLimit:)``'s two reads.
private struct OutboxSummaryReading: RowSteps, Sendable {
    let failedLimit: Int
    private var phase = Phase.start

    private enum Phase {
        case start, backlog
        case failed([OutboxBacklog])
    }

    init(failedLimit: Int) {
        self.failedLimit = failedLimit
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<(backlog: [OutboxBacklog], failed: Int)> {
        switch phase {
        case .start:
            phase = .backlog
            return .fetch(OutboxStatements.pendingByTarget.fetch())
        case .backlog:
            phase = .failed(try OutboxStatements.pendingByTarget.decode(rows).compactMap { $0 })
            return .fetch(OutboxStatements.countInState.fetch([
                "state": .text(Delivery.State.failed.rawValue), "limit": .integer(Int64(failedLimit)),
            ]))
        case .failed(let backlog):
            return .done((backlog, try OutboxStatements.countInState.decodeFirst(rows) ?? 0))
        }
    }
}
