/// Access given by hand (support's free month), as a store keeps it: an entitlement from an
/// instant until an expiry, or for good, unless ended earlier.
public struct EntitlementGrant: Sendable, Hashable {
    /// The grant's id.
    public let id: String
    /// The entitlement it gives.
    public let entitlement: String
    /// When it was made: it counts from then.
    public let grantedAt: Timestamp
    /// When it runs out; `nil` for a lifetime grant.
    public let expiresDate: Timestamp?
    /// When it was ended by hand, if it was: the end counts from then, so an evaluation at an
    /// earlier instant sees the grant running to its expiry.
    public let endedAt: Timestamp?

    public init(id: String, entitlement: String, grantedAt: Timestamp, expiresDate: Timestamp?, endedAt: Timestamp? = nil) {
        self.id = id
        self.entitlement = entitlement
        self.grantedAt = grantedAt
        self.expiresDate = expiresDate
        self.endedAt = endedAt
    }

    /// When it stops giving access: its expiry or its end, whichever comes first; `nil` when it
    /// never does.
    public var end: Timestamp? {
        switch (expiresDate, endedAt) {
        case (nil, nil): nil
        case (let expires?, nil): expires
        case (nil, let ended?): ended
        case (let expires?, let ended?): min(expires, ended)
        }
    }
}

/// Whether a customer may use one named entitlement ("pro") at an instant, and what gives it:
/// what ``EntitlementCatalog/entitlements(of:at:grants:bundleId:)`` derives from the customer's
/// subscription states and grants.
public struct NamedEntitlement: Sendable, Hashable {
    /// What kind of thing gives (or last gave) the entitlement.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// An auto-renewable subscription (rule 7).
        case subscription
        /// A non-consumable purchase (rule 8).
        case purchase
        /// Non-renewing subscriptions, stacked end to end (rule 9).
        case pass
        /// A grant made by hand (rule 11).
        case grant
    }

    /// The entitlement's name, as in the file.
    public let name: String
    /// Whether the customer may use it at ``asOf``.
    public let isActive: Bool
    /// When it ends (active), or when it last ended (inactive); `nil` for a lifetime purchase or
    /// grant, and when nothing ever gave it.
    public let expiresDate: Timestamp?
    /// What gives it, or last gave it; `nil` when nothing ever did.
    public let source: Source?
    /// The product of the purchase that gives it; `nil` for a grant.
    public let productId: String?
    /// The key of the purchase that gives it; `nil` for a grant.
    public let key: SubscriptionKey?
    /// The grant that gives it.
    public let grantId: String?
    /// The source's status: a subscription's status; `active`, `expired` or `revoked` for the
    /// others (a grant ended by hand is `revoked`).
    public let status: SubscriptionStatus?
    /// Whether the subscription that gives it renews; `nil` for any other source.
    public let willRenew: Bool?
    /// The evaluation instant.
    public let asOf: Timestamp
    /// The first instant after ``asOf`` at which the same records and grants may give another
    /// answer by time alone (a period, a grace period, a pass or a grant ending); `nil` when only a
    /// new record or grant can change it. Not part of the JSON.
    public let mayChangeAt: Timestamp?

    /// The original transaction id of ``key``.
    public var originalTransactionId: String? { key?.originalTransactionId }
}

/// One thing that gives an entitlement, for the rules below.
private struct Candidate {
    let source: NamedEntitlement.Source
    /// When it started giving the entitlement.
    let start: Timestamp
    /// When it stops (or stopped) giving it; `nil`: never.
    let end: Timestamp?
    let isActive: Bool
    let state: SubscriptionState?
    let grant: EntitlementGrant?
    let status: SubscriptionStatus
    /// Instants after the evaluation at which it may change by time alone.
    let boundaries: [Timestamp]
}

