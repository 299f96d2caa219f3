package import ReceiptKit

/// Named entitlements: what they are derived from, grants made and ended by hand, the sweep of
/// customers whose entitlements time alone changes, and the product types a file is checked
/// against.
extension Store {
    /// The named entitlements the store's features were given (`RECEIPTKIT_ENTITLEMENTS_FILE`),
    /// or `nil`.
    var entitlementsFile: EntitlementsFile? { features.setting(EntitlementsFile.self) }

    /// A customer's states at an instant and its grants: its keys and grants in one statement
    /// (``EntitlementStatements/sourcesOfCustomer``), then each key's state in one statement of
    /// its own (``Evaluation``), as ``states(customerId:at:)`` reads them — no transaction around
    /// them, so that an app's poll is two round trips to PostgreSQL for a customer with one
    /// purchase.
    ///
    /// - Parameter namedProductsOf: Only the keys whose product this catalog names (or whose
    ///   product is not derived yet) are evaluated (an app's poll of one entitlement now); `nil`:
    ///   every key (the customer's whole answer, or an `as_of` in the past, when a key's product
    ///   may have been another).
    package func entitlementSources(
        customerId: String, at instant: Timestamp, namedProductsOf catalog: EntitlementCatalog? = nil
    ) async throws -> (states: [SubscriptionState], grants: [StoredGrant]) {
        let (keys, grants) = EntitlementStatements.split(
            try await backend.rows(EntitlementStatements.sourcesOfCustomer, ["customer_id": .text(customerId)]), namedProductsOf: catalog)
        var states: [SubscriptionState] = []
        for key in keys {
            if let state = try await state(of: key, at: instant) { states.append(state) }
        }
        return (states, grants)
    }

    /// Stores a grant and derives the customer's entitlements after it (its events), in one
    /// transaction.
    package func makeGrant(_ grant: StoredGrant, catalog: EntitlementCatalog) async throws {
        let instant = Timestamp(millisecondsSince1970: grant.grantedAt)
        let made = try await backend.write(Granting(
            customerId: grant.customerId, change: .make(grant), at: instant, targets: outboxTargets, catalog: catalog))
        features.tell(made.commit)
    }

    /// Ends a grant now, if it has not ended, and derives the customer's entitlements after it.
    ///
    /// - Returns: The grant as stored after it (already ended: as it was); `nil` when the
    ///   customer has no grant with that id.
    package func endGrant(
        customerId: String, grantId: String, at instant: Timestamp, by name: String, catalog: EntitlementCatalog
    ) async throws -> StoredGrant? {
        let ended = try await backend.write(Granting(
            customerId: customerId, change: .end(grantId: grantId, at: instant.millisecondsSince1970, by: name), at: instant,
            targets: outboxTargets, catalog: catalog))
        features.tell(ended.commit)
        return ended.grant
    }

    /// A customer's grants, oldest first.
    package func grants(customerId: String) async throws -> [StoredGrant] {
        try await backend.rows(EntitlementStatements.grantsOfCustomer, ["customer_id": .text(customerId)])
    }

    /// Writes the named-entitlement events time alone caused: each customer whose
    /// `next_change_at` has passed by `now` (at most `limit`, soonest first) is derived at each
    /// instant its entitlements may have changed, in a transaction of its own
    /// (``Sweeping``).
    package func sweepEntitlements(now: Timestamp, limit: Int, catalog: EntitlementCatalog) async throws -> SweepReport {
        let due = try await backend.rows(EntitlementStatements.dueCustomers, ["now": .integer(now.millisecondsSince1970), "limit": .integer(Int64(limit))])
        var report = SweepReport(due: due.count)
        for customerId in due {
            let swept = try await backend.write(Sweeping(customerId: customerId, now: now, targets: outboxTargets, catalog: catalog))
            report.swept += swept.swept ? 1 : 0
            report.events += swept.commit.events.count
            features.tell(swept.commit)
        }
        return report
    }

    /// The type (as the transaction record writes it) of each of these products the store has a
    /// purchase of, read from one purchase's state.
    package func productTypes(of productIds: some Sequence<String>, at instant: Timestamp) async throws -> [String: String] {
        var types: [String: String] = [:]
        for productId in Set(productIds) {
            guard let key = try await backend.first(EntitlementStatements.keyOfProduct, ["derived_product_id": .text(productId)]),
                let type = try await state(of: key, at: instant)?.productType
            else { continue }
            types[productId] = type
        }
        return types
    }
}
