package import ReceiptKit

/// The statements of named entitlements (migration v13): the grants made by hand
/// (`entitlement_grants`), what the feed last told of each customer's entitlements
/// (`customer_entitlements`: active or not, by name), and when a customer's entitlements may next
/// change by time alone (`entitlement_checks`), for the sweep.
enum EntitlementStatements {
    // MARK: Grants

    /// One grant as stored.
    static let grantColumns = "grant_id, customer_id, entitlement, granted_at, expires_at, reason, granted_by, ended_at, ended_by"

    /// A customer's grants, oldest first.
    static let grantsOfCustomer = Query(
        "SELECT \(grantColumns) FROM entitlement_grants WHERE customer_id = :customer_id ORDER BY granted_at, grant_id", row: StoredGrant.init)

    /// One grant of a customer.
    static let grant = Query(
        "SELECT \(grantColumns) FROM entitlement_grants WHERE customer_id = :customer_id AND grant_id = :grant_id", row: StoredGrant.init)

    static let insertGrant = StoreStatement(
        """
        INSERT INTO entitlement_grants (grant_id, customer_id, entitlement, granted_at, expires_at, reason, granted_by)
        VALUES (:grant_id, :customer_id, :entitlement, :granted_at, :expires_at, :reason, :granted_by)
        """)

    /// The write that stores a new grant.
    static func grantWrite(_ grant: StoredGrant) -> StoreWrite {
        StoreWrite(insertGrant, [
            "grant_id": .text(grant.id), "customer_id": .text(grant.customerId), "entitlement": .text(grant.entitlement),
            "granted_at": .integer(grant.grantedAt), "expires_at": .optional(grant.expiresAt), "reason": .optional(grant.reason),
            "granted_by": .text(grant.grantedBy),
        ])
    }

    /// Ends a grant not ended yet.
    static let endGrant = StoreStatement(
        """
        UPDATE entitlement_grants SET ended_at = :ended_at, ended_by = :ended_by
        WHERE customer_id = :customer_id AND grant_id = :grant_id AND ended_at IS NULL
        """)

    // MARK: What the feed told

    /// The entitlements the feed last told a customer of, with whether each was active.
    static let toldOfCustomer = Query("SELECT name, active FROM customer_entitlements WHERE customer_id = :customer_id") {
        (name: String, active: Int64) in (name: name, active: active != 0)
    }

    static let upsertTold = StoreStatement(
        """
        INSERT INTO customer_entitlements (customer_id, name, active) VALUES (:customer_id, :name, :active)
        ON CONFLICT (customer_id, name) DO UPDATE SET active = excluded.active
        """)

    /// The write that remembers what the feed told of one entitlement.
    static func toldWrite(customerId: String, name: String, active: Bool) -> StoreWrite {
        StoreWrite(upsertTold, ["customer_id": .text(customerId), "name": .text(name), "active": .flag(active)])
    }

    // MARK: The sweep

    static let upsertCheck = StoreStatement(
        """
        INSERT INTO entitlement_checks (customer_id, next_change_at) VALUES (:customer_id, :next_change_at)
        ON CONFLICT (customer_id) DO UPDATE SET next_change_at = excluded.next_change_at
        """)

    static let deleteCheck = StoreStatement("DELETE FROM entitlement_checks WHERE customer_id = :customer_id")

    /// The write that schedules a customer's next look, or forgets it (`nil`: only an input or a
    /// grant can change the customer's entitlements).
    static func checkWrite(customerId: String, at instant: Int64?) -> StoreWrite {
        guard let instant else { return StoreWrite(deleteCheck, ["customer_id": .text(customerId)]) }
        return StoreWrite(upsertCheck, ["customer_id": .text(customerId), "next_change_at": .integer(instant)])
    }

    /// Customers whose entitlements may have changed by now, soonest first.
    static let dueCustomers = Query(
        "SELECT customer_id FROM entitlement_checks WHERE next_change_at <= :now ORDER BY next_change_at LIMIT :limit"
    ) { (customerId: String) in customerId }

    /// A due customer's `next_change_at`, if it is still due; on PostgreSQL the row is locked for
    /// the rest of the transaction, or not read when another transaction holds it.
    static let claimDueCustomer = Query { dialect in
        "SELECT next_change_at FROM entitlement_checks WHERE customer_id = :customer_id AND next_change_at <= :now\(dialect.forUpdateSkipLocked)"
    } row: { (nextChangeAt: Int64) in nextChangeAt }

    // MARK: Keys

