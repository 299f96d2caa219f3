import AppStoreServerAPI
import Foundation
import ReceiptKit

/// Signing an offer for the app with the In-App Purchase key, so that the app never holds the
/// key: Apple's promotional offer signature (V1), its promotional offer JWS (V2), and an
/// introductory offer eligibility JWS — whose `allow` the server decides, when the backend does
/// not, from what it has stored (``isEligible(productId:transactionId:customerId:)``).
struct OfferSigning: Sendable {
    /// What to sign.
    enum Offer: Sendable {
        /// A promotional offer, signature V1: a fresh nonce, the server's time.
        case promotional(offerId: String?, appAccountToken: String?)
        /// A promotional offer, V2 (a JWS), optionally bound to a transaction.
        case promotionalV2(offerId: String?, transactionId: String?)
        /// An introductory offer eligibility for a customer's transaction: `allow` as given, or
        /// decided from the stored transactions of `transactionId`'s and `customerId`'s
        /// subscriptions.
        case introductoryEligibility(transactionId: String?, allow: Bool?, customerId: String?)
    }

    /// A signed offer: V1's four values, a V2 JWS, or an eligibility JWS with what it allows.
    enum Signed: Sendable, Equatable {
        case promotional(keyId: String, nonce: String, timestamp: Int64, signature: String)
        case jws(String)
        case introductoryEligibility(jws: String, allow: Bool)
    }

    let key: InAppPurchaseKey
    let store: Store

    /// Signs `offer` of `productId` in the app `bundleId` at `now`.
    ///
    /// - Throws: ``InvalidInput`` for a member the offer needs and does not have (or that is not
    ///   one Apple takes); `StoreError` when the stored transactions cannot be read.
    func sign(_ offer: Offer, bundleId: String, productId: String?, now: Timestamp) async throws -> Signed {
        let productId = try Self.required(productId, "product_id")
        do {
            switch offer {
            case .promotional(let offerId, let appAccountToken):
                let signature = try PromotionalOfferSignatureV1(
                    key: key, bundleId: bundleId, productId: productId, offerId: try Self.required(offerId, "offer_id"),
                    appAccountToken: appAccountToken ?? "", nonce: UUID(), timestamp: now.millisecondsSince1970)
                return .promotional(
                    keyId: signature.keyId, nonce: signature.nonce, timestamp: signature.timestamp, signature: signature.signature)
            case .promotionalV2(let offerId, let transactionId):
                let signer = try AppStoreRequestSigner(key: key, bundleId: bundleId)
                if let transactionId { try AppleSync.checkTransactionId(transactionId) }
                return .jws(try signer.promotionalOfferV2(
                    productId: productId, offerIdentifier: try Self.required(offerId, "offer_id"), transactionId: transactionId,
                    issuedAt: now))
            case .introductoryEligibility(let transactionId, let given, let customerId):
                let transactionId = try Self.required(transactionId, "transaction_id")
                try AppleSync.checkTransactionId(transactionId)
                let allow: Bool
                if let given {
                    allow = given
                } else {
                    allow = try await isEligible(productId: productId, transactionId: transactionId, customerId: customerId)
                }
                let signer = try AppStoreRequestSigner(key: key, bundleId: bundleId)
                return .introductoryEligibility(
                    jws: try signer.introductoryOfferEligibility(
                        productId: productId, allowIntroductoryOffer: allow, transactionId: transactionId, issuedAt: now),
                    allow: allow)
            }
        } catch let error as ReceiptKitError {
            throw InvalidInput(error.message)
        }
    }

    /// Whether the customer may have an introductory offer of `productId`, by ReceiptKit's rule
    /// (``IntroductoryOfferEligibility``) over their stored transactions: those of the keys of
    /// `transactionId` and of the customer's.
    func isEligible(productId: String, transactionId: String, customerId: String?) async throws -> Bool {
        let store = self.store
        let inputs = try await store.run { () -> [StoredInput] in
            var keys = try await store.keys(originalTransactionId: transactionId)
            if let customerId { keys += try await store.keys(customerId: customerId) }
            return keys.isEmpty ? [] : try await store.inputs(touching: keys)
        }
        let transactions = try inputs.flatMap { try StoredRecord($0).transactions ?? [] }
        return IntroductoryOfferEligibility.isEligible(productId: productId, transactions: transactions)
    }

    private static func required(_ value: String?, _ name: String) throws(InvalidInput) -> String {
        guard let value, !value.isEmpty else { throw InvalidInput("the body has no \(name) (a non-empty string)") }
        return value
    }
}
