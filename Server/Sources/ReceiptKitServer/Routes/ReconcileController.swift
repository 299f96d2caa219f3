import Foundation
import Hummingbird
import ReceiptKit

/// The routes that ask Apple (the App Store Server API configured; 501 `reconciliation_off`
/// otherwise):
///
/// - `POST /v1/subscriptions/{original_transaction_id}/sync`: the key's history from the
///   revision token stored for it (only what is new) and its statuses, stored; answers the key's
///   state now as `GET /v1/subscriptions/{id}` does; 404 `transaction_not_found` when Apple knows
///   no such transaction.
/// - `POST /v1/customers/{customer_id}/sync`: the same for each key linked to the customer;
///   answers as `GET /v1/customers/{id}/entitlements`; 404 `not_found` when nothing is linked.
/// - `POST /v1/reconcile[?since=ISO8601]`: one window of Get Notification History now (see
///   ``Reconciler``); answers `{"start", "end", "pages", "notifications", "recovered",
///   "rejected"}`, or 409 `reconcile_running` with `Retry-After` while another server runs one.
struct ReconcileController {
    let environment: RouteEnvironment
    let reconciler: Reconciler?

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.post, "subscriptions/{original_transaction_id}/sync", scope: .write) { _, context in
            guard let apple = environment.apple else { throw AppleSync.notConfigured }
            let id = try RouteEnvironment.pathParameter("original_transaction_id", in: context)
            try AppleSync.checkTransactionId(id, name: "original_transaction_id")
            let now = environment.now
            _ = try await apple.sync(originalTransactionId: id, customerId: nil, receivedAt: now)
            let store = environment.store
            guard let state = try await environment.read({ try await store.states(originalTransactionId: id, at: now) }).first else {
                throw APIError(.notFound, "transaction_not_found", "Apple lists no subscription with original transaction id \(id)")
            }
            return Response.json(state.json())
        }
        group.route(.post, "customers/{customer_id}/sync", scope: .write) { _, context in
            guard let apple = environment.apple else { throw AppleSync.notConfigured }
            let customerId = try RouteEnvironment.pathParameter("customer_id", in: context)
            let store = environment.store
            let keys = try await environment.read { try await store.keys(customerId: customerId) }
            guard !keys.isEmpty else {
                throw APIError(.notFound, "not_found", "no subscription is linked to customer \(customerId): report a purchase first")
            }
            let now = environment.now
            var synced: Set<String> = []
            for key in keys where !synced.contains(key.originalTransactionId) {
                let stored = try await apple.sync(originalTransactionId: key.originalTransactionId, customerId: customerId, receivedAt: now)
                // One history answers for every key of the same Apple account.
                synced.formUnion(stored.keys.map(\.originalTransactionId))
                synced.insert(key.originalTransactionId)
            }
            return try Response.json(try await environment.entitlements(customerId: customerId, at: now))
        }
        group.route(.post, "reconcile", scope: .admin) { request, _ in
            guard let reconciler else { throw AppleSync.notConfigured }
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
                throw APIError(
                    .conflict, "reconcile_running", "another server is reconciling now; retry when it is done",
                    retryAfterSeconds: 30)
            case .ran(let report):
                return try Response.json(ReconcileAnswer(
                    start: report.start.iso8601, end: report.end.iso8601, pages: report.pages, notifications: report.notifications,
                    recovered: report.recovered, rejected: report.rejected))
            }
        }
    }
}

/// What one reconcile run read and recovered: its window, the pages of notification history, the
/// notifications in them, those stored for the first time, and those that did not verify.
struct ReconcileAnswer: Encodable {
    let start: String
    let end: String
    let pages: Int
    let notifications: Int
    let recovered: Int
    let rejected: Int
}
