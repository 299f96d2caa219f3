import Foundation
import Hummingbird
import ReceiptKit

/// The read side, from stored state only (no verification):
///
/// Path parameters are percent-decoded once (``RouteEnvironment/pathParameter(_:in:)``).
///
/// - `GET /v1/customers/{customer_id}/entitlements[?as_of=ISO8601]`:
///   `{"customer_id", "as_of", "entitled", "subscriptions": [state, …]}`, each state exactly as
///   `verify-receipt --state` writes it; `entitled` is true when any of them is. A customer
///   with nothing linked has no subscriptions and is not entitled.
/// - `GET /v1/subscriptions/{original_transaction_id}[?as_of=ISO8601]`: that key's state, 404
///   `not_found` when no transaction of it is known at that instant.
struct EntitlementController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "customers/{customer_id}/entitlements", scope: .read) { request, context in
            let customerId = try RouteEnvironment.pathParameter("customer_id", in: context)
            let instant = try environment.instant(request)
            return try Response.json(try await environment.entitlements(customerId: customerId, at: instant))
        }
        group.route(.get, "subscriptions/{original_transaction_id}", scope: .read) { request, context in
            let id = try RouteEnvironment.pathParameter("original_transaction_id", in: context)
            let instant = try environment.instant(request)
            let store = environment.store
            if let state = try await environment.read({ try await store.states(originalTransactionId: id, at: instant) }).first {
                return Response.json(state.json())
            }
            throw APIError(.notFound, "not_found", "no subscription with original transaction id \(id) is known at that instant")
        }
    }
}
