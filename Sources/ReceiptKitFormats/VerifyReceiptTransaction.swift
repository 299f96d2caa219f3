public import ReceiptKit

/// One transaction in the shape Apple's verifyReceipt endpoint gave it: an element of the
/// receipt's `in_app` array or of `latest_receipt_info`.
///
/// The element is rendered from a `NormalizedTransaction` by the rules Apple's own
/// responses follow: numbers and flags are strings (`"1"`, `"true"`), every date comes as `X`
/// (`yyyy-MM-dd HH:mm:ss Etc/GMT`), `X_ms` and `X_pst` (`America/Los_Angeles`), absent values and
/// a web order line item id of 0 are omitted, `is_trial_period` is always present. Members come in
/// Apple's order: `quantity`, `product_id`, `transaction_id`, `original_transaction_id`,
/// `purchase_date`, `original_purchase_date`, `expires_date`, `cancellation_date`,
/// `web_order_line_item_id`, `is_trial_period`, `is_in_intro_offer_period`,
/// `cancellation_reason`, `promotional_offer_id`, `offer_code_ref_name`,
/// `subscription_group_identifier`, `is_upgraded`, `in_app_ownership_type`, `app_account_token`.
///
/// Two members are not in the normalized transaction as Apple wrote them, so they are values of
/// their own, set from the transaction by the initializers and open to the caller:
/// ``isInIntroOfferPeriod`` and ``cancellationDate``.
public struct VerifyReceiptTransaction: Sendable, Hashable {
    /// The transaction rendered.
    public var transaction: NormalizedTransaction

    /// `is_in_intro_offer_period`, or `nil` to omit the member.
    ///
    /// ``init(_:)`` sets it from the offer: `true` for an introductory offer that is not a free
    /// trial, otherwise `false`. ``init(_:of:)`` keeps the receipt's attribute 1719 as written,
    /// `nil` where the receipt has none (Apple writes it for subscriptions only).
    public var isInIntroOfferPeriod: Bool?

    /// `cancellation_date`: when the purchase was refunded or revoked, or `nil` when it was not.
    ///
    /// The initializers set it to the transaction's `revocationDate`. A caller that knows of a
    /// revocation the transaction does not carry (a `REFUND` notification whose transaction has
    /// no revocation date) sets it. `cancellation_reason` is written only with a cancellation
    /// date.
    public var cancellationDate: Timestamp?

    /// The element of `latest_receipt_info` for a transaction.
    ///
    /// - Parameter transaction: A normalized transaction, from a StoreKit 2 JWS or a receipt.
    public init(_ transaction: NormalizedTransaction) {
        self.transaction = transaction
        isInIntroOfferPeriod = transaction.offer?.type == "introductory" && transaction.offer?.discountType != "free_trial"
        cancellationDate = transaction.revocationDate
    }

    /// The element of `receipt.in_app` for an in-app purchase of a legacy receipt: its normalized
    /// transaction, with `is_in_intro_offer_period` as the receipt wrote it.
    ///
    /// - Parameters:
    ///   - purchase: The in-app purchase.
    ///   - receipt: The receipt it belongs to.
    public init(_ purchase: InAppPurchase, of receipt: AppReceipt) {
        self.init(NormalizedTransaction(purchase, of: receipt))
        isInIntroOfferPeriod = purchase.isInIntroOfferPeriod
    }

    /// The element's JSON text, compact.
    public var json: String {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.text
    }

    /// Writes the element as a JSON object.
    func write(to writer: inout JSONWriter) {
        let transaction = transaction
        let offer = transaction.offer
        writer.object { json in
            if let quantity = transaction.quantity { json.member("quantity", String(quantity)) }
            if let productId = transaction.productId { json.member("product_id", productId) }
            if let transactionId = transaction.transactionId { json.member("transaction_id", transactionId) }
            if let originalTransactionId = transaction.originalTransactionId {
                json.member("original_transaction_id", originalTransactionId)
            }
            json.verifyReceiptDate("purchase_date", transaction.purchaseDate)
            json.verifyReceiptDate("original_purchase_date", transaction.originalPurchaseDate)
            json.verifyReceiptDate("expires_date", transaction.expiresDate)
            json.verifyReceiptDate("cancellation_date", cancellationDate)
            if let webOrderLineItemId = transaction.webOrderLineItemId, webOrderLineItemId != "0" {
                json.member("web_order_line_item_id", webOrderLineItemId)
            }
            json.member("is_trial_period", offer?.discountType == "free_trial" ? "true" : "false")
            if let isInIntroOfferPeriod { json.member("is_in_intro_offer_period", isInIntroOfferPeriod ? "true" : "false") }
            if cancellationDate != nil, let reason = transaction.revocationReason {
                // Apple's codes: 1 for an issue in the app, 0 for another reason.
                switch reason {
                case "refunded_due_to_issue": json.member("cancellation_reason", "1")
                case "refunded_for_other_reason": json.member("cancellation_reason", "0")
                default: json.member("cancellation_reason", reason)
                }
            }
            if offer?.type == "promotional", let id = offer?.id { json.member("promotional_offer_id", id) }
            if offer?.type == "offer_code", let id = offer?.id { json.member("offer_code_ref_name", id) }
            if let group = transaction.subscriptionGroupId { json.member("subscription_group_identifier", group) }
            if transaction.isUpgraded == true { json.member("is_upgraded", "true") }
            if let ownership = transaction.ownershipType { json.member("in_app_ownership_type", ownership.uppercased()) }
            if let token = transaction.appAccountToken { json.member("app_account_token", token) }
        }
    }
}
