import ReceiptKit

/// One subscription's history as the console draws it, from the verified records stored for its
/// key (``Store/inputs(of:)``) and nothing else:
///
/// - `periods`: each transaction once — its copy that wins rule 1 (``LedgerCopy/supersedes(_:)``),
///   dated and revoked as the entitlement ledger dates and revokes it — from its purchase to its
///   expiry, with its product and offer (a free trial is an introductory offer whose discount is
///   `free_trial`);
/// - `spans`: the key's status over time, each span a run of instants with one status, every
///   status evaluated by ReceiptKit's ``EntitlementLedger`` over the same copies. A status can
///   only change at an instant a copy or a state names (a copy known, a purchase, an expiry, a
///   revocation, a grace period's end, the end of the billing retry window), so the ledger is
///   asked at exactly those instants: the console never restates a rule;
/// - `marks`: revocations (a refund or a revocation, at the date the ledger revokes at), product
///   changes (a transaction whose product is not the one before it: an upgrade, a downgrade or a
///   crossgrade taking effect), and renewal intent from the renewal infos in the order they were
///   signed (auto-renew turned off or on, the product the subscription will renew as changed);
/// - `records`: every stored record of the key, with what the console shows of it.
///
/// Each period, span and mark names the records behind it by event id.
struct SubscriptionTimeline {
    let key: SubscriptionKey
    private(set) var periods: [Period] = []
    private(set) var spans: [Span] = []
    private(set) var marks: [Mark] = []
    private(set) var records: [Record] = []

    /// A transaction: a paid period, a trial, or a one-time purchase (no end).
    struct Period {
        let transactionId: String
        let productId: String?
        let start: Timestamp?
        let end: Timestamp?
        let offer: NormalizedTransaction.Offer?
        let revocationDate: Timestamp?
        let revocationReason: String?
        let isUpgraded: Bool
        /// The events carrying a copy of the transaction.
        let records: [Int64]
    }

    /// A run of instants with one status, from `from` up to (not including) `to`; `to` is `nil`
    /// for the last, which lasts until a record changes it.
    struct Span {
        let from: Timestamp
        var to: Timestamp?
        let status: SubscriptionStatus
        let isEntitled: Bool
        /// The events whose copies became known at `from` (the records that started the span);
        /// none when it starts at an instant a record named (an expiry, a grace period's end).
        var records: [Int64] = []
    }

    /// Something that happened at an instant.
    struct Mark {
        enum Kind: String {
            case revocation
            case productChange = "product_change"
            case autoRenewOff = "auto_renew_off"
            case autoRenewOn = "auto_renew_on"
            case renewalProductChange = "renewal_product_change"
        }

        let kind: Kind
        let at: Timestamp
        /// The product after the change (the one revoked, for a revocation).
        let productId: String?
        /// The product before a change.
        let previousProductId: String?
        /// A revocation's reason.
        let reason: String?
        let records: [Int64]
    }

    /// A stored record, and what the console lists of it.
    struct Record {
        let id: Int64
        let kind: String
        let receivedAt: Timestamp
        let notificationType: String?
        let notificationSubtype: String?
        let notificationUUID: String?
        let notificationSignedDate: Timestamp?
        let leafSHA256: String?
        let rootSHA256: String?
        /// The record's JSON, as stored.
        let recordJSON: String
    }

