import Foundation
import ReceiptKit

/// The service at a glance, for the console's overview (`GET /v1/overview`): subscriptions by
/// status and by product now, notifications received per day by type over the last 30 days, the
/// last notifications with their verification result, reconciliation's lag, and the outbox's
/// backlog (webhooks, forwarded notifications, consumption answers).
struct ConsoleOverview {
    /// The most subscriptions whose state is evaluated for the counts.
    static let subscriptionLimit = 5_000
    /// The most notifications read for the chart.
    static let notificationLimit = 100_000
    /// How many days the chart covers, today included.
    static let days = 30
    /// How many of the last notifications are listed.
    static let recentCount = 20
    /// How far out of order two events' receipt times may be against their ids (two replicas'
    /// clocks, a request that waited): the walk down the events goes this far past the chart's
    /// start.
    static let disorder: Int64 = 3_600_000

    let environment: RouteEnvironment

    /// The overview's JSON.
    func json(now: Timestamp) async throws -> String {
        var json = JSONObjectText()
        json.member("as_of", now.iso8601)
        json.member("subscriptions", json: try await subscriptions(now: now))
        json.member("notifications", json: try await notifications(now: now))
        json.member("reconciliation", json: try await reconciliation(now: now))
        json.member("deliveries", json: try await deliveries(now: now))
        return json.text
    }

    /// `{"total", "counted", "by_status": [{"status", "count"}], "by_product": [{"product_id",
    /// "total", "by_status"}]}`.
    ///
    /// Each key's state is evaluated now as `GET /v1/subscriptions/{id}` evaluates it, one key
    /// after another, for the first ``subscriptionLimit`` keys — exact at this instant, where the
    /// feed's stored per-key status (`subscriptions.derived_status`) lags time by up to a sweep.
    private func subscriptions(now: Timestamp) async throws -> String {
        let store = environment.store
        let limit = Self.subscriptionLimit
        let (keys, total) = try await environment.read { try await store.subscriptionKeys(limit: limit) }
        var byStatus: [SubscriptionStatus: Int] = [:]
        var byProduct: [String: [SubscriptionStatus: Int]] = [:]
        var counted = 0
        for key in keys {
            guard let state = try await environment.read({ try await store.state(of: key, at: now) }) else { continue }
            counted += 1
            byStatus[state.status, default: 0] += 1
            byProduct[state.productId ?? "", default: [:]][state.status, default: 0] += 1
        }
        var json = JSONObjectText()
        json.member("total", total)
        json.member("counted", counted)
        json.member("complete", keys.count == total)
        json.member("by_status", json: Self.statusCounts(byStatus))
        json.member("by_product", jsonArray: byProduct.sorted { $0.key < $1.key }.map { product, counts in
            var object = JSONObjectText()
            object.member("product_id", product)
            object.member("total", counts.values.reduce(0, +))
            object.member("by_status", json: Self.statusCounts(counts))
            return object.text
        })
        return json.text
    }

    private static func statusCounts(_ counts: [SubscriptionStatus: Int]) -> String {
        "[" + SubscriptionStatus.allCases.map { status in
            var object = JSONObjectText()
            object.member("status", status.rawValue)
            object.member("count", counts[status] ?? 0)
            return object.text
        }.joined(separator: ",") + "]"
    }

    /// `{"since", "complete", "counted_from", "days": [{"day", "total", "by_type"}], "recent",
    /// "rejected"}`.
    ///
    /// The chart's notifications are read newest first down the events' primary key, in pages,
    /// until one received ``disorder`` before the chart's first day (or ``notificationLimit`` of
    /// them: `complete` is then false and `counted_from` says from when the days are whole).
    private func notifications(now: Timestamp) async throws -> String {
        let store = environment.store
        let today = now.millisecondsSince1970 - Self.positiveModulo(now.millisecondsSince1970, Self.day)
        let since = today - Int64(Self.days - 1) * Self.day
        var perDay: [Int64: [String: Int]] = [:]
        var read = 0
        var oldest: Int64?
        var before = Int64.max
        var complete = false
        while read < Self.notificationLimit {
            let (cursor, pageSize) = (before, min(5_000, Self.notificationLimit - read))
            let page = try await environment.read { try await store.notificationTypes(before: cursor, limit: pageSize) }
            for sighting in page where sighting.receivedAt >= since {
                let day = sighting.receivedAt - Self.positiveModulo(sighting.receivedAt, Self.day)
                perDay[day, default: [:]][sighting.type ?? "", default: 0] += 1
            }
            read += page.count
            if let last = page.last {
                before = last.id
                oldest = min(oldest ?? last.receivedAt, last.receivedAt)
            }
            if page.count < pageSize || (oldest ?? .max) < since - Self.disorder {
                complete = true
                break
            }
        }
        var json = JSONObjectText()
        json.member("since", Timestamp(millisecondsSince1970: since).iso8601)
        json.member("complete", complete)
        json.member("counted_from", complete ? nil : oldest.map { Timestamp(millisecondsSince1970: $0).iso8601 })
        json.member("days", jsonArray: (0..<Self.days).map { index in
            let day = since + Int64(index) * Self.day
            let types = perDay[day] ?? [:]
            var object = JSONObjectText()
            object.member("day", String(Timestamp(millisecondsSince1970: day).iso8601.prefix(10)))
            object.member("total", types.values.reduce(0, +))
            object.member("by_type", jsonArray: types.sorted { $0.key < $1.key }.map { type, count in
                var pair = JSONObjectText()
                pair.member("type", type)
                pair.member("count", count)
                return pair.text
            })
            return object.text
        })
        json.member("recent", jsonArray: try await recent())
        json.member("rejected", json: rejected())
        return json.text
    }

