// The ledger's stored form written by ReceiptKit's own JSON writer and read by its jansson
// document: the same members and values as its `Codable` form through Foundation's `JSONEncoder`,
// without Foundation's cost on every fold of a stored ledger.

extension EntitlementLedger {
    /// The ledger as compact JSON, to store it and read it back with ``init(jsonBytes:)``.
    ///
    /// The text has the members and values that `JSONEncoder().encode(ledger)` writes (dates as
    /// integer milliseconds since 1970, absent values left out, `version` first), with members in
    /// a fixed order and copies in the ledger's own sorted order: equal ledgers give equal bytes,
    /// and `JSONDecoder` decodes them to an equal ledger.
    ///
    /// - Returns: The UTF-8 JSON text.
    public func jsonBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        // About 400 bytes a transaction copy and 250 a renewal info copy: one allocation for most.
        let copies = transactions.values.reduce(0) { $0 + $1.count } + renewalInfos.values.reduce(0) { $0 + $1.count }
        bytes.reserveCapacity(64 + 448 * copies)
        JSONWriter.append(to: &bytes, pretty: false) { writer in
            writer.object { json in
                json.member("version", Self.formatVersion)
                json.member("transactions") { json in
                    json.array { json in
                        for key in transactions.keys.sorted() {
                            for copy in transactions[key, default: []] {
                                json.element { Self.write(copy, under: key, to: &$0) }
                            }
                        }
                    }
                }
                json.member("renewal_infos") { json in
                    json.array { json in
                        for key in renewalInfos.keys.sorted() {
                            for copy in renewalInfos[key, default: []] {
                                json.element { Self.write(copy, under: key, to: &$0) }
                            }
                        }
                    }
                }
            }
        }
        return bytes
    }

    /// Reads a ledger that ``jsonBytes()`` wrote, or that `JSONEncoder` wrote for its `Codable`
    /// form: the two are the same JSON.
    ///
    /// Reading is strict where `JSONDecoder` is lenient: duplicate members, a byte-order mark
    /// and a number where an integer is expected are rejected. As with `Codable`, an optional
    /// member may be absent or `null`, and a member this format does not define is ignored.
    ///
    /// - Parameter bytes: The UTF-8 JSON text.
    /// - Throws: ``ReceiptKitError`` with code ``ReceiptKitError/Code/malformedLedger`` when the
    ///   text is not a strict JSON object, a member is missing or has the wrong JSON type (the
    ///   reason names it, e.g. `transactions[2].knownFrom`), or its `version` is not the one this
    ///   ReceiptKit writes.
    ///
    /// - Warning: Decoding trusts the encoded data: decode only what your own service encoded and
    ///   stored, never a ledger that reached you from outside.
    public init(jsonBytes bytes: [UInt8]) throws {
        let document = try JSONDocument(
            parsingObject: bytes, code: .malformedLedger, what: "entitlement ledger", allowingNUL: true)
        self = try document.withRoot(code: .malformedLedger) { root in
            let version = try root.required("version", root.int64)
            guard version == Int64(Self.formatVersion) else {
                throw ReceiptKitError(
                    .malformedLedger, "entitlement ledger format \(version) is not \(Self.formatVersion)")
            }
            var ledger = EntitlementLedger()
            let transactions = try root.required("transactions", root.array)
            for index in 0..<transactions.count {
                let (key, copy) = try Self.transaction(transactions.object(at: index))
                ledger.insert(copy, under: key)
            }
            let renewalInfos = try root.required("renewal_infos", root.array)
            for index in 0..<renewalInfos.count {
                let (key, copy) = try Self.renewalInfo(renewalInfos.object(at: index))
                ledger.insert(copy, under: key)
            }
            return ledger
        }
    }

    // MARK: Members

    // One line per member of `StoredTransaction` and `StoredRenewalInfo`, with their names: the
    // `Codable` form is the contract both directions keep.

    static func write(_ copy: LedgerTransaction, under key: SubscriptionKey, to json: inout JSONWriter) {
        json.object { json in
            json.member("key") { json in
                json.object { json in
                    json.member("bundleId", key.bundleId)
                    json.member("environment", key.environment)
                    json.member("originalTransactionId", key.originalTransactionId)
                }
            }
            json.member("transactionId", copy.id.description)
            json.member("knownFrom", copy.knownFrom.millisecondsSince1970)
            json.member("purchaseDate", ifPresent: copy.purchaseDate?.millisecondsSince1970)
            json.member("expiresDate", ifPresent: copy.expiresDate?.millisecondsSince1970)
            json.member("revocationDate", ifPresent: copy.revocationDate?.millisecondsSince1970)
            json.member("isUpgraded", copy.isUpgraded)
            let traits = copy.traits
            json.member("productId", ifPresent: traits.productId)
            json.member("productType", ifPresent: traits.productType)
            json.member("subscriptionGroupId", ifPresent: traits.subscriptionGroupId)
            json.member("revocationReason", ifPresent: traits.revocationReason)
            json.member("ownershipType", ifPresent: traits.ownershipType)
            if let offer = traits.offer {
                json.member("offer") { json in
                    json.object { json in
                        json.member("type", ifPresent: offer.type)
                        json.member("id", ifPresent: offer.id)
                        json.member("discountType", ifPresent: offer.discountType)
                        json.member("period", ifPresent: offer.period)
                    }
                }
            }
            json.member("appAccountToken", ifPresent: traits.appAccountToken)
        }
    }

    static func transaction(_ json: JSONObject) throws -> (SubscriptionKey, LedgerTransaction) {
        let key = try json.required("key", json.object)
        let offer = try json.object("offer").map { offer in
            NormalizedTransaction.Offer(
                type: try offer.string("type"), id: try offer.string("id"),
                discountType: try offer.string("discountType"), period: try offer.string("period"))
        }
        let traits = TransactionTraits(
            productId: try json.string("productId"), productType: try json.string("productType"),
            subscriptionGroupId: try json.string("subscriptionGroupId"),
            revocationReason: try json.string("revocationReason"), ownershipType: try json.string("ownershipType"),
            offer: offer, appAccountToken: try json.string("appAccountToken"))
        let copy = LedgerTransaction(
            id: TransactionID(try json.required("transactionId", json.string)),
            knownFrom: Timestamp(millisecondsSince1970: try json.required("knownFrom", json.int64)),
            purchaseDate: try json.int64("purchaseDate").map(Timestamp.init(millisecondsSince1970:)),
            expiresDate: try json.int64("expiresDate").map(Timestamp.init(millisecondsSince1970:)),
            revocationDate: try json.int64("revocationDate").map(Timestamp.init(millisecondsSince1970:)),
            isUpgraded: try json.required("isUpgraded", json.bool), traits: traits)
        return (SubscriptionKey(
            bundleId: try key.required("bundleId", key.string), environment: try key.required("environment", key.string),
            originalTransactionId: try key.required("originalTransactionId", key.string)), copy)
    }

    static func write(_ copy: LedgerRenewalInfo, under key: RenewalKey, to json: inout JSONWriter) {
        json.object { json in
            json.member("environment", key.environment)
            json.member("originalTransactionId", key.originalTransactionId)
            json.member("knownFrom", copy.knownFrom.millisecondsSince1970)
            json.member("gracePeriodExpiresDate", ifPresent: copy.gracePeriodExpiresDate?.millisecondsSince1970)
            json.member("renewalDate", ifPresent: copy.renewalDate?.millisecondsSince1970)
            json.member("autoRenewStatus", ifPresent: copy.autoRenewStatus.map(Int64.init))
            json.member("expirationIntent", ifPresent: copy.expirationIntent.map(Int64.init))
            json.member("isInBillingRetryPeriod", copy.isInBillingRetryPeriod)
            json.member("productId", ifPresent: copy.traits.productId)
            json.member("autoRenewProductId", ifPresent: copy.traits.autoRenewProductId)
            json.member("appAccountToken", ifPresent: copy.traits.appAccountToken)
        }
    }

    static func renewalInfo(_ json: JSONObject) throws -> (RenewalKey, LedgerRenewalInfo) {
        let key = RenewalKey(
            environment: try json.required("environment", json.string),
            originalTransactionId: try json.required("originalTransactionId", json.string))
        let traits = RenewalTraits(
            productId: try json.string("productId"), autoRenewProductId: try json.string("autoRenewProductId"),
            appAccountToken: try json.string("appAccountToken"))
        return (key, LedgerRenewalInfo(
            knownFrom: Timestamp(millisecondsSince1970: try json.required("knownFrom", json.int64)),
            gracePeriodExpiresDate: try json.int64("gracePeriodExpiresDate").map(Timestamp.init(millisecondsSince1970:)),
            renewalDate: try json.int64("renewalDate").map(Timestamp.init(millisecondsSince1970:)),
            autoRenewStatus: try json.int32("autoRenewStatus"), expirationIntent: try json.int32("expirationIntent"),
            isInBillingRetryPeriod: try json.required("isInBillingRetryPeriod", json.bool), traits: traits))
    }
}

extension JSONWriter {
    /// A member written only when it has a value, as `Codable` leaves out a `nil` optional.
    fileprivate mutating func member(_ name: JSONKey, ifPresent value: String?) {
        if let value { member(name, value) }
    }

    /// A member written only when it has a value, as `Codable` leaves out a `nil` optional.
    fileprivate mutating func member(_ name: JSONKey, ifPresent value: Int64?) {
        if let value { member(name, value) }
    }
}
