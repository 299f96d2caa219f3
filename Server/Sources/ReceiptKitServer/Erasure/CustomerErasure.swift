import Foundation
import ReceiptKit

/// Erasing a customer (`DELETE /v1/customers/{customer_id}`): what is erased, what stays, and
/// what the store's stored texts become.
///
/// Erased, in one transaction (``Erasing``): the customer's links to every subscription, and
/// every link of the `appAccountToken`s those subscriptions' transactions carry (the server links
/// a purchase to its token as to a customer: the token stands for the same person), so that the
/// subscriptions are linked to no one; their consent to share consumption data; their ids in
/// `customer_ids` of every feed event and webhook body of those subscriptions; and the customer
/// id inside the bodies of purchases stored before the id was kept apart from Apple's bytes.
///
/// Kept: the subscriptions and everything Apple signed (inputs, transaction copies, the states and
/// the events' `subscription`), which the states are computed from and which cannot be altered
/// without breaking Apple's signature — an `appAccountToken` included. Nothing new is emitted:
/// no subscription's state changes, and an event naming the customer would store the id the
/// deletion erases.
package enum CustomerErasure {
    /// What a deletion did: the subscriptions now linked to no one through this customer, and
    /// whether Apple's signed data still carries the id as an `appAccountToken`.
    struct Outcome: Sendable, Equatable {
        /// The subscriptions the customer, or one of their tokens, was linked to.
        var keys: [SubscriptionKey]
        /// Whether a transaction of those subscriptions carries the customer id itself as its
        /// `appAccountToken`, which is Apple's signed data and stays.
        var idInAppleData: Bool
    }

    /// An event's JSON (a `change_events` payload, or a webhook's body) without the erased ids in
    /// its `customer_ids`, or `nil` when it names none of them.
    ///
    /// The event was written by ``FeedEvent/json(id:)``: its `customer_ids` member is replaced in
    /// place, every other byte kept. A text written otherwise is re-encoded whole.
    ///
    /// - Throws: ``StoreError`` when the text is not a JSON object (the store is damaged).
    package static func redacting(_ erased: Set<String>, from event: String) throws -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any] else {
            throw StoreError.damaged("a stored event is not a JSON object")
        }
        guard let ids = object["customer_ids"] as? [String], ids.contains(where: { erased.contains($0) }) else { return nil }
        let kept = ids.filter { !erased.contains($0) }
        let member = #""customer_ids":"#
        let written = member + "[" + ids.map(AnswerEncoder.quoted).joined(separator: ",") + "]"
        if let range = event.range(of: written) {
            return event.replacingCharacters(in: range, with: member + "[" + kept.map(AnswerEncoder.quoted).joined(separator: ",") + "]")
        }
        var rewritten = object
        rewritten["customer_ids"] = kept
        let data = try JSONSerialization.data(withJSONObject: rewritten, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// What is stored of a purchase's body as the server received it before its customer id was
    /// kept apart: Apple's signed bytes alone (``Ingestion/Purchase/signedBytes``), or `nil` when
    /// the body carries no `customer_id` (stored as it should be).
    ///
    /// - Throws: ``StoreError`` when it carries one but is not a purchase body.
    static func applePart(of body: [UInt8]) throws -> [UInt8]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            // Apple's bytes alone (a JWS or a receipt's base64) are not JSON.
            return nil
        }
        guard object["customer_id"] != nil else { return nil }
        if let jws = object["signed_transaction"] as? String { return Ingestion.Purchase.signedTransaction(jws).signedBytes }
        if let receipt = object["receipt_data"] as? String { return Ingestion.Purchase.receipt(receipt).signedBytes }
        throw StoreError.damaged("a stored purchase names a customer but carries neither signed_transaction nor receipt_data")
    }
}

/// `DELETE /v1/customers/{customer_id}`'s answer: `{"customer_id", "subscriptions": [key, …],
/// "app_account_token_kept"}` — the subscriptions the customer was linked to, which stay, linked
/// to no one, and whether Apple's signed data carries the id as an `appAccountToken`.
struct ErasureAnswer: Encodable {
    let customerId: String
    let subscriptions: [SubscriptionKeyAnswer]
    let appAccountTokenKept: Bool

    init(customerId: String, outcome: CustomerErasure.Outcome) {
        self.customerId = customerId
        subscriptions = outcome.keys.map(SubscriptionKeyAnswer.init)
        appAccountTokenKept = outcome.idInAppleData
    }
}
