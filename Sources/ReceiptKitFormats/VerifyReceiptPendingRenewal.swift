public import ReceiptKit

/// One element of `pending_renewal_info` in the shape Apple's verifyReceipt endpoint gave it:
/// a subscription's renewal intent. Every value is a string (`"1"`, `"0"`), the grace period's
/// end is written as `grace_period_expires_date`, `_ms` and `_pst` like every verifyReceipt date,
/// and absent values are omitted. Members come in Apple's order: `auto_renew_product_id`,
/// `original_transaction_id`, `product_id`, `auto_renew_status`, `expiration_intent`,
/// `is_in_billing_retry_period`, `grace_period_expires_date`, `price_consent_status`,
/// `offer_code_ref_name`, `promotional_offer_id`.
public struct VerifyReceiptPendingRenewal: Sendable, Hashable {
    public var originalTransactionId: String
    public var autoRenewProductId: String?
    public var productId: String?
    /// `auto_renew_status` as Apple writes it (`"1"` on, `"0"` off).
    public var autoRenewStatus: String?
    /// `expiration_intent` as Apple writes it (`"1"` … `"5"`).
    public var expirationIntent: String?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Timestamp?
    /// `price_consent_status` as Apple writes it.
    public var priceConsentStatus: String?
    public var offerCodeRefName: String?
    public var promotionalOfferId: String?

    /// An element with only the subscription's original transaction id.
    public init(originalTransactionId: String) {
        self.originalTransactionId = originalTransactionId
    }

    /// The element's JSON text, compact.
    public var json: String {
        var writer = JSONWriter()
        writer.object { json in
            if let autoRenewProductId { json.member("auto_renew_product_id", autoRenewProductId) }
            json.member("original_transaction_id", originalTransactionId)
            if let productId { json.member("product_id", productId) }
            if let autoRenewStatus { json.member("auto_renew_status", autoRenewStatus) }
            if let expirationIntent { json.member("expiration_intent", expirationIntent) }
            if let isInBillingRetryPeriod { json.member("is_in_billing_retry_period", isInBillingRetryPeriod ? "1" : "0") }
            json.verifyReceiptDate("grace_period_expires_date", gracePeriodExpiresDate)
            if let priceConsentStatus { json.member("price_consent_status", priceConsentStatus) }
            if let offerCodeRefName { json.member("offer_code_ref_name", offerCodeRefName) }
            if let promotionalOfferId { json.member("promotional_offer_id", promotionalOfferId) }
        }
        return writer.text
    }
}