extension EntitlementCatalog {
    /// Every entitlement of the catalog (of one app's, with `bundleId`) for one customer at
    /// `instant`, sorted by name, derived from the customer's subscription states at that instant
    /// (``EntitlementLedger/states(at:)`` or a store's) and the grants made for the customer.
    ///
    /// The rules (`docs/entitlements.md`, continuing those of `docs/entitlement-state.md`):
    ///
    /// 7. An auto-renewable subscription entitles while ``SubscriptionStatus/isEntitled``
    ///    (active or in a grace period), until its period's end (the grace period's end when one
    ///    follows it; the revocation when it is refunded). Upgrades within its group are the same
    ///    key: no gap.
    /// 8. A non-consumable entitles while owned: from its purchase, with no end, until revoked
    ///    (refunded, or Family Sharing withdrawn).
    /// 9. A non-renewing subscription entitles for its product's `duration` from its purchase;
    ///    several stack end to end (a pass bought while another runs starts when it ends). A
    ///    revoked pass gives nothing; a product without a duration gives nothing.
    /// 10. A consumable never entitles (it is still a purchase the customer owns).
    /// 11. A grant entitles from when it was made until its expiry or its end by hand, or for good;
    ///     at an instant before its end by hand, it runs to its expiry.
    /// 12. A purchase counts for the entitlements its product unlocks and, when the catalog has
    ///     `apps`, only those listed for the purchase's app. Family-shared copies count like the
    ///     purchaser's. An entitlement is active when any source is; the one that ends latest is
    ///     named (no end beats any date; then subscription, purchase, pass, grant; then the
    ///     greater product id, original transaction id, grant id). An inactive one names the
    ///     source that ended last.
    ///
    /// The answer depends on the states and grants alone, in any order; a state or grant given
    /// twice counts once.
    ///
    /// - Parameters:
    ///   - states: The customer's subscription states at `instant`.
    ///   - instant: The evaluation instant.
    ///   - grants: The customer's grants (all of them: those not yet made at `instant` count for
    ///     nothing).
    ///   - bundleId: Only this app's entitlements (with `apps`) and purchases; `nil`: every one.
    /// - Returns: One answer per entitlement.
    public func entitlements(
        of states: [SubscriptionState], at instant: Timestamp, grants: [EntitlementGrant] = [], bundleId: String? = nil
    ) -> [NamedEntitlement] {
        let selected = bundleId.map { names(forBundleId: $0) } ?? names
        var candidates: [String: [Candidate]] = [:]
        var passes: [String: [(state: SubscriptionState, duration: EntitlementDuration)]] = [:]
        // A state given twice counts once: a pass must not stack behind itself.
        var seen = Set<SubscriptionState>()
        for state in states where (bundleId == nil || state.key.bundleId == bundleId) && seen.insert(state).inserted {
            guard let productId = state.productId else { continue }
            let unlocked = names(forProductId: productId)
            guard !unlocked.isEmpty else { continue }
            let allowed = apps == nil ? unlocked : unlocked.filter { names(forBundleId: state.key.bundleId).contains($0) }
            for name in allowed {
                switch Self.kind(of: state) {
                case .subscription:
                    candidates[name, default: []].append(Self.subscription(state, at: instant))
                case .purchase:
                    candidates[name, default: []].append(Self.purchase(state, at: instant))
                case .pass:
                    if let duration = duration(ofProductId: productId) { passes[name, default: []].append((state, duration)) }
                case .grant?, nil:
                    break
                }
            }
        }
        for (name, list) in passes {
            candidates[name, default: []] += Self.stacked(list, at: instant)
        }
        for grant in grants where grant.grantedAt <= instant {
            candidates[grant.entitlement, default: []].append(Self.granted(grant, at: instant))
        }
        return selected.map { name in Self.answer(name, candidates[name] ?? [], at: instant) }
    }

    /// Which rule a state's product type falls under (`nil`: a consumable, rule 10). A type
    /// ReceiptKit does not know is a one-time purchase, as in rule 6.
    private static func kind(of state: SubscriptionState) -> NamedEntitlement.Source? {
        if state.appleStatus != nil { return .subscription }
        switch state.productType {
        case "consumable": return nil
        case "non_renewing_subscription": return .pass
        default: return .purchase
        }
    }

