import Foundation
import Hummingbird
import ReceiptKit

/// Access given by hand (support's free month), which named entitlements count as a source
/// (rule 11 of `docs/entitlements.md`):
///
/// - `POST /v1/customers/{customer_id}/grants` (scope write): `{"entitlement": "pro",
///   "expires_date": "…"}`, `{"entitlement": "pro", "duration": "P1M"}` or
///   `{"entitlement": "pro", "lifetime": true}`, with an optional `"reason"`: stores the grant,
///   derives the customer's entitlements (`entitlement.activated` when it gives access) and
///   answers 201 with the grant (``GrantAnswer``). An entitlement the file does not have, an
///   expiry not in the future, none or more than one of the three, or a bad duration: 400
///   `invalid_request` naming the member; nothing is stored.
/// - `DELETE /v1/customers/{customer_id}/grants/{grant_id}` (scope write): ends the grant now (kept,
///   with who ended it and when) and answers it; one already ended is answered as it is. 404
///   `not_found` when the customer has no such grant.
/// - `GET /v1/customers/{customer_id}/grants` (scope read): `{"customer_id", "grants": [grant, …]}`,
///   oldest first, ended ones included.
///
/// Making or ending a grant needs an entitlements file: 409 `entitlements_off` without one.
struct GrantController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.post, "customers/{customer_id}/grants", scope: .write) { request, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let catalog = try environment.catalog()
            let body = try RequestBody.decode(GrantRequest.self, from: try await environment.body(of: request, upTo: 16 * 1024))
            let now = environment.now
            let grant = try body.grant(customerId: customerId, catalog: catalog, at: now, by: context.access.name)
            let store = environment.store
            try await environment.read { try await store.makeGrant(grant, catalog: catalog) }
            context.notes.update { $0.verdict = "granted" }
            return try Response.json(GrantAnswer(grant, at: now), status: .created)
        }
        group.route(.delete, "customers/{customer_id}/grants/{grant_id}", scope: .write) { _, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let grantId = try RouteEnvironment.pathParameter("grant_id", in: context)
            let catalog = try environment.catalog()
            let now = environment.now
            let name = context.access.name
            let store = environment.store
            guard let grant = try await environment.read({
                try await store.endGrant(customerId: customerId, grantId: grantId, at: now, by: name, catalog: catalog)
            }) else {
                throw APIError(.notFound, "not_found", "customer \(customerId) has no grant \(grantId)")
            }
            context.notes.update { $0.verdict = "grant_ended" }
            return try Response.json(GrantAnswer(grant, at: now))
        }
        group.route(.get, "customers/{customer_id}/grants", scope: .read) { _, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let store = environment.store
            let grants = try await environment.read { try await store.grants(customerId: customerId) }
            let now = environment.now
            return try Response.json(GrantList(customerId: customerId, grants: grants.map { GrantAnswer($0, at: now) }))
        }
    }
}

extension ServerRequestContext.Access {
    /// Who made a change, for the record: the token's name, or `open` on a server without tokens.
    var name: String {
        switch self {
        case .token(let token): token.name
        case .open, .unchecked: "open"
        }
    }
}

/// A grant as the routes answer it: `{"grant_id", "customer_id", "entitlement", "granted_at",
/// "expires_date", "lifetime", "reason", "granted_by", "ended_at", "ended_by", "active"}`;
/// `active` as of the answer.
struct GrantAnswer: Encodable {
    let grant: StoredGrant
    let active: Bool

    init(_ grant: StoredGrant, at now: Timestamp) {
        self.grant = grant
        let end = grant.grant.end
        active = grant.grantedAt <= now.millisecondsSince1970 && (end.map { now < $0 } ?? true)
    }

    private enum CodingKeys: String, CodingKey {
        case grantId, customerId, entitlement, grantedAt, expiresDate, lifetime, reason, grantedBy, endedAt, endedBy, active
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        func date(_ milliseconds: Int64?) -> String? { milliseconds.map { Timestamp(millisecondsSince1970: $0).iso8601 } }
        try container.encode(grant.id, forKey: .grantId)
        try container.encode(grant.customerId, forKey: .customerId)
        try container.encode(grant.entitlement, forKey: .entitlement)
        try container.encode(date(grant.grantedAt), forKey: .grantedAt)
        try container.encode(date(grant.expiresAt), forKey: .expiresDate)
        try container.encode(grant.expiresAt == nil, forKey: .lifetime)
        try container.encode(grant.reason, forKey: .reason)
        try container.encode(grant.grantedBy, forKey: .grantedBy)
        try container.encode(date(grant.endedAt), forKey: .endedAt)
        try container.encode(grant.endedBy, forKey: .endedBy)
        try container.encode(active, forKey: .active)
    }
}

/// `{"customer_id", "grants": [grant, …]}`.
struct GrantList: Encodable {
    let customerId: String
    let grants: [GrantAnswer]

    private enum CodingKeys: String, CodingKey {
        case customerId, grants
    }
}
