import AppStoreServerAPI
import Foundation
public import ReceiptKit

/// A `CONSUMPTION_REQUEST` notification: Apple asks, for a refund request, how much of the
/// purchase was consumed, and takes the answer for 12 hours.
public struct ConsumptionNotice: Sendable, Hashable {
    /// The transaction the customer asked a refund for.
    public var transactionId: String
    /// Its subscription or purchase.
    public var key: SubscriptionKey
    /// Its product type, as the transaction record names it (`consumable`,
    /// `auto_renewable_subscription`, …): what the answer may carry depends on it.
    public var productType: String?
    /// Apple's `consumptionRequestReason` (`UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, …), raw.
    public var reason: String?
    /// The notification's UUID.
    public var notificationUUID: String
    /// When Apple signed the notification, in milliseconds.
    public var requestedAt: Int64

    /// How long Apple takes an answer: 12 hours from the request.
    public static let answerWindow: Int64 = 12 * 3_600_000

    /// The last instant an answer is taken.
    public var deadline: Int64 { requestedAt + Self.answerWindow }

    /// The notice a verified record carries, if it is a consumption request about a transaction.
    static func of(_ record: VerificationRecord, bundleId: String, receivedAt: Timestamp) -> ConsumptionNotice? {
        guard let notification = record.notification, notification.rawNotificationType == "CONSUMPTION_REQUEST",
              let uuid = notification.notificationUUID, let transaction = record.transactions.first,
              let transactionId = transaction.transactionId, let key = SubscriptionKey(transaction)
        else { return nil }
        return ConsumptionNotice(
            transactionId: transactionId, key: key, productType: transaction.productType,
            reason: notification.data?.rawConsumptionRequestReason, notificationUUID: uuid,
            requestedAt: (notification.signedDate ?? receivedAt).millisecondsSince1970)
    }

}

extension ConsumptionNotice: Encodable {
    private enum CodingKeys: String, CodingKey {
        case transactionId, reason, productType, requestedAt, deadline
    }

    /// The `consumption_request` member of a `consumption.requested` event:
    /// `{"transaction_id", "reason", "product_type", "requested_at", "deadline"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transactionId, forKey: .transactionId)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(productType, forKey: .productType)
        try container.encode(Timestamp(millisecondsSince1970: requestedAt).iso8601, forKey: .requestedAt)
        try container.encode(Timestamp(millisecondsSince1970: deadline).iso8601, forKey: .deadline)
    }
}