    /// Rule 7: access ends at the period's end, or at the grace period's end when one followed it,
    /// or at the revocation.
    private static func subscription(_ state: SubscriptionState, at instant: Timestamp) -> Candidate {
        let end: Timestamp?
        switch state.status {
        case .active: end = state.expiresDate
        case .revoked: end = state.revocationDate ?? state.expiresDate
        case .gracePeriod, .billingRetry, .expired:
            end = [state.expiresDate, state.gracePeriodExpiresDate].compactMap { $0 }.max()
        }
        return Candidate(
            source: .subscription, start: state.purchaseDate ?? instant, end: end, isActive: state.isEntitled, state: state,
            grant: nil, status: state.status, boundaries: state.statusMayChangeAt.map { [$0] } ?? [])
    }

    /// Rule 8.
    private static func purchase(_ state: SubscriptionState, at instant: Timestamp) -> Candidate {
        let revoked = state.status == .revoked
        return Candidate(
            source: .purchase, start: state.purchaseDate ?? instant, end: revoked ? state.revocationDate ?? instant : nil,
            isActive: !revoked, state: state, grant: nil, status: revoked ? .revoked : .active,
            boundaries: state.statusMayChangeAt.map { [$0] } ?? [])
    }

    /// Rule 9: the passes of one entitlement, each from the later of its purchase and the end of
    /// the one before, in purchase order (then by original transaction id).
    private static func stacked(
        _ passes: [(state: SubscriptionState, duration: EntitlementDuration)], at instant: Timestamp
    ) -> [Candidate] {
        let ordered = passes.sorted { lhs, rhs in
            let left = lhs.state.purchaseDate ?? Timestamp(millisecondsSince1970: 0)
            let right = rhs.state.purchaseDate ?? Timestamp(millisecondsSince1970: 0)
            if left != right { return left < right }
            return SubscriptionState.transactionIdPrecedes(lhs.state.key.originalTransactionId, rhs.state.key.originalTransactionId)
        }
        var candidates: [Candidate] = []
        var chainEnd: Timestamp?
        for (state, duration) in ordered {
            let purchased = state.purchaseDate ?? instant
            if state.status == .revoked {
                candidates.append(Candidate(
                    source: .pass, start: purchased, end: state.revocationDate ?? purchased, isActive: false, state: state, grant: nil,
                    status: .revoked, boundaries: []))
                continue
            }
            let start = max(purchased, chainEnd ?? purchased)
            let end = duration.added(to: start)
            chainEnd = end
            let running = start <= instant && instant < end
            candidates.append(Candidate(
                source: .pass, start: start, end: end, isActive: running, state: state, grant: nil,
                status: end <= instant ? .expired : .active, boundaries: [start, end]))
        }
        // A running pass is named with the end of the passes that follow it without a gap.
        return candidates.map { candidate in
            guard candidate.isActive, var end = candidate.end else { return candidate }
            for later in candidates where later.status != .revoked && later.start == end { end = later.end ?? end }
            return Candidate(
                source: .pass, start: candidate.start, end: end, isActive: true, state: candidate.state, grant: nil,
                status: .active, boundaries: candidate.boundaries)
        }
    }

    /// Rule 11. An end by hand counts from when it was made, as the grant itself does: before
    /// it, the grant runs to its expiry.
    private static func granted(_ grant: EntitlementGrant, at instant: Timestamp) -> Candidate {
        let ended = grant.endedAt.map { $0 <= instant } == true
        let end = ended ? grant.end : grant.expiresDate
        let running = end.map { instant < $0 } ?? true
        let status: SubscriptionStatus = running ? .active : ended && grant.endedAt == end ? .revoked : .expired
        return Candidate(
            source: .grant, start: grant.grantedAt, end: end, isActive: running, state: nil, grant: grant, status: status,
            boundaries: [end, grant.endedAt].compactMap { $0 })
    }

