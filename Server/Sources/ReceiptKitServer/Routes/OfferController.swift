import Hummingbird
import ReceiptKit

/// `POST /v1/offers/signature`: signs an offer for the app with the In-App Purchase key, so the
/// app never holds the key (the App Store Server API configured; 409 `reconciliation_off`
/// otherwise). The body:
///
/// - `{"type": "promotional_offer", "product_id", "offer_id", "app_account_token"?}`: Apple's
///   promotional offer signature V1 with a fresh nonce and the server's time, answered as
///   `{"key_id", "nonce", "timestamp", "signature"}`;
/// - `{"type": "promotional_offer_v2", "product_id", "offer_id", "transaction_id"?}`: `{"jws"}`;
/// - `{"type": "intro_eligibility", "product_id", "transaction_id", "allow_introductory_offer"?,
///   "customer_id"?}`: `{"jws", "allow_introductory_offer"}`. Without
///   `allow_introductory_offer` the service decides from what it has stored for the
///   subscription of `transaction_id` (an original transaction id) and the keys linked to
///   `customer_id`: eligible unless a transaction of theirs in the product's subscription group
///   had an introductory offer or a free trial.
///
/// `bundle_id` names the app when several are served. A missing or empty member is 400
/// `invalid_request`.
struct OfferController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.post, "offers/signature", scope: .write) { request, _ in
            try await signature(request)
        }
    }

    func signature(_ request: Request) async throws -> Response {
        guard let apple = environment.apple else { throw AppleFailure.notConfigured }
        let body = try await environment.body(of: request, upTo: 16 * 1024)
        let fields = try RequestBody.decode(OfferSignatureRequest.self, from: body)
        let offer: OfferSigning.Offer
        switch fields.type {
        case "promotional_offer":
            offer = .promotional(offerId: fields.offerId, appAccountToken: fields.appAccountToken)
        case "promotional_offer_v2":
            offer = .promotionalV2(offerId: fields.offerId, transactionId: fields.transactionId)
        case "intro_eligibility":
            offer = .introductoryEligibility(
                transactionId: fields.transactionId, allow: fields.allowIntroductoryOffer, customerId: fields.customerId)
        default:
            throw APIError.invalidRequest(
                "type is \"\(fields.type)\"; expected promotional_offer, promotional_offer_v2 or intro_eligibility")
        }
        let signing = OfferSigning(key: apple.key, store: environment.store)
        let signed = try await signing.sign(
            offer, bundleId: try apple.bundleId(fields.bundleId), productId: fields.productId, now: environment.now)
        return try .json(OfferSignatureAnswer(signed))
    }
}

/// The body of `POST /v1/offers/signature`.
struct OfferSignatureRequest: Decodable, RequestFields {
    var type: String
    var productId: String?
    var offerId: String?
    var appAccountToken: String?
    var transactionId: String?
    var allowIntroductoryOffer: Bool?
    var customerId: String?
    /// The app the offer is of (required when several are served).
    var bundleId: String?

    typealias Fields = CodingKeys
    enum CodingKeys: String, CodingKey, CaseIterable {
        case type
        case productId = "product_id"
        case offerId = "offer_id"
        case appAccountToken = "app_account_token"
        case transactionId = "transaction_id"
        case allowIntroductoryOffer = "allow_introductory_offer"
        case customerId = "customer_id"
        case bundleId = "bundle_id"
    }
}

/// A signed offer: `{"key_id", "nonce", "timestamp", "signature"}` (promotional offer V1),
/// `{"jws"}` (V2), or `{"jws", "allow_introductory_offer"}` (introductory offer eligibility).
struct OfferSignatureAnswer: Encodable {
    let signed: OfferSigning.Signed

    init(_ signed: OfferSigning.Signed) {
        self.signed = signed
    }

    private enum CodingKeys: String, CodingKey {
        case nonce, timestamp, signature, jws
        case keyId = "key_id"
        case allowIntroductoryOffer = "allow_introductory_offer"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch signed {
        case .promotional(let keyId, let nonce, let timestamp, let signature):
            try container.encode(keyId, forKey: .keyId)
            try container.encode(nonce, forKey: .nonce)
            try container.encode(timestamp, forKey: .timestamp)
            try container.encode(signature, forKey: .signature)
        case .jws(let jws):
            try container.encode(jws, forKey: .jws)
        case .introductoryEligibility(let jws, let allow):
            try container.encode(jws, forKey: .jws)
            try container.encode(allow, forKey: .allowIntroductoryOffer)
        }
    }
}
