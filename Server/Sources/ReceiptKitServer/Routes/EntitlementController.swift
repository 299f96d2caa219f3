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
///   With an entitlements file, also `"entitlements": {name: {"active", "expires_date", "source",
///   "product_id", "original_transaction_id", "grant_id", "status", "will_renew"}, …}`: every
///   entitlement of the file (of the selected app, with `apps`), as ReceiptKit's rules derive it.
/// - `GET /v1/customers/{customer_id}/entitlements/{name}[?as_of=…][&bundle_id=…][&environment=…]`:
///   one named entitlement, `{"customer_id", "as_of", "name", …its members}`: what an app polls.
///   409 `entitlements_off` without an entitlements file, 404 `unknown_entitlement` for a name
///   the file (or the app's list) does not have.
/// - `GET /v1/subscriptions/{original_transaction_id}[?as_of=ISO8601][&bundle_id=…][&environment=…]`:
///   that key's state, 404 `not_found` when no transaction of it is known at that instant, 409
///   `ambiguous_subscription` listing them when the id names several subscriptions (one id in
///   Production and in Sandbox) and the query selects none.
struct EntitlementController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "customers/{customer_id}/entitlements", scope: .read) { request, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let instant = try environment.instant(request)
            let filter = try KeyFilter(request)
            return try Response.json(try await environment.entitlements(customerId: customerId, at: instant, filter: filter))
        }
        group.route(.get, "customers/{customer_id}/entitlements/{name}", scope: .read) { request, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let name = try RouteEnvironment.pathParameter("name", in: context)
            let catalog = try environment.catalog()
            guard catalog.names.contains(name) else {
                throw APIError(.notFound, "unknown_entitlement", "\(name) is not an entitlement of RECEIPTKIT_ENTITLEMENTS_FILE (it has \(catalog.names.joined(separator: ", ")))")
            }
            let instant = try environment.instant(request)
            let filter = try KeyFilter(request)
            // Now, the keys whose product an entitlement names are all that can give one; at an
            // instant in the past, a key's product may have been another.
            let now = request.uri.queryParameters.get("as_of").map { $0 == "now" } ?? true
            let store = environment.store
            let sources = try await environment.read {
                try await store.entitlementSources(customerId: customerId, at: instant, namedProductsOf: now ? catalog : nil)
            }
            let states = sources.states.filter { filter.admits($0.key) }
            let named = catalog.entitlements(of: states, at: instant, grants: sources.grants.map(\.grant), bundleId: filter.bundleId)
            guard let entitlement = named.first(where: { $0.name == name }) else {
                throw APIError(.notFound, "unknown_entitlement", "\(name) is not an entitlement of \(filter.bundleId ?? "that app") in RECEIPTKIT_ENTITLEMENTS_FILE's apps")
            }
            return try Response.json(OneEntitlement(customerId: customerId, entitlement: entitlement))
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

/// One named entitlement of a customer: `{"customer_id", "as_of", "name", "active",
/// "expires_date", "source", "product_id", "original_transaction_id", "grant_id", "status",
/// "will_renew"}`.
struct OneEntitlement: Encodable {
    let customerId: String
    let entitlement: NamedEntitlement

    private enum CodingKeys: String, CodingKey {
        case customerId, asOf, name, active, expiresDate, source, productId, originalTransactionId, grantId, status, willRenew
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(customerId, forKey: .customerId)
        try container.encode(entitlement.asOf.iso8601, forKey: .asOf)
        try container.encode(entitlement.name, forKey: .name)
        try container.encode(entitlement.isActive, forKey: .active)
        try container.encode(entitlement.expiresDate?.iso8601, forKey: .expiresDate)
        try container.encode(entitlement.source?.rawValue, forKey: .source)
        try container.encode(entitlement.productId, forKey: .productId)
        try container.encode(entitlement.originalTransactionId, forKey: .originalTransactionId)
        try container.encode(entitlement.grantId, forKey: .grantId)
        try container.encode(entitlement.status?.rawValue, forKey: .status)
        try container.encode(entitlement.willRenew, forKey: .willRenew)
    }
}