    /// The last notifications stored (verified) and refused by this process, newest first.
    private func recent() async throws -> [String] {
        let store = environment.store
        let count = Self.recentCount
        let stored = try await environment.read { try await store.latestNotifications(limit: count) }
        var items: [(at: Int64, json: String)] = []
        for identified in stored {
            let record = try StoredRecord(identified)
            var object = JSONObjectText()
            object.member("received_at", Timestamp(millisecondsSince1970: identified.receivedAt).iso8601)
            object.member("result", "verified")
            object.null("message")
            object.member("type", record.notification?.type)
            object.member("subtype", record.notification?.subtype)
            object.member("notification_uuid", record.notification?.uuid)
            let transaction = record.transactions?.first
            object.member(
                "original_transaction_id",
                transaction?.originalTransactionId ?? transaction?.transactionId ?? record.renewalInfo?.originalTransactionId)
            object.member("product_id", transaction?.productId ?? record.renewalInfo?.productId)
            items.append((identified.receivedAt, object.text))
        }
        for rejection in environment.rejections.snapshot.recent.prefix(count) {
            var object = JSONObjectText()
            object.member("received_at", rejection.at.iso8601)
            object.member("result", rejection.code)
            object.member("message", rejection.message)
            items.append((rejection.at.millisecondsSince1970, object.text))
        }
        return items.sorted { $0.at > $1.at }.prefix(count).map(\.json)
    }

    /// `{"since", "total", "by_code": [{"code", "count"}]}`: this process's refusals.
    private func rejected() -> String {
        let summary = environment.rejections.snapshot
        var json = JSONObjectText()
        json.member("since", environment.rejections.since.iso8601)
        json.member("total", summary.total)
        json.member("by_code", jsonArray: summary.byCode.sorted { $0.key < $1.key }.map { code, count in
            var object = JSONObjectText()
            object.member("code", code)
            object.member("count", count)
            return object.text
        })
        return json.text
    }

    /// `{"enabled", "cursor", "lag_seconds"}`: whether the server reconciles with Apple, the
    /// instant up to which Get Notification History was read, and how far behind now that is.
    private func reconciliation(now: Timestamp) async throws -> String {
        var json = JSONObjectText()
        json.member("enabled", environment.apple != nil)
        let store = environment.store
        let cursor = environment.apple == nil ? nil : try await environment.read { try await store.reconcileCursor() }
        json.member("cursor", cursor.map { Timestamp(millisecondsSince1970: $0).iso8601 })
        json.member("lag_seconds", cursor.map { max(0, now.millisecondsSince1970 - $0) / 1000 })
        return json.text
    }

    /// The most dead letters counted (the console links to the list beyond).
    static let failedLimit = 1_000

    /// `{"destinations": [{"kind", "target", "pending", "oldest_pending_seconds"}], "failed",
    /// "failed_complete"}`: what waits in the outbox per destination and how long its oldest has
    /// waited, and how many deliveries ran out of time (dead letters, up to ``failedLimit``).
    private func deliveries(now: Timestamp) async throws -> String {
        let outbox = environment.store
        let limit = Self.failedLimit
        let (backlog, failed) = try await environment.read { try await outbox.outboxSummary(failedLimit: limit) }
        var json = JSONObjectText()
        json.member("destinations", jsonArray: backlog.sorted { ($0.kind.rawValue, $0.target) < ($1.kind.rawValue, $1.target) }.map { item in
            var object = JSONObjectText()
            object.member("kind", item.kind.rawValue)
            object.member("target", Self.withoutCredentials(item.target))
            object.member("pending", item.pending)
            object.member("oldest_pending_seconds", Int(max(0, now.millisecondsSince1970 - item.oldestCreatedAt) / 1000))
            return object.text
        })
        json.member("failed", failed)
        json.member("failed_complete", failed < limit)
        return json.text
    }

    /// A destination as the console shows it: a URL without the user and password it may carry.
    static func withoutCredentials(_ target: String) -> String {
        guard var components = URLComponents(string: target), components.user != nil || components.password != nil else { return target }
        components.user = nil
        components.password = nil
        return components.string ?? target
    }

    private static let day: Int64 = 86_400_000

    private static func positiveModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
        let remainder = value % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
