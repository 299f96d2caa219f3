import Foundation
import Hummingbird
import ReceiptKit

/// The routes that ask Apple (the App Store Server API configured; 409 `reconciliation_off`
/// otherwise):
///
/// - `POST /v1/subscriptions/{original_transaction_id}/sync[?bundle_id=…&environment=…]`: the
///   key's history from the revision token stored for it (only what is new) and its statuses,
///   asked of its app and environment, stored; answers the key's state now as
///   `GET /v1/subscriptions/{id}` does. A key not stored yet is asked of the app named (or the
///   only one) in the environment named, or in Production and then Sandbox. 404
///   `transaction_not_found` when Apple knows no such transaction; 409 `ambiguous_subscription`
///   when the id names several stored keys and the query selects none.
/// - `POST /v1/customers/{customer_id}/sync`: the same for each key linked to the customer;
///   answers as `GET /v1/customers/{id}/entitlements`; 404 `not_found` when nothing is linked.
/// - `POST /v1/reconcile[?since=ISO8601]`: one window of Get Notification History now for every
///   app and environment (see ``Reconciler``); answers the totals
///   `{"start", "end", "pages", "notifications", "recovered", "rejected"}` and `"pairs"`, each
///   pair's own (or its `error`), or 409 `reconcile_running` with `Retry-After` while another
///   server runs one.
struct ReconcileController {
    let environment: RouteEnvironment
    let reconciler: Reconciler?

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.post, "subscriptions/{original_transaction_id}/sync", scope: .write) { request, context in
            guard let apple = environment.apple else { throw AppleFailure.notConfigured }
            let id = try RouteEnvironment.pathParameter("original_transaction_id", in: context)
            try AppleSync.checkTransactionId(id, name: "original_transaction_id")
            let filter = try KeyFilter(request)
            let now = environment.now
            let store = environment.store
            let stored = try await environment.read { try await store.keys(originalTransactionId: id) }.filter(filter.admits)
            let key: SubscriptionKey
            if let only = try KeyFilter.one(of: stored, id: id) {
                guard let sync = apple.sync(bundleId: only.bundleId, environment: only.environment) else {
                    throw APIError.invalidRequest("the server does not call the App Store Server API for \(only.bundleId) in \(only.environment)")
                }
                _ = try await sync.sync(originalTransactionId: id, customerId: nil, receivedAt: now)
                key = only
            } else {
                let syncs = try apple.syncs(bundleId: apple.bundleId(filter.bundleId), environment: filter.environment)
                let (sync, fetched) = try await apple.fetch(transactionId: id, from: syncs)
                let recorded = try await sync.store(fetched, customerId: nil, receivedAt: now)
                try await sync.remember(fetched, keys: recorded.keys, at: now)
                key = SubscriptionKey(bundleId: sync.bundleId, environment: sync.environment.rawValue, originalTransactionId: id)
            }
            guard let state = try await environment.read({ try await store.state(of: key, at: now) }) else {
                throw APIError(.notFound, "transaction_not_found", "Apple lists no subscription with original transaction id \(id)")
            }
            return Response.json(state.json())
        }
        group.route(.post, "customers/{customer_id}/sync", scope: .write) { _, context in
            guard let apple = environment.apple else { throw AppleFailure.notConfigured }
            let customerId = try RouteEnvironment.customerId(in: context)
            let now = environment.now
            guard try await apple.sync(customerId: customerId, store: environment.store, receivedAt: now) else {
                throw APIError(.notFound, "not_found", "no subscription is linked to customer \(customerId): report a purchase first")
            }
            return try Response.json(try await environment.entitlements(customerId: customerId, at: now))
        }
        group.route(.post, "reconcile", scope: .admin) { request, _ in
            guard let reconciler else { throw AppleFailure.notConfigured }
            var since: Timestamp?
            if let text = request.uri.queryParameters.get("since") {
                guard let instant = Timestamp(rfc3339: String(text)) else {
                    throw APIError.invalidRequest("since is \"\(text)\"; expected an ISO 8601 instant such as 2026-05-01T00:00:00Z")
                }
                since = instant
            }
            // A run outlives its request: cut short by the request's timeout, it would leave the
            // cursor behind and read the same window again next time.
            let now = environment.now
            let window = since
            switch try await abandoningOnCancel({ try await reconciler.run(since: window, now: now) }) {
            case .busy:
                throw ReconcileConflict.running
            case .ran(let outcomes):
                return try Response.json(ReconcileAnswer(outcomes))
            }
        }
    }
}

/// What one reconcile run read and recovered: its window (the earliest start and the end), the
/// pages of notification history, the notifications in them, those stored for the first time, and
/// those that did not verify, over every app and environment; and each pair's own figures, or its
/// error.
struct ReconcileAnswer: Encodable {
    let start: String
    let end: String
    let pages: Int
    let notifications: Int
    let recovered: Int
    let rejected: Int
    let pairs: [Pair]

    struct Pair: Encodable {
        let bundleId: String
        let environment: String
        let start: String?
        let end: String?
        let pages: Int?
        let notifications: Int?
        let recovered: Int?
        let rejected: Int?
        let error: ErrorAnswer.Body?
    }

    init(_ outcomes: [Reconciler.PairOutcome]) {
        let reports = outcomes.compactMap { if case .ran(let report) = $0 { report } else { nil } }
        start = (reports.map(\.start).min() ?? Timestamp(millisecondsSince1970: 0)).iso8601
        end = (reports.map(\.end).max() ?? Timestamp(millisecondsSince1970: 0)).iso8601
        pages = reports.reduce(0) { $0 + $1.pages }
        notifications = reports.reduce(0) { $0 + $1.notifications }
        recovered = reports.reduce(0) { $0 + $1.recovered }
        rejected = reports.reduce(0) { $0 + $1.rejected }
        pairs = outcomes.map { outcome in
            switch outcome {
            case .ran(let report):
                return Pair(
                    bundleId: report.pair.bundleId, environment: report.pair.environment.rawValue, start: report.start.iso8601,
                    end: report.end.iso8601, pages: report.pages, notifications: report.notifications, recovered: report.recovered,
                    rejected: report.rejected, error: nil)
            case .failed(let pair, let error):
                let answer = APIError.answering(error) ?? APIError.databaseUnavailable
                return Pair(
                    bundleId: pair.bundleId, environment: pair.environment.rawValue, start: nil, end: nil, pages: nil,
                    notifications: nil, recovered: nil, rejected: nil, error: .init(code: answer.code, message: answer.message))
            }
        }
    }
}
