import Foundation
import Hummingbird
import ReceiptKit

/// Answering Apple's consumption requests (``ConsumptionRequests``):
///
/// - `PUT /v1/transactions/{transaction_id}/consumption`: the backend's answer to the latest
///   `CONSUMPTION_REQUEST` about the transaction, in Apple's v2 fields
///   (`{"customer_consented": true, "delivery_status", "refund_preference",
///   "consumption_percentage", "sample_content_provided"}`), validated as Apple validates it,
///   stored with its outbox row and sent to Send Consumption Information until the deadline:
///   200 `{"transaction_id", "deadline", "delivery"}` once committed. 400 `invalid_request` (a
///   field), 400 `customer_consent_required` (`customer_consented` is not true: Apple refuses
///   the data without it), 404 `consumption_request_not_found`, 409
///   `consumption_deadline_passed`, 409 `reconciliation_off` without an In-App Purchase key.
/// - `PUT /v1/customers/{customer_id}/consumption-consent`: `{"consented": true|false}`, whether
///   the customer agreed to share consumption data; `RECEIPTKIT_CONSUMPTION_DEFAULT` answers only
///   for customers who did. 200 `{"customer_id", "consented", "updated_at"}`.
struct ConsumptionController {
    let environment: RouteEnvironment

    private var consumptionRequests: ConsumptionRequests {
        ConsumptionRequests(store: environment.store, canSend: environment.apple != nil)
    }

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.put, "transactions/{transaction_id}/consumption", scope: .write) { request, context in
            try await answer(request, context: context)
        }
        group.route(.put, "customers/{customer_id}/consumption-consent", scope: .write) { request, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            struct Consent: RequestFields {
                typealias Fields = CodingKeys
                enum CodingKeys: String, CodingKey, CaseIterable { case consented }
                var consented: Bool
            }
            let body = try await environment.body(of: request, upTo: 4096)
            let consent = try RequestBody.decode(Consent.self, from: body)
            let now = environment.now
            let requests = consumptionRequests
            try await environment.read {
                try await requests.setConsent(customerId: customerId, consented: consent.consented, at: now.millisecondsSince1970)
            }
            return try Response.json(ConsentAnswer(customerId: customerId, consented: consent.consented, updatedAt: now.iso8601))
        }
    }

    func answer(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let transactionId = try RouteEnvironment.pathParameter("transaction_id", in: context)
        try AppleSync.checkTransactionId(transactionId)
        let body = try await environment.body(of: request, upTo: 4096)
        let answer = try RequestBody.decode(ConsumptionAnswer.self, from: body)
        let requests = consumptionRequests
        let now = environment.now.millisecondsSince1970
        let (deadline, delivery) = try await environment.read {
            try await requests.answer(answer, transactionId: transactionId, now: now)
        }
        return try Response.json(RecordedConsumptionAnswer(
            transactionId: transactionId, deadline: Timestamp(millisecondsSince1970: deadline).iso8601, delivery: delivery))
    }
}

/// A customer's consent, as recorded.
struct ConsentAnswer: Encodable {
    let customerId: String
    let consented: Bool
    let updatedAt: String

    private enum CodingKeys: String, CodingKey {
        case consented
        case customerId = "customer_id"
        case updatedAt = "updated_at"
    }
}

/// An answer to a consumption request, recorded: the request's deadline and the outbox row that
/// sends the answer to Apple.
struct RecordedConsumptionAnswer: Encodable {
    let transactionId: String
    let deadline: String
    let delivery: Delivery?

    private enum CodingKeys: String, CodingKey {
        case deadline, delivery
        case transactionId = "transaction_id"
    }
}
