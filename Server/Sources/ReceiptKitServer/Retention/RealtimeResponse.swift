import AppStoreServerAPI
import Foundation
import ReceiptKit

/// Apple's `RealtimeResponseBody`, what the Get Retention Message endpoint answers: one of
/// `{"message": {"messageIdentifier"}}`, `{"alternateProduct": {"messageIdentifier", "productId"}}`
/// and `{"promotionalOffer": {"messageIdentifier", "promotionalOfferSignatureV2"}}`, or `{}` for a
/// `default_message` answer and when no rule answers (Apple then shows the product's default
/// message). Apple's member names, in camelCase: written with Foundation's encoder, not the
/// server's snake_case ``AnswerEncoder``.
struct RealtimeResponseBody: Encodable, Sendable, Hashable {
    struct Message: Encodable, Sendable, Hashable {
        let messageIdentifier: String
    }

    struct AlternateProduct: Encodable, Sendable, Hashable {
        let messageIdentifier: String
        let productId: String
    }

    struct PromotionalOffer: Encodable, Sendable, Hashable {
        let messageIdentifier: String
        /// The offer signed with the In-App Purchase key (``AppStoreRequestSigner/promotionalOfferV2(productId:offerIdentifier:transactionId:issuedAt:nonce:)``).
        let promotionalOfferSignatureV2: String
    }

    var message: Message?
    var alternateProduct: AlternateProduct?
    var promotionalOffer: PromotionalOffer?

    /// The body's JSON text; members that are `nil` are left out.
    func json() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }
}

/// The `retention_request` member of a `retention.requested` event: the request, and what it was
/// answered.
///
/// `{"request_identifier", "product_id", "user_locale", "storefront", "signed_date", "rule",
/// "answer": {"kind", "message_id", "product_id", "offer_id"}}`: `rule` is the position (1-based)
/// of the rule that answered in the rules file, `null` when none did; `answer.kind` is `message`,
/// `alternate_product`, `promotional_offer`, `default_message` or `none` (no rule answered); `answer.product_id` is the product suggested
/// (a switch-plan message) or the product the offer was signed for; members that do not apply are
/// `null`.
struct RetentionRequestNotice: Sendable, Hashable {
    /// Apple's `requestIdentifier`.
    var requestIdentifier: String?
    /// The request's product.
    var productId: String
    /// The request's `userLocale`.
    var userLocale: String?
    /// The storefront of the subscription's transaction received last, when a rule read it.
    var storefront: String?
    /// When Apple signed the request.
    var signedDate: Timestamp?
    /// The position of the rule that answered, or `nil`.
    var rule: Int?
    /// The answer, or `nil`: `{}`.
    var answer: RetentionAnswer?
    /// The product a promotional offer was signed for (the rule's, or the request's).
    var offerProductId: String?
}

extension RetentionRequestNotice: Encodable {
    private enum CodingKeys: String, CodingKey {
        case requestIdentifier, productId, userLocale, storefront, signedDate, rule, answer
    }

    private enum AnswerKeys: String, CodingKey {
        case kind, messageId, productId, offerId
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(requestIdentifier, forKey: .requestIdentifier)
        try container.encode(productId, forKey: .productId)
        try container.encode(userLocale, forKey: .userLocale)
        try container.encode(storefront, forKey: .storefront)
        try container.encode(signedDate?.iso8601, forKey: .signedDate)
        try container.encode(rule, forKey: .rule)
        var answer = container.nestedContainer(keyedBy: AnswerKeys.self, forKey: .answer)
        try answer.encode(self.answer?.kind ?? "none", forKey: .kind)
        try answer.encode(self.answer?.message?.value, forKey: .messageId)
        switch self.answer {
        case .alternateProduct(_, let productId)?:
            try answer.encode(productId, forKey: .productId)
            try answer.encode(String?.none, forKey: .offerId)
        case .promotionalOffer(_, let offerId, _)?:
            try answer.encode(offerProductId, forKey: .productId)
            try answer.encode(offerId, forKey: .offerId)
        default:
            try answer.encode(String?.none, forKey: .productId)
            try answer.encode(String?.none, forKey: .offerId)
        }
    }
}