    /// The timeline of `key` from its events.
    ///
    /// - Parameters:
    ///   - key: The subscription.
    ///   - inputs: The stored inputs that touched it, in the order they were stored.
    /// - Throws: ``StoreError`` when a stored record does not decode (the store is damaged).
    init(key: SubscriptionKey, inputs: [StoredInput]) throws {
        self.key = key
        var ledger = EntitlementLedger()
        var winners = WinningCopies<NormalizedTransaction>()
        var carriers: [String: [Int64]] = [:]
        var revokers: [String: [Int64]] = [:]
        var renewalInfos: [(info: StoredRecord.RenewalInfo, copy: LedgerCopy, event: Int64)] = []
        var knownAt: [Int64: [Int64]] = [:]
        func known(_ copy: LedgerCopy, in event: Int64) {
            let instant = copy.knownFrom.millisecondsSince1970
            if knownAt[instant]?.contains(event) != true { knownAt[instant, default: []].append(event) }
        }
        for identified in inputs {
            let record = try StoredRecord(identified)
            records.append(Record(identified, record))
            for (transaction, copy) in record.transactionCopies(receivedAt: identified.receivedAt) where copy.key == key {
                guard let id = copy.transactionId else { continue }
                ledger.insert(copy)
                known(copy, in: identified.id)
                if carriers[id]?.last != identified.id { carriers[id, default: []].append(identified.id) }
                if copy.revocationDate != nil, revokers[id]?.last != identified.id { revokers[id, default: []].append(identified.id) }
                winners.offer(copy, with: transaction)
            }
            if let info = record.renewalInfo, info.belongs(to: key), let copy = record.renewalInfoCopy() {
                ledger.insert(copy)
                known(copy, in: identified.id)
                renewalInfos.append((info, copy, identified.id))
            }
        }
        periods = winners.all.compactMap { winner in
            guard let id = winner.copy.transactionId else { return nil }
            return Period(
                transactionId: id, productId: winner.companion.productId, start: winner.copy.purchaseDate,
                end: winner.copy.expiresDate, offer: winner.companion.offer, revocationDate: winner.copy.revocationDate,
                revocationReason: winner.copy.revocationDate == nil ? nil : winner.companion.revocationReason,
                isUpgraded: winner.copy.isUpgraded, records: carriers[id] ?? [])
        }.sorted { (Self.milliseconds($0.start), $0.transactionId) < (Self.milliseconds($1.start), $1.transactionId) }
        spans = Self.spans(of: key, in: ledger).map { span in
            var span = span
            span.records = knownAt[span.from.millisecondsSince1970] ?? []
            return span
        }
        marks = Self.periodMarks(periods, revokers: revokers) + Self.renewalIntentMarks(renewalInfos)
        marks.sort { ($0.at, $0.kind.rawValue) < ($1.at, $1.kind.rawValue) }
    }

    private static func milliseconds(_ timestamp: Timestamp?) -> Int64 {
        timestamp?.millisecondsSince1970 ?? .min
    }

    /// The key's status over time: the ledger asked at every instant where it may change,
    /// runs of one status merged.
    private static func spans(of key: SubscriptionKey, in ledger: EntitlementLedger) -> [Span] {
        // The instants the copies name; then those the states name (a period end that a renewal
        // info's renewal date moved, a grace period's end, the billing retry window's end), until
        // no state names a new one.
        var instants = Set<Int64>()
        for copy in ledger.copies {
            for instant in [copy.knownFrom, copy.purchaseDate, copy.expiresDate, copy.revocationDate].compactMap({ $0 }) {
                instants.insert(instant.millisecondsSince1970)
            }
        }
        instants.remove(Int64.min)  // a copy known since always
        var states: [Int64: SubscriptionState] = [:]
        var pending = instants
        for _ in 0..<4 where !pending.isEmpty {
            var named = Set<Int64>()
            for instant in pending {
                guard let state = ledger.state(for: key, at: Timestamp(millisecondsSince1970: instant)) else { continue }
                states[instant] = state
                var ends = [state.expiresDate, state.gracePeriodExpiresDate, state.revocationDate].compactMap { $0?.millisecondsSince1970 }
                if let end = state.expiresDate?.millisecondsSince1970 {
                    ends.append(end + SubscriptionState.billingRetryWindowMilliseconds)
                }
                named.formUnion(ends.filter { !instants.contains($0) })
            }
            instants.formUnion(named)
            pending = named
        }
        var spans: [Span] = []
        for instant in instants.sorted() {
            guard let state = states[instant] else { continue }
            if let last = spans.last, last.status == state.status, last.isEntitled == state.isEntitled { continue }
            let from = Timestamp(millisecondsSince1970: instant)
            if !spans.isEmpty { spans[spans.count - 1].to = from }
            spans.append(Span(from: from, to: nil, status: state.status, isEntitled: state.isEntitled))
        }
        return spans
    }

