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

    /// The overview's answer.
    func answer(now: Timestamp) async throws -> Answer {
        Answer(
            asOf: now.iso8601, subscriptions: try await subscriptions(now: now), notifications: try await notifications(now: now),
            reconciliation: try await reconciliation(now: now), deliveries: try await deliveries(now: now))
    }

    /// `{"total", "counted", "by_status": [{"status", "count"}], "by_product": [{"product_id",
    /// "total", "by_status"}]}`.
    ///
    /// Each key's state is evaluated now as `GET /v1/subscriptions/{id}` evaluates it, one key
    /// after another, for the first ``subscriptionLimit`` keys — exact at this instant, where the
    /// feed's stored per-key status (`subscriptions.derived_status`) lags time by up to a sweep.
    private func subscriptions(now: Timestamp) async throws -> Answer.Subscriptions {
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
        return Answer.Subscriptions(
            total: total, counted: counted, complete: keys.count == total, byStatus: Self.statusCounts(byStatus),
            byProduct: byProduct.sorted { $0.key < $1.key }.map { product, counts in
                Answer.ProductCounts(productId: product, total: counts.values.reduce(0, +), byStatus: Self.statusCounts(counts))
            })
    }

    private static func statusCounts(_ counts: [SubscriptionStatus: Int]) -> [Answer.StatusCount] {
        SubscriptionStatus.allCases.map { Answer.StatusCount(status: $0.rawValue, count: counts[$0] ?? 0) }
    }

    /// `{"since", "complete", "counted_from", "days": [{"day", "total", "by_type"}], "recent",
    /// "rejected"}`.
    ///
    /// The chart's notifications are read newest first down the events' primary key, in pages,
    /// until one received ``disorder`` before the chart's first day (or ``notificationLimit`` of
    /// them: `complete` is then false and `counted_from` says from when the days are whole).
    private func notifications(now: Timestamp) async throws -> Answer.Notifications {
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
        return Answer.Notifications(
            since: Timestamp(millisecondsSince1970: since).iso8601, complete: complete,
            countedFrom: complete ? nil : oldest.map { Timestamp(millisecondsSince1970: $0).iso8601 },
            days: (0..<Self.days).map { index in
                let day = since + Int64(index) * Self.day
                let types = perDay[day] ?? [:]
                return Answer.Day(
                    day: String(Timestamp(millisecondsSince1970: day).iso8601.prefix(10)), total: types.values.reduce(0, +),
                    byType: types.sorted { $0.key < $1.key }.map { Answer.TypeCount(type: $0.key, count: $0.value) })
            },
            recent: try await recent(), rejected: rejected())
    }

    /// The last notifications stored (verified) and refused by this process, newest first.
    private func recent() async throws -> [Answer.Recent] {
        let store = environment.store
        let count = Self.recentCount
        let stored = try await environment.read { try await store.latestNotifications(limit: count) }
        var items: [(at: Int64, item: Answer.Recent)] = []
        for input in stored {
            let record = try StoredRecord(input)
            let transaction = record.transactions?.first
            items.append((input.receivedAt, Answer.Recent(
                receivedAt: Timestamp(millisecondsSince1970: input.receivedAt).iso8601, result: "verified", message: nil,
                stored: Answer.Recent.Stored(
                    type: record.notification?.type, subtype: record.notification?.subtype, notificationUUID: record.notification?.uuid,
                    originalTransactionId: transaction?.originalTransactionId ?? transaction?.transactionId
                        ?? record.renewalInfo?.originalTransactionId,
                    productId: transaction?.productId ?? record.renewalInfo?.productId))))
        }
        for rejection in environment.rejections.snapshot.recent.prefix(count) {
            items.append((rejection.at.millisecondsSince1970, Answer.Recent(
                receivedAt: rejection.at.iso8601, result: rejection.code, message: rejection.message, stored: nil)))
        }
        return items.sorted { $0.at > $1.at }.prefix(count).map(\.item)
    }

    /// `{"since", "total", "by_code": [{"code", "count"}]}`: this process's refusals.
    private func rejected() -> Answer.Rejected {
        let summary = environment.rejections.snapshot
        return Answer.Rejected(
            since: environment.rejections.since.iso8601, total: summary.total,
            byCode: summary.byCode.sorted { $0.key < $1.key }.map { Answer.CodeCount(code: $0.key, count: $0.value) })
    }

    /// `{"enabled", "cursor", "lag_seconds", "pairs"}`: whether the server reconciles with Apple;
    /// for each app and environment it calls Apple for, the instant up to which Get Notification
    /// History was read and how far behind now that is; at the top, the cursor furthest behind.
    private func reconciliation(now: Timestamp) async throws -> Answer.Reconciliation {
        guard let apple = environment.apple else { return Answer.Reconciliation(enabled: false, cursor: nil, lagSeconds: nil, pairs: []) }
        let store = environment.store
        let stored = try await environment.read { try await store.reconcileCursors() }
        let pairs = apple.pairs.map { pair in
            let position = stored.first { $0.bundleId == pair.bundleId && $0.environment == pair.environment.rawValue }?.position
            return Answer.Cursor(
                bundleId: pair.bundleId, environment: pair.environment.rawValue,
                cursor: position.map { Timestamp(millisecondsSince1970: $0).iso8601 },
                lagSeconds: position.map { max(0, now.millisecondsSince1970 - $0) / 1000 })
        }
        let behind = pairs.max { ($0.lagSeconds ?? .max) < ($1.lagSeconds ?? .max) }
        return Answer.Reconciliation(enabled: true, cursor: behind?.cursor, lagSeconds: behind?.lagSeconds, pairs: pairs)
    }

    /// The most dead letters counted (the console links to the list beyond).
    static let failedLimit = 1_000

    /// `{"destinations": [{"kind", "target", "pending", "oldest_pending_seconds"}], "failed",
    /// "failed_complete"}`: what waits in the outbox per destination and how long its oldest has
    /// waited, and how many deliveries ran out of time (dead letters, up to ``failedLimit``).
    private func deliveries(now: Timestamp) async throws -> Answer.Deliveries {
        let outbox = environment.store
        let limit = Self.failedLimit
        let (backlog, failed) = try await environment.read { try await outbox.outboxSummary(failedLimit: limit) }
        return Answer.Deliveries(
            destinations: backlog.sorted { ($0.kind.rawValue, $0.target) < ($1.kind.rawValue, $1.target) }.map { item in
                Answer.Destination(
                    kind: item.kind.rawValue, target: Self.withoutCredentials(item.target), pending: item.pending,
                    oldestPendingSeconds: Int(max(0, now.millisecondsSince1970 - item.oldestCreatedAt) / 1000))
            },
            failed: failed, failedComplete: failed < limit)
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

extension ConsoleOverview {
    /// `GET /v1/overview`'s answer.
    struct Answer: Encodable {
        let asOf: String
        let subscriptions: Subscriptions
        let notifications: Notifications
        let reconciliation: Reconciliation
        let deliveries: Deliveries

        struct Subscriptions: Encodable {
            let total: Int
            let counted: Int
            let complete: Bool
            let byStatus: [StatusCount]
            let byProduct: [ProductCounts]
        }

        struct StatusCount: Encodable {
            let status: String
            let count: Int
        }

        struct ProductCounts: Encodable {
            let productId: String
            let total: Int
            let byStatus: [StatusCount]
        }

        struct Notifications: Encodable {
            let since: String
            let complete: Bool
            let countedFrom: String?
            let days: [Day]
            let recent: [Recent]
            let rejected: Rejected
        }

        struct Day: Encodable {
            let day: String
            let total: Int
            let byType: [TypeCount]
        }

        struct TypeCount: Encodable {
            let type: String
            let count: Int
        }

        /// A notification received lately: verified and stored (with what it is of), or refused
        /// (with the reason).
        struct Recent: Encodable {
            let receivedAt: String
            let result: String
            let message: String?
            /// What a stored notification is of; `nil` for a refused one, whose answer has none
            /// of these members.
            let stored: Stored?

            struct Stored: Encodable {
                let type: String?
                let subtype: String?
                let notificationUUID: String?
                let originalTransactionId: String?
                let productId: String?

                private enum CodingKeys: String, CodingKey {
                    case type, subtype
                    case notificationUUID = "notification_uuid"
                    case originalTransactionId = "original_transaction_id"
                    case productId = "product_id"
                }
            }

            private enum CodingKeys: String, CodingKey {
                case result, message
                case receivedAt = "received_at"
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(receivedAt, forKey: .receivedAt)
                try container.encode(result, forKey: .result)
                try container.encodeIfPresent(message, forKey: .message)
                try stored?.encode(to: encoder)
            }
        }

        struct Rejected: Encodable {
            let since: String
            let total: Int
            let byCode: [CodeCount]
        }

        struct CodeCount: Encodable {
            let code: String
            let count: Int
        }

        struct Reconciliation: Encodable {
            let enabled: Bool
            let cursor: String?
            let lagSeconds: Int64?
            let pairs: [Cursor]
        }

        /// One app and environment's reconcile cursor.
        struct Cursor: Encodable {
            let bundleId: String
            let environment: String
            let cursor: String?
            let lagSeconds: Int64?
        }

        struct Deliveries: Encodable {
            let destinations: [Destination]
            let failed: Int
            let failedComplete: Bool
        }

        struct Destination: Encodable {
            let kind: String
            let target: String
            let pending: Int
            let oldestPendingSeconds: Int
        }
    }
}