    /// What a customer's named entitlements are derived from, in one statement (one snapshot, one
    /// round trip): each key linked to the customer with the product its state was last derived
    /// with, and each of its grants.
    static let sourcesOfCustomer = Query(
        """
        SELECT 0, c.original_transaction_id, c.bundle_id, c.environment, s.derived_product_id,
            CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS TEXT), CAST(NULL AS BIGINT), CAST(NULL AS TEXT)
        FROM customer_subscriptions c
        LEFT JOIN subscriptions s ON s.original_transaction_id = c.original_transaction_id AND s.bundle_id = c.bundle_id
            AND s.environment = c.environment
        WHERE c.customer_id = :customer_id
        UNION ALL
        SELECT 1, grant_id, entitlement, granted_by, reason, granted_at, expires_at, customer_id, ended_at, ended_by
        FROM entitlement_grants WHERE customer_id = :customer_id
        """
    ) {
        (part: Int64, a: String, b: String, c: String, d: String?, e: Int64?, f: Int64?, g: String?, h: Int64?, i: String?) throws
            -> EntitlementSource in
        if part == 0 { return .key(LedgerStatements.subscriptionKey(a, b, c), productId: d) }
        guard let grantedAt = e, let customerId = g else { throw StoreError.damaged("a grant row has no granted_at or customer_id") }
        return .grant(StoredGrant(a, customerId, b, grantedAt, f, d, c, h, i))
    }

    /// The keys and grants of ``sourcesOfCustomer``'s rows, the keys sorted, the grants oldest
    /// first; with `catalog`, only the keys whose product it names, or whose product is not
    /// derived yet (a customer's thousand consumables cost nothing).
    static func split(
        _ sources: [EntitlementSource], namedProductsOf catalog: EntitlementCatalog?
    ) -> (keys: [SubscriptionKey], grants: [StoredGrant]) {
        var keys: [SubscriptionKey] = []
        var grants: [StoredGrant] = []
        for source in sources {
            switch source {
            case .key(let key, let productId):
                if let catalog, let productId, catalog.names(forProductId: productId).isEmpty { continue }
                keys.append(key)
            case .grant(let grant):
                grants.append(grant)
            }
        }
        return (keys.sorted(), grants.sorted { ($0.grantedAt, $0.id) < ($1.grantedAt, $1.id) })
    }

    /// One key of a product, to learn the product's type from its state.
    static let keyOfProduct = Query(
        "SELECT original_transaction_id, bundle_id, environment FROM subscriptions WHERE derived_product_id = :derived_product_id LIMIT 1",
        row: LedgerStatements.subscriptionKey)

    // MARK: Erasure

    /// What erasing a customer deletes of named entitlements.
    static let erasures = [
        StoreStatement("DELETE FROM entitlement_grants WHERE customer_id = :customer_id"),
        StoreStatement("DELETE FROM customer_entitlements WHERE customer_id = :customer_id"),
        StoreStatement("DELETE FROM entitlement_checks WHERE customer_id = :customer_id"),
    ]
}

/// One row of ``EntitlementStatements/sourcesOfCustomer``.
enum EntitlementSource: Sendable {
    case key(SubscriptionKey, productId: String?)
    case grant(StoredGrant)
}

/// One grant as `entitlement_grants` keeps it.
package struct StoredGrant: Sendable, Hashable {
    package var id: String
    package var customerId: String
    package var entitlement: String
    package var grantedAt: Int64
    /// `nil`: for good.
    package var expiresAt: Int64?
    package var reason: String?
    /// The name of the token that made it.
    package var grantedBy: String
    package var endedAt: Int64?
    package var endedBy: String?

    init(
        _ id: String, _ customerId: String, _ entitlement: String, _ grantedAt: Int64, _ expiresAt: Int64?, _ reason: String?,
        _ grantedBy: String, _ endedAt: Int64?, _ endedBy: String?
    ) {
        self.id = id
        self.customerId = customerId
        self.entitlement = entitlement
        self.grantedAt = grantedAt
        self.expiresAt = expiresAt
        self.reason = reason
        self.grantedBy = grantedBy
        self.endedAt = endedAt
        self.endedBy = endedBy
    }

    /// The grant as ReceiptKit's rules take it.
    package var grant: EntitlementGrant {
        EntitlementGrant(
            id: id, entitlement: entitlement, grantedAt: Timestamp(millisecondsSince1970: grantedAt),
            expiresDate: expiresAt.map(Timestamp.init(millisecondsSince1970:)),
            endedAt: endedAt.map(Timestamp.init(millisecondsSince1970:)))
    }
}
