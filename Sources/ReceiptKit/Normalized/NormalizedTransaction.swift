/// One purchase in ReceiptKit's normalized schema: the same for a StoreKit 2 transaction JWS
/// and for an in-app purchase of a legacy receipt.
///
/// Enumerations use snake_case names for the values Apple documents and Apple's raw value for
/// any other; `nil` (JSON `null`) means the source gave nothing. A record renders exactly the members
/// listed in `docs/output-schema.md`, in that order.
public struct NormalizedTransaction: Sendable, Hashable {
    /// Where the purchase came from.
    public enum Source: String, Sendable, Hashable {
        /// A StoreKit 2 transaction JWS.
        case jws
        /// An in-app purchase of a legacy receipt.
        case receipt
    }

    /// A subscription offer applied to the purchase.
    public struct Offer: Sendable, Hashable, Codable {
        /// `introductory`, `promotional`, `offer_code`, `win_back`, or Apple's raw number.
        public let type: String?
        /// The offer identifier (a promotional offer or offer code name).
        public let id: String?
        /// `free_trial`, `pay_as_you_go`, `pay_up_front`, `one_time`, or Apple's raw value.
        public let discountType: String?
        /// The offer's ISO 8601 duration, e.g. `P1M`.
        public let period: String?
    }

    /// A price in thousandths of the currency's unit.
    public struct Price: Sendable, Hashable {
        /// The price in milliunits: 9990 is 9.99.
        public let milliunits: Int64
        /// The ISO 4217 currency code.
        public let currency: String?
    }

    public let source: Source
    public let environment: String?
    public let bundleId: String?
    public let productId: String?
    /// `auto_renewable_subscription`, `non_renewing_subscription`, `consumable`,
    /// `non_consumable`, or Apple's raw value.
    public let productType: String?
    public let transactionId: String?
    public let originalTransactionId: String?
    public let webOrderLineItemId: String?
    public let subscriptionGroupId: String?
    public let quantity: Int64?
    public let purchaseDate: Timestamp?
    public let originalPurchaseDate: Timestamp?
    public let expiresDate: Timestamp?
    public let revocationDate: Timestamp?
    /// `refunded_for_other_reason`, `refunded_due_to_issue`, or Apple's raw number.
    public let revocationReason: String?
    public let isUpgraded: Bool?
    /// `purchased`, `family_shared`, or Apple's raw value.
    public let ownershipType: String?
    /// `purchase`, `renewal`, or Apple's raw value.
    public let transactionReason: String?
    public let offer: Offer?
    public let price: Price?
    public let storefront: String?
    public let storefrontId: String?
    public let appAccountToken: String?
    public let appTransactionId: String?
    public let signedDate: Timestamp?
}

extension NormalizedTransaction {
    /// Normalizes a StoreKit 2 transaction.
    ///
    /// - Parameter transaction: The verified transaction payload.
    public init(_ transaction: JWSTransaction) {
        source = .jws
        environment = transaction.rawEnvironment
        bundleId = transaction.bundleId
        productId = transaction.productId
        productType = Normalization.productType.normalize(transaction.rawType)
        transactionId = transaction.transactionId
        originalTransactionId = transaction.originalTransactionId
        webOrderLineItemId = transaction.webOrderLineItemId
        subscriptionGroupId = transaction.subscriptionGroupIdentifier
        quantity = transaction.quantity.map(Int64.init)
        purchaseDate = transaction.purchaseDate
        originalPurchaseDate = transaction.originalPurchaseDate
        expiresDate = transaction.expiresDate
        revocationDate = transaction.revocationDate
        revocationReason = Normalization.revocationReason(transaction.revocationReason)
        isUpgraded = transaction.isUpgraded
        ownershipType = Normalization.ownershipType.normalize(transaction.rawInAppOwnershipType)
        transactionReason = Normalization.transactionReason.normalize(transaction.rawTransactionReason)
        offer = Offer(
            type: transaction.offerType, id: transaction.offerIdentifier,
            discountType: transaction.rawOfferDiscountType, period: transaction.offerPeriod)
        price = transaction.price.map { Price(milliunits: $0, currency: transaction.currency) }
        storefront = transaction.storefront
        storefrontId = transaction.storefrontId
        appAccountToken = transaction.appAccountToken
        appTransactionId = transaction.appTransactionId
        signedDate = transaction.signedDate
    }

    /// Renders the normalized transaction as a JSON object.
    func write(to writer: inout JSONWriter) {
        writer.object { json in
            json.member("source", source.rawValue)
            json.member("environment", environment)
            json.member("bundle_id", bundleId)
            json.member("product_id", productId)
            json.member("product_type", productType)
            json.member("transaction_id", transactionId)
            json.member("original_transaction_id", originalTransactionId)
            json.member("web_order_line_item_id", webOrderLineItemId)
            json.member("subscription_group_id", subscriptionGroupId)
            json.member("quantity", quantity)
            json.member("purchase_date", purchaseDate)
            json.member("original_purchase_date", originalPurchaseDate)
            json.member("expires_date", expiresDate)
            json.member("revocation_date", revocationDate)
            json.member("revocation_reason", revocationReason)
            json.member("is_upgraded", isUpgraded)
            json.member("ownership_type", ownershipType)
            json.member("transaction_reason", transactionReason)
            json.objectMember("offer", offer) { json, offer in offer.write(to: &json) }
            json.objectMember("price", price) { json, price in
                json.member("milliunits", price.milliunits)
                json.member("currency", price.currency)
            }
            json.member("storefront", storefront)
            json.member("storefront_id", storefrontId)
            json.member("app_account_token", appAccountToken)
            json.member("app_transaction_id", appTransactionId)
            json.member("signed_date", signedDate)
        }
    }
}

