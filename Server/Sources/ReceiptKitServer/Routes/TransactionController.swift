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
        let fields = try RequestBody.decode(TransactionRequest.self, from: body)
        if let customerId = fields.customerId, customerId.isEmpty || customerId.utf8.count > 256 {
            throw APIError.invalidRequest("customer_id must be a non-empty string of at most 256 bytes")
        }
        let outcome: VerificationOutcome
        switch (fields.signedTransaction, fields.receiptData) {
        case (.some, .some):
            throw APIError.invalidRequest("the body has both signed_transaction and receipt_data; send one")
        case (let jws?, nil):
            do {
                outcome = .verified(try environment.verifier.verify(jws, as: .transaction))
            } catch let error as ReceiptKitError {
                outcome = .rejected(error)
            }
        case (nil, let base64?):
            outcome = environment.verifier.verify(input: Array(base64.utf8), as: .receipt)
        case (nil, nil):
            throw APIError.invalidRequest("the body has neither signed_transaction nor receipt_data")
        }
        let record = try environment.verified(outcome, context: context)
        let token = record.transactions.lazy.compactMap(\.appAccountToken).first { !$0.isEmpty }
        guard let customer = fields.customerId ?? token else {
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

/// The body of `POST /v1/transactions`.
struct TransactionRequest: Decodable {
    /// The backend's customer id; `null` or absent links the purchase to its `appAccountToken`.
    var customerId: String?
    /// A StoreKit 2 transaction JWS.
    var signedTransaction: String?
    /// A legacy receipt in base64.
    var receiptData: String?

    private enum CodingKeys: String, CodingKey {
        case customerId = "customer_id"
        case signedTransaction = "signed_transaction"
        case receiptData = "receipt_data"
    }
}
