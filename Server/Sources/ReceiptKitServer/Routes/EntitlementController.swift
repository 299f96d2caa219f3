import Foundation
import Hummingbird
import ReceiptKit

/// The read side, from stored state only (no verification):
///
/// Path parameters are percent-decoded once (``RouteEnvironment/pathParameter(_:in:)``).
///
/// - `GET /v1/customers/{customer_id}/entitlements[?as_of=ISO8601][&bundle_id=…][&environment=…]`:
///   `{"customer_id", "as_of", "entitled", "subscriptions": [state, …]}`, each state exactly as
///   `verify-receipt --state` writes it, each naming its app and environment; `entitled` is true
///   when any of them is (a reviewer's Sandbox purchase unlocks the app). A customer with nothing
///   linked has no subscriptions and is not entitled. `bundle_id` and `environment` select.
/// - `GET /v1/subscriptions/{original_transaction_id}[?as_of=ISO8601][&bundle_id=…][&environment=…]`:
///   that key's state, 404 `not_found` when no transaction of it is known at that instant, 409
///   `ambiguous_subscription` listing them when the id names several subscriptions (one id in
///   Production and in Sandbox) and the query selects none.
struct EntitlementController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "customers/{customer_id}/entitlements", scope: .read) { request, context in
            let customerId = try RouteEnvironment.pathParameter("customer_id", in: context)
            let instant = try environment.instant(request)
            let filter = try KeyFilter(request)
            return try Response.json(try await environment.entitlements(customerId: customerId, at: instant, filter: filter))
        }
        group.route(.get, "subscriptions/{original_transaction_id}", scope: .read) { request, context in
            let id = try RouteEnvironment.pathParameter("original_transaction_id", in: context)
            let instant = try environment.instant(request)
            let filter = try KeyFilter(request)
            let store = environment.store
            let states = try await environment.read { try await store.states(originalTransactionId: id, at: instant) }
                .filter { filter.admits($0.key) }
            if let state = try KeyFilter.one(of: states.map(\.key), id: id).flatMap({ key in states.first { $0.key == key } }) {
                return Response.json(state.json())
            }
            throw APIError(.notFound, "not_found", "no subscription with original transaction id \(id) is known at that instant")
        }
    }
}