    /// Revocations, and product changes between consecutive periods.
    private static func periodMarks(_ periods: [Period], revokers: [String: [Int64]]) -> [Mark] {
        var marks: [Mark] = []
        var previous: Period?
        for period in periods {
            if let revoked = period.revocationDate {
                marks.append(Mark(
                    kind: .revocation, at: revoked, productId: period.productId, previousProductId: nil,
                    reason: period.revocationReason, records: revokers[period.transactionId] ?? period.records))
            }
            if let start = period.start, let before = previous, before.productId != period.productId {
                marks.append(Mark(
                    kind: .productChange, at: start, productId: period.productId, previousProductId: before.productId,
                    reason: nil, records: period.records))
            }
            if period.start != nil { previous = period }
        }
        return marks
    }

    /// Auto-renew turned off or on, and the product the subscription renews as changed: each
    /// renewal info against the one signed before it (of two signed at one instant, the one rule
    /// 1 keeps).
    private static func renewalIntentMarks(
        _ renewalInfos: [(info: StoredRecord.RenewalInfo, copy: LedgerCopy, event: Int64)]
    ) -> [Mark] {
        var kept: [Int64: (info: StoredRecord.RenewalInfo, copy: LedgerCopy, event: Int64)] = [:]
        for item in renewalInfos {
            let instant = item.copy.knownFrom.millisecondsSince1970
            if let known = kept[instant], !item.copy.supersedes(known.copy) { continue }
            kept[instant] = item
        }
        var marks: [Mark] = []
        var previous: StoredRecord.RenewalInfo?
        for (_, item) in kept.sorted(by: { $0.key < $1.key }) {
            let (info, at) = (item.info, item.copy.knownFrom)
            let status = info.autoRenewStatus?.text
            if status != previous?.autoRenewStatus?.text, status == "0" || (status == "1" && previous != nil) {
                marks.append(Mark(
                    kind: status == "0" ? .autoRenewOff : .autoRenewOn, at: at, productId: info.autoRenewProductId,
                    previousProductId: nil, reason: nil, records: [item.event]))
            }
            let renewsAs = info.autoRenewProductId
            let before = previous.map { $0.autoRenewProductId } ?? info.productId
            if let renewsAs, renewsAs != before {
                marks.append(Mark(
                    kind: .renewalProductChange, at: at, productId: renewsAs, previousProductId: before, reason: nil,
                    records: [item.event]))
            }
            previous = info
        }
        return marks
    }

    // MARK: The answer

    /// `{"bundle_id", "environment", "original_transaction_id", "periods", "spans", "marks", "records"}`.
    private enum CodingKeys: String, CodingKey {
        case bundleId, environment, originalTransactionId, periods, spans, marks, records
    }
}

extension SubscriptionTimeline: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key.bundleId, forKey: .bundleId)
        try container.encode(key.environment, forKey: .environment)
        try container.encode(key.originalTransactionId, forKey: .originalTransactionId)
        try container.encode(periods, forKey: .periods)
        try container.encode(spans, forKey: .spans)
        try container.encode(marks, forKey: .marks)
        try container.encode(records, forKey: .records)
    }
}

extension SubscriptionTimeline.Period: Encodable {
    private enum CodingKeys: String, CodingKey {
        case transactionId, productId, start, end, offer, revocationDate, revocationReason, isUpgraded, records
    }

