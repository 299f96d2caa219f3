import AppStoreServerAPI
import Foundation
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
        guard let apple = environment.apple else { throw AppleAPI.notConfigured }
        let body = try await environment.body(of: request, upTo: 16 * 1024)
        let fields = try RequestBody.decode(OfferSignatureRequest.self, from: body)
        let key = apple.key
        let bundleId = try apple.bundleId(fields.bundleId)
        let now = environment.now
        let productId = try Self.required(fields.productId, "product_id")
        let answer: OfferSignatureAnswer
        do {
            switch fields.type {
            case "promotional_offer":
                let nonce = UUID()
                let signature = try PromotionalOfferSignatureV1(
                    key: key, bundleId: bundleId, productId: productId,
                    offerId: try Self.required(fields.offerId, "offer_id"), appAccountToken: fields.appAccountToken ?? "",
                    nonce: nonce, timestamp: now.millisecondsSince1970)
                answer = .promotionalOffer(
                    keyId: signature.keyId, nonce: signature.nonce, timestamp: signature.timestamp, signature: signature.signature)
            case "promotional_offer_v2":
                let signer = try AppStoreRequestSigner(key: key, bundleId: bundleId)
                if let id = fields.transactionId { try AppleSync.checkTransactionId(id) }
                answer = .jws(try signer.promotionalOfferV2(
                    productId: productId, offerIdentifier: try Self.required(fields.offerId, "offer_id"),
                    transactionId: fields.transactionId, issuedAt: now))
            case "intro_eligibility":
                let transactionId = try Self.required(fields.transactionId, "transaction_id")
                try AppleSync.checkTransactionId(transactionId)
                let allow: Bool
                if let given = fields.allowIntroductoryOffer {
                    allow = given
                } else {
                    allow = try await isEligible(productId: productId, transactionId: transactionId, customerId: fields.customerId)
                }
                let signer = try AppStoreRequestSigner(key: key, bundleId: bundleId)
                answer = .introductoryOfferEligibility(
                    jws: try signer.introductoryOfferEligibility(
                        productId: productId, allowIntroductoryOffer: allow, transactionId: transactionId, issuedAt: now),
                    allow: allow)
            default:
                throw APIError.invalidRequest(
                    "type is \"\(fields.type)\"; expected promotional_offer, promotional_offer_v2 or intro_eligibility")
            }
        } catch let error as ReceiptKitError {
            throw APIError.invalidRequest(error.message)
        }
        return try .json(answer)
    }

    /// Whether the customer may have an introductory offer of `productId`, by ReceiptKit's rule
    /// (``IntroductoryOfferEligibility``) over their stored transactions: those of the keys of
    /// `transactionId` and of the customer's.
    func isEligible(productId: String, transactionId: String, customerId: String?) async throws -> Bool {
        let store = environment.store
        let inputs = try await environment.read { () -> [StoredInput] in
            var keys = try await store.keys(originalTransactionId: transactionId)
            if let customerId { keys += try await store.keys(customerId: customerId) }
            return keys.isEmpty ? [] : try await store.inputs(touching: keys)
        }
        let transactions = try inputs.flatMap { try StoredRecord($0).transactions ?? [] }
        return IntroductoryOfferEligibility.isEligible(productId: productId, transactions: transactions)
    }

    static func required(_ value: String?, _ name: String) throws(APIError) -> String {
        guard let value, !value.isEmpty else { throw APIError.invalidRequest("the body has no \(name) (a non-empty string)") }
        return value
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
enum OfferSignatureAnswer: Encodable {
    case promotionalOffer(keyId: String, nonce: String, timestamp: Int64, signature: String)
    case jws(String)
    case introductoryOfferEligibility(jws: String, allow: Bool)

    private enum CodingKeys: String, CodingKey {
        case nonce, timestamp, signature, jws
        case keyId = "key_id"
        case allowIntroductoryOffer = "allow_introductory_offer"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .promotionalOffer(let keyId, let nonce, let timestamp, let signature):
            try container.encode(keyId, forKey: .keyId)
            try container.encode(nonce, forKey: .nonce)
            try container.encode(timestamp, forKey: .timestamp)
            try container.encode(signature, forKey: .signature)
        case .jws(let jws):
            try container.encode(jws, forKey: .jws)
        case .introductoryOfferEligibility(let jws, let allow):
            try container.encode(jws, forKey: .jws)
            try container.encode(allow, forKey: .allowIntroductoryOffer)
        }
    }
}