    /// Rule 12: the answer for one entitlement from its candidates.
    private static func answer(_ name: String, _ candidates: [Candidate], at instant: Timestamp) -> NamedEntitlement {
        let mayChangeAt = candidates.flatMap(\.boundaries).filter { $0 > instant }.min()
        let active = candidates.filter(\.isActive)
        let pool = active.isEmpty ? candidates : active
        guard let winner = pool.max(by: precedes) else {
            return NamedEntitlement(
                name: name, isActive: false, expiresDate: nil, source: nil, productId: nil, key: nil, grantId: nil, status: nil,
                willRenew: nil, asOf: instant, mayChangeAt: mayChangeAt)
        }
        return NamedEntitlement(
            name: name, isActive: winner.isActive, expiresDate: winner.end, source: winner.source,
            productId: winner.state?.productId, key: winner.state?.key, grantId: winner.grant?.id, status: winner.status,
            willRenew: winner.source == .subscription ? winner.state?.willRenew : nil, asOf: instant, mayChangeAt: mayChangeAt)
    }

    /// The order in which a candidate wins over another: the later end (none is latest), then
    /// the source (subscription, purchase, pass, grant), then the greater product id, original
    /// transaction id and grant id.
    private static func precedes(_ lhs: Candidate, _ rhs: Candidate) -> Bool {
        switch (lhs.end, rhs.end) {
        case (nil, .some): return false
        case (.some, nil): return true
        case (let left?, let right?) where left != right: return left < right
        default: break
        }
        let order = NamedEntitlement.Source.allCases
        let left = order.firstIndex(of: lhs.source) ?? 0, right = order.firstIndex(of: rhs.source) ?? 0
        if left != right { return left > right }
        let leftProduct = lhs.state?.productId ?? "", rightProduct = rhs.state?.productId ?? ""
        if leftProduct != rightProduct { return EntitlementCatalog.precedes(leftProduct, rightProduct) }
        let leftId = lhs.state?.key.originalTransactionId ?? "", rightId = rhs.state?.key.originalTransactionId ?? ""
        if leftId != rightId { return SubscriptionState.transactionIdPrecedes(leftId, rightId) }
        return EntitlementCatalog.precedes(lhs.grant?.id ?? "", rhs.grant?.id ?? "")
    }
}

extension NamedEntitlement {
    /// The answer as a JSON object: `{"active", "expires_date", "source", "product_id",
    /// "original_transaction_id", "grant_id", "status", "will_renew"}`, dates as in the
    /// transaction record.
    public func json() -> String {
        var bytes: [UInt8] = []
        appendJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the bytes of ``json()`` to `buffer`.
    public func appendJSON(to buffer: inout [UInt8]) {
        JSONWriter.append(to: &buffer, pretty: false) { writer in
            writer.object { json in write(to: &json) }
        }
    }

    /// Writes the members into an object being written.
    func write(to json: inout JSONWriter) {
        json.member("active", isActive)
        json.member("expires_date", expiresDate)
        json.member("source", source?.rawValue)
        json.member("product_id", productId)
        json.member("original_transaction_id", originalTransactionId)
        json.member("grant_id", grantId)
        json.member("status", status?.rawValue)
        json.member("will_renew", willRenew)
    }

    /// A customer's entitlements as one JSON object by name: `{"pro": {…}, "remove_ads": {…}}`.
    ///
    /// - Parameter entitlements: The answers, in the order to write them.
    public static func json(_ entitlements: [NamedEntitlement]) -> String {
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes, pretty: false) { writer in write(entitlements, to: &writer) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes the object of ``json(_:)`` as a value being written (`verify-receipt`'s line per
    /// customer holds it).
    package static func write(_ entitlements: [NamedEntitlement], to json: inout JSONWriter) {
        json.object { json in
            for entitlement in entitlements {
                json.member(JSONKey(entitlement.name)) { json in
                    json.object { json in entitlement.write(to: &json) }
                }
            }
        }
    }
}
