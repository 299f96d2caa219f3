import Foundation
import ReceiptKit

/// The service at a glance, for the console's overview (`GET /v1/overview`): subscriptions by
/// status and by product now, notifications received per day by type over the last 30 days, the
/// last notifications with their verification result, reconciliation's lag, and the outbox's
/// backlog (webhooks, forwarded notifications, consumption answers).
struct ConsoleOverview {
    /// How many days the chart covers, today included.
    static let days = 30
    /// How many of the last notifications are listed.
    static let recentCount = 20

    let environment: RouteEnvironment

    /// The overview's answer.
    func answer(now: Timestamp) async throws -> Answer {
        Answer(
            asOf: now.iso8601, subscriptions: try await subscriptions(now: now), notifications: try await notifications(now: now),
            reconciliation: try await reconciliation(now: now), deliveries: try await deliveries(now: now))
    }

    /// `{"total", "by_status": [{"status", "count"}], "by_product": [{"product_id", "total",
    /// "by_status"}], "by_app": [{"bundle_id", "environment", "sandbox", "total", "by_status",
    /// "by_product"}]}`.
    ///
    /// Every key with a known state, counted by its state now as `GET /v1/subscriptions/{id}`
    /// evaluates it (``Store/subscriptionCounts(at:)``: the counts the store keeps, and the keys
    /// whose state time may have changed since, evaluated now); `by_app` per app and environment
    /// served or stored, each environment but Production marked `sandbox`.
    private func subscriptions(now: Timestamp) async throws -> Answer.Subscriptions {
        let store = environment.store
        let counts = try await environment.read { try await store.subscriptionCounts(at: now) }
        let configuration = environment.verifier.configuration
        var pairs = Set(counts.map { Pair(bundleId: $0.bundleId, environment: $0.environment) })
        for app in configuration.apps {
            guard let bundleId = app.bundleId else { continue }
            for served in configuration.environments { pairs.insert(Pair(bundleId: bundleId, environment: served.rawValue)) }
        }
        let all = Self.tally(counts)
        return Answer.Subscriptions(
            total: all.total, byStatus: all.byStatus, byProduct: all.byProduct,
            byApp: pairs.sorted().map { pair in
                let tally = Self.tally(counts.filter { $0.bundleId == pair.bundleId && $0.environment == pair.environment })
                return Answer.AppCounts(
                    bundleId: pair.bundleId, environment: pair.environment, sandbox: pair.environment != AppStoreEnvironment.production.rawValue,
                    total: tally.total, byStatus: tally.byStatus, byProduct: tally.byProduct)
            })
    }

    /// An app and environment; Production first among an app's.
    private struct Pair: Hashable, Comparable {
        var bundleId: String
        var environment: String

        static func < (lhs: Pair, rhs: Pair) -> Bool {
            (lhs.bundleId, lhs.rank, lhs.environment) < (rhs.bundleId, rhs.rank, rhs.environment)
        }

        private var rank: Int { environment == AppStoreEnvironment.production.rawValue ? 0 : 1 }
    }

    /// Counts summed by status and by product.
    private static func tally(_ counts: [SubscriptionCount]) -> (total: Int, byStatus: [Answer.StatusCount], byProduct: [Answer.ProductCounts]) {
        var byStatus: [SubscriptionStatus: Int] = [:]
        var byProduct: [String: [SubscriptionStatus: Int]] = [:]
        for count in counts {
            byStatus[count.status, default: 0] += count.count
            byProduct[count.productId ?? "", default: [:]][count.status, default: 0] += count.count
        }
        return (
            byStatus.values.reduce(0, +), statusCounts(byStatus),
            byProduct.sorted { $0.key < $1.key }.map { product, counts in
                Answer.ProductCounts(productId: product, total: counts.values.reduce(0, +), byStatus: statusCounts(counts))
            }
        )
    }

    private static func statusCounts(_ counts: [SubscriptionStatus: Int]) -> [Answer.StatusCount] {
        SubscriptionStatus.allCases.map { Answer.StatusCount(status: $0.rawValue, count: counts[$0] ?? 0) }
    }

    /// `{"since", "days": [{"day", "total", "by_type"}], "recent", "rejected"}`.
    ///
    /// The chart reads the notifications stored per day and type (``Store/notificationDays(from:)``),
    /// counted as each was stored: one row per day and type, whatever the number of notifications.
    private func notifications(now: Timestamp) async throws -> Answer.Notifications {
        let store = environment.store
        let today = CountStatements.day(of: now.millisecondsSince1970)
        let since = today - Int64(Self.days - 1) * CountStatements.millisecondsPerDay
        let stored = try await environment.read { try await store.notificationDays(from: since) }
        var perDay: [Int64: [String: Int]] = [:]
        for row in stored { perDay[row.day, default: [:]][row.type ?? "", default: 0] += row.count }
        return Answer.Notifications(
            since: Timestamp(millisecondsSince1970: since).iso8601,
            days: (0..<Self.days).map { index in
                let day = since + Int64(index) * CountStatements.millisecondsPerDay
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
            let byStatus: [StatusCount]
            let byProduct: [ProductCounts]
            let byApp: [AppCounts]
        }

        /// One app and environment's counts; `sandbox` for every environment but Production.
        struct AppCounts: Encodable {
            let bundleId: String
            let environment: String
            let sandbox: Bool
            let total: Int
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