extension NormalizedTransaction.Offer {
    /// Normalizes Apple's offer members; `nil` when all are absent.
    init?(type: Int32?, id: String?, discountType: String?, period: String?) {
        guard type != nil || id != nil || discountType != nil || period != nil else { return nil }
        self.type = Normalization.offerType(type)
        self.id = id
        self.discountType = Normalization.offerDiscountType.normalize(discountType)
        self.period = period
    }

    /// Creates an offer from already-normalized values.
    init(normalizedType: String?, id: String?, discountType: String?, period: String?) {
        self.type = normalizedType
        self.id = id
        self.discountType = discountType
        self.period = period
    }

    /// Writes the offer's members into the current object.
    func write(to json: inout JSONWriter) {
        json.member("type", type)
        json.member("id", id)
        json.member("discount_type", discountType)
        json.member("period", period)
    }
}

// MARK: Reading a record back

extension NormalizedTransaction: Decodable {
    private enum CodingKeys: String, CodingKey {
        case source, environment, quantity, offer, price, storefront
        case bundleId = "bundle_id"
        case productId = "product_id"
        case productType = "product_type"
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case webOrderLineItemId = "web_order_line_item_id"
        case subscriptionGroupId = "subscription_group_id"
        case purchaseDate = "purchase_date"
        case originalPurchaseDate = "original_purchase_date"
        case expiresDate = "expires_date"
        case revocationDate = "revocation_date"
        case revocationReason = "revocation_reason"
        case isUpgraded = "is_upgraded"
        case ownershipType = "ownership_type"
        case transactionReason = "transaction_reason"
        case storefrontId = "storefront_id"
        case appAccountToken = "app_account_token"
        case appTransactionId = "app_transaction_id"
        case signedDate = "signed_date"
    }

    /// The schema's `offer` object, its members as the schema names them.
    private struct SchemaOffer: Decodable {
        let type: String?
        let id: String?
        let discountType: String?
        let period: String?

        private enum CodingKeys: String, CodingKey {
            case type, id, period
            case discountType = "discount_type"
        }
    }

    /// The schema's `price` object.
    private struct SchemaPrice: Decodable {
        let milliunits: Int64
        let currency: String?
    }

    /// Reads back a transaction of a record's `transactions` array, as ReceiptKit renders it
    /// (`docs/output-schema.md`): decoding a rendered transaction gives a value equal to the one
    /// rendered.
    ///
    /// Member names are matched as the schema spells them, in snake_case, so decode with the
    /// default key strategy (not `convertFromSnakeCase`). A missing member reads as `null`; dates
    /// are the schema's RFC 3339 text (`2025-06-01T12:00:00.000Z`).
    ///
    /// - Parameter decoder: A decoder positioned at the transaction's JSON object.
    /// - Throws: `DecodingError` when `source` is missing or unknown, a member has another JSON
    ///   type than the schema's, or a date is not RFC 3339 text.
    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: CodingKeys.self)
        func date(_ key: CodingKeys) throws -> Timestamp? {
            guard let text = try json.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let date = Timestamp(rfc3339: text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: json, debugDescription: "not an RFC 3339 date: \(text)")
            }
            return date
        }
        let sourceName = try json.decode(String.self, forKey: .source)
        guard let source = Source(rawValue: sourceName) else {
            throw DecodingError.dataCorruptedError(forKey: .source, in: json, debugDescription: "not a source: \(sourceName)")
        }
        self.source = source
        environment = try json.decodeIfPresent(String.self, forKey: .environment)
        bundleId = try json.decodeIfPresent(String.self, forKey: .bundleId)
        productId = try json.decodeIfPresent(String.self, forKey: .productId)
        productType = try json.decodeIfPresent(String.self, forKey: .productType)
        transactionId = try json.decodeIfPresent(String.self, forKey: .transactionId)
        originalTransactionId = try json.decodeIfPresent(String.self, forKey: .originalTransactionId)
        webOrderLineItemId = try json.decodeIfPresent(String.self, forKey: .webOrderLineItemId)
        subscriptionGroupId = try json.decodeIfPresent(String.self, forKey: .subscriptionGroupId)
        quantity = try json.decodeIfPresent(Int64.self, forKey: .quantity)
        purchaseDate = try date(.purchaseDate)
        originalPurchaseDate = try date(.originalPurchaseDate)
        expiresDate = try date(.expiresDate)
        revocationDate = try date(.revocationDate)
        revocationReason = try json.decodeIfPresent(String.self, forKey: .revocationReason)
        isUpgraded = try json.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        ownershipType = try json.decodeIfPresent(String.self, forKey: .ownershipType)
        transactionReason = try json.decodeIfPresent(String.self, forKey: .transactionReason)
        offer = try json.decodeIfPresent(SchemaOffer.self, forKey: .offer).map {
            Offer(normalizedType: $0.type, id: $0.id, discountType: $0.discountType, period: $0.period)
        }
        price = try json.decodeIfPresent(SchemaPrice.self, forKey: .price).map {
            Price(milliunits: $0.milliunits, currency: $0.currency)
        }
        storefront = try json.decodeIfPresent(String.self, forKey: .storefront)
        storefrontId = try json.decodeIfPresent(String.self, forKey: .storefrontId)
        appAccountToken = try json.decodeIfPresent(String.self, forKey: .appAccountToken)
        appTransactionId = try json.decodeIfPresent(String.self, forKey: .appTransactionId)
        signedDate = try date(.signedDate)
    }
}
