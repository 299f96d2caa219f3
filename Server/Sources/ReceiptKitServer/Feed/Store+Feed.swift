package import ReceiptKit

/// The feed: its events, and the sweep that writes those time alone causes.
extension Store {
    /// The feed's events with an id greater than `after`, oldest first, at most `limit`; of one
    /// app, of one environment, or of both, when given.
    package func events(after: Int64, limit: Int, bundleId: String? = nil, environment: String? = nil) async throws -> [StoredFeedEvent] {
        guard bundleId != nil || environment != nil else {
            return try await backend.rows(FeedStatements.eventsAfter, ["after": .integer(after), "limit": .integer(Int64(limit))])
        }
        return try await backend.rows(
            FeedStatements.selectedEventsAfter,
            Self.selection(bundleId: bundleId, environment: environment) + ["after": .integer(after), "limit": .integer(Int64(limit))])
    }

    /// The events of the keys linked to a customer, and the customer's own (its named
    /// entitlements'), with an id greater than `after`, oldest first, at most `limit`; of one app,
    /// of one environment, or of both, when given.
    package func events(
        customerId: String, after: Int64, limit: Int, bundleId: String? = nil, environment: String? = nil
    ) async throws -> [StoredFeedEvent] {
        return try await backend.rows(
            FeedStatements.customerEventsAfter,
            Self.selection(bundleId: bundleId, environment: environment) + [
                "customer_id": .text(customerId), "after": .integer(after), "limit": .integer(Int64(limit)),
            ])
    }

    /// The bindings of the `(CAST(:bundle_id AS TEXT) IS NULL OR bundle_id = :bundle_id)` and
    /// `:environment` conditions: `NULL` selects all.
    private static func selection(bundleId: String?, environment: String?) -> Bindings {
        ["bundle_id": .optional(bundleId), "environment": .optional(environment)]
    }

    /// Writes the events time alone caused: each key whose `next_change_at` has passed by `now`
    /// (at most `limit` of them, soonest first) is evaluated at each instant its state may have
    /// changed, up to `now`, in a transaction of its own (``Sweeping``). A key another server's
    /// sweep or an input holds is skipped (PostgreSQL): that one derives it.
    ///
    /// - Returns: How many keys were due, and how many events were written.
    package func sweep(now: Timestamp, limit: Int) async throws -> SweepReport {
        let due = try await backend.rows(FeedStatements.dueKeys, ["now": .integer(now.millisecondsSince1970), "limit": .integer(Int64(limit))])
        var report = SweepReport(due: due.count)
        for key in due {
            let swept = try await backend.write(Sweeping(key: key, now: now, targets: outboxTargets))
            report.swept += swept.swept ? 1 : 0
            report.events += swept.commit.events.count
            features.tell(swept.commit)
        }
        return report
    }
}

extension Sweeping where Derive == Derivation {
    /// One due key (``FeedStatements/claimDueKey``).
    init(key: SubscriptionKey, now: Timestamp, targets: OutboxTargets) {
        claim = FeedStatements.claimDueKey.fetch(LedgerStatements.key(key) + ["now": .integer(now.millisecondsSince1970)])
        decodeClaim = { try FeedStatements.claimDueKey.decodeFirst($0) }
        self.now = now
        derivation = { boundary in
            Derivation(
                keys: [key], at: Timestamp(millisecondsSince1970: boundary), cause: .sweep, recordedAt: now.millisecondsSince1970,
                targets: targets)
        }
        outcome = { ($0.writes, $0.commit, $0.nextChangeAt[key]) }
    }
}