    private struct OfferAnswer: Encodable {
        let type: String?
        let id: String?
        let discountType: String?
        let period: String?
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transactionId, forKey: .transactionId)
        try container.encodeIfPresent(productId, forKey: .productId)
        try container.encodeIfPresent(start?.iso8601, forKey: .start)
        try container.encodeIfPresent(end?.iso8601, forKey: .end)
        try container.encodeIfPresent(
            offer.map { OfferAnswer(type: $0.type, id: $0.id, discountType: $0.discountType, period: $0.period) }, forKey: .offer)
        try container.encodeIfPresent(revocationDate?.iso8601, forKey: .revocationDate)
        try container.encodeIfPresent(revocationReason, forKey: .revocationReason)
        try container.encode(isUpgraded, forKey: .isUpgraded)
        try container.encode(records, forKey: .records)
    }
}

extension SubscriptionTimeline.Span: Encodable {
    private enum CodingKeys: String, CodingKey {
        case from, to, status, entitled, records
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(from.iso8601, forKey: .from)
        try container.encodeIfPresent(to?.iso8601, forKey: .to)
        try container.encode(status.rawValue, forKey: .status)
        try container.encode(isEntitled, forKey: .entitled)
        try container.encode(records, forKey: .records)
    }
}

extension SubscriptionTimeline.Mark: Encodable {
    private enum CodingKeys: String, CodingKey {
        case kind, at, productId, previousProductId, reason, records
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.rawValue, forKey: .kind)
        try container.encode(at.iso8601, forKey: .at)
        try container.encodeIfPresent(productId, forKey: .productId)
        try container.encodeIfPresent(previousProductId, forKey: .previousProductId)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(records, forKey: .records)
    }
}

extension SubscriptionTimeline.Record {
    init(_ identified: StoredInput, _ record: StoredRecord) {
        id = identified.id
        kind = identified.kind
        receivedAt = Timestamp(millisecondsSince1970: identified.receivedAt)
        notificationType = record.notification?.type
        notificationSubtype = record.notification?.subtype
        notificationUUID = record.notification?.uuid
        notificationSignedDate = record.notification?.signedDate?.timestamp
        leafSHA256 = record.chain?.leafSHA256
        rootSHA256 = record.chain?.rootSHA256
        recordJSON = identified.record
    }

    /// How a record of this kind reaches the server: the store does not keep the route, so this
    /// is every route that stores the kind.
    var receivedThrough: String {
        switch kind {
        case "notification": "App Store Server Notifications (POST /appstore/notifications), or recovered from Apple's notification history by reconciliation"
        case "transaction": "your backend (POST /v1/transactions), or the App Store Server API (a purchase by id, a sync)"
        case "renewal_info": "the App Store Server API (a sync)"
        case "receipt": "your backend (POST /v1/transactions or POST /verifyReceipt)"
        default: "the server's API"
        }
    }
}

extension SubscriptionTimeline.Record: Encodable {
    private enum CodingKeys: String, CodingKey {
        case id, kind, receivedAt, receivedThrough, notificationType, notificationSubtype, notificationUUID, notificationSignedDate
        case chain, record
    }

    private struct Chain: Encodable {
        let leafSHA256: String?
        let rootSHA256: String?

        private enum CodingKeys: String, CodingKey {
            case leafSHA256 = "leaf_sha256"
            case rootSHA256 = "root_sha256"
        }
    }

    /// `{"id", "kind", "received_at", "received_through", "notification_type", …, "chain", "record"}`.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(receivedAt.iso8601, forKey: .receivedAt)
        try container.encode(receivedThrough, forKey: .receivedThrough)
        try container.encodeIfPresent(notificationType, forKey: .notificationType)
        try container.encodeIfPresent(notificationSubtype, forKey: .notificationSubtype)
        try container.encodeIfPresent(notificationUUID, forKey: .notificationUUID)
        try container.encodeIfPresent(notificationSignedDate?.iso8601, forKey: .notificationSignedDate)
        let chain = leafSHA256 != nil || rootSHA256 != nil ? Chain(leafSHA256: leafSHA256, rootSHA256: rootSHA256) : nil
        try container.encodeIfPresent(chain, forKey: .chain)
        try container.encode(RenderedJSON(recordJSON), forKey: .record)
    }
}
