import Foundation
import Hummingbird
import ReceiptKit

/// `POST /v1/transactions`: the app's purchase, forwarded by the backend, as
/// `{"signed_transaction": JWS}` or `{"receipt_data": base64}`, with an optional
/// `"customer_id"`. Verifies and stores it, links its original transaction ids to the customer
/// (or to the transaction's `appAccountToken` when no id is given), and answers
/// `{"customer_id", "duplicate", "record", "entitled", "subscriptions"}` with that customer's
/// entitlements now.
struct TransactionController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.post("transactions") { request, context in
            try await transaction(request, context: context)
        }
    }

    func transaction(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let body = try await environment.body(of: request, upTo: environment.receiptBodyLimit)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw APIError.invalidRequest("the body must be a JSON object with signed_transaction or receipt_data")
        }
        var customerId: String?
        if let value = object["customer_id"], !(value is NSNull) {
            guard let text = value as? String, !text.isEmpty, text.utf8.count <= 256 else {
                throw APIError.invalidRequest("customer_id must be a non-empty string of at most 256 bytes")
            }
            customerId = text
        }
        let outcome: VerificationOutcome
        let signedTransaction = object["signed_transaction"]
        let receiptData = object["receipt_data"]
        if signedTransaction != nil, receiptData != nil {
            throw APIError.invalidRequest("the body has both signed_transaction and receipt_data; send one")
        } else if let signedTransaction {
            guard let jws = signedTransaction as? String else {
                throw APIError.invalidRequest("signed_transaction must be a string")
            }
            do {
                outcome = .verified(try environment.verifier.verify(jws, as: .transaction))
            } catch let error as ReceiptKitError {
                outcome = .rejected(error)
            }
        } else if let receiptData {
            guard let base64 = receiptData as? String else {
                throw APIError.invalidRequest("receipt_data must be a string")
            }
            outcome = environment.verifier.verify(input: Array(base64.utf8), as: .receipt)
        } else {
            throw APIError.invalidRequest("the body has neither signed_transaction nor receipt_data")
        }
        let record = try environment.verified(outcome, context: context)
        let token = record.transactions.lazy.compactMap(\.appAccountToken).first { !$0.isEmpty }
        guard let customer = customerId ?? token else {
            throw APIError.invalidRequest(
                "customer_id is required: the purchase carries no appAccountToken to link it to")
        }
        let event = try Events.event(
            for: record, raw: body, bundleId: environment.bundleId, customerId: customer, receivedAt: environment.now)
        let isNew = try await environment.store(event, context: context)
        let entitlements = try await environment.entitlementsJSON(customerId: customer, at: environment.now)
        var json = entitlements
        json.member("duplicate", !isNew)
        json.member("record", json: event.record)
        return .json(json.text)
    }
}
